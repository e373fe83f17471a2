// The C API over cke::Engine: opaque handles, errors through cke_last_error().
#include <climits>
#include <cstring>
#include <string>

#include "runtime/capi/cke.h"
#include "runtime/core/engine.h"

struct cke_engine {
  std::unique_ptr<cke::Engine> impl;
};

namespace {
thread_local std::string g_error;
void set_error(std::string e) {
  g_error = std::move(e);
}
}  // namespace

extern "C" {

const char* cke_last_error(void) {
  return g_error.c_str();
}

cke_engine* cke_engine_load(const char* model_path, const cke_options* options) {
  if (!model_path) {
    set_error("cke_engine_load: model_path is NULL");
    return nullptr;
  }
  cke::EngineOptions o;
  o.model_path = model_path;
  if (options) {
    if (options->n_ctx < 0 || options->n_batch < 0 || options->n_threads < 0) {
      set_error("cke_engine_load: negative option");
      return nullptr;
    }
    o.n_ctx = options->n_ctx;
    if (options->n_batch > 0) o.n_batch = options->n_batch;
    o.n_threads = options->n_threads;
    if (options->isa) o.isa = options->isa;
  }
  std::string err;
  auto e = cke::Engine::load(o, &err);
  if (!e) {
    set_error(err);
    return nullptr;
  }
  g_error.clear();
  return new cke_engine{std::move(e)};
}

void cke_engine_free(cke_engine* e) {
  delete e;
}

int32_t cke_n_vocab(const cke_engine* e) {
  return e ? e->impl->n_vocab() : 0;
}
int32_t cke_n_ctx(const cke_engine* e) {
  return e ? e->impl->n_ctx() : 0;
}
int32_t cke_pos(const cke_engine* e) {
  return e ? e->impl->pos() : 0;
}

int32_t cke_tokenize(const cke_engine* e, const char* text, int add_special, int32_t* ids,
                     int32_t capacity) {
  if (!e || !text || capacity < 0 || (capacity > 0 && !ids)) {
    set_error("cke_tokenize: bad argument");
    return INT32_MIN;
  }
  const auto v = e->impl->tokenizer().encode(text, add_special != 0, true);
  if (v.size() > size_t(capacity)) return -int32_t(v.size());
  std::memcpy(ids, v.data(), v.size() * sizeof(int32_t));
  return int32_t(v.size());
}

int32_t cke_token_to_piece(const cke_engine* e, int32_t id, char* buf, int32_t capacity) {
  if (!e || capacity < 0 || (capacity > 0 && !buf)) {
    set_error("cke_token_to_piece: bad argument");
    return INT32_MIN;
  }
  const std::string p = e->impl->tokenizer().token_to_piece(id);
  if (p.size() + 1 > size_t(capacity)) return -int32_t(p.size() + 1);
  std::memcpy(buf, p.c_str(), p.size() + 1);
  return int32_t(p.size());
}

int cke_is_eog(const cke_engine* e, int32_t id) {
  return e && e->impl->tokenizer().is_eog(id);
}

int cke_eval(cke_engine* e, const int32_t* ids, int32_t n, float* logits) {
  if (!e || !ids || n <= 0) {
    set_error("cke_eval: bad argument");
    return -1;
  }
  std::vector<float> out;
  std::string err;
  if (!e->impl->eval({ids, size_t(n)}, logits ? &out : nullptr, false, &err)) {
    set_error(err);
    return -1;
  }
  if (logits) std::memcpy(logits, out.data(), out.size() * sizeof(float));
  return 0;
}

void cke_rewind(cke_engine* e, int32_t pos) {
  if (e) e->impl->rewind(pos);
}

}  // extern "C"
