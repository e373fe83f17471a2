// The C API over cke::Engine: opaque handles, errors through cke_last_error().
#include <climits>
#include <cstring>
#include <string>

#include "runtime/capi/cke.h"
#include "runtime/chat/generate_session.h"
#include "runtime/core/engine.h"
#include "runtime/core/process_heap.h"

struct cke_engine {
  std::unique_ptr<cke::Engine> impl;
};
struct cke_session {
  cke::Session impl;
};

namespace {
thread_local std::string g_error;
void set_error(std::string e) {
  g_error = std::move(e);
}
}  // namespace

extern "C" {

void cke_tune_process_heap(void) {
  cke::tune_process_heap();
}

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

void cke_generate_params_default(cke_generate_params* p) {
  if (!p) return;
  const cke::SamplerParams d;
  *p = cke_generate_params{};
  p->temperature = d.temp;
  p->top_k = d.top_k;
  p->top_p = d.top_p;
  p->min_p = d.min_p;
  p->repeat_penalty = d.repeat_penalty;
  p->presence_penalty = d.presence_penalty;
  p->frequency_penalty = d.frequency_penalty;
  p->repeat_last_n = d.repeat_last_n;
  p->seed = d.seed;
  p->max_tokens = -1;
}

cke_session* cke_session_new(cke_engine* e) {
  if (!e) {
    set_error("cke_session_new: engine is NULL");
    return nullptr;
  }
  try {
    return new cke_session{cke::Session(*e->impl)};
  } catch (const std::exception& ex) {
    set_error(std::string("cke_session_new: ") + ex.what());
    return nullptr;
  }
}

void cke_session_free(cke_session* s) {
  delete s;
}

int cke_session_generate(cke_session* s, const char* prompt, const cke_generate_params* params,
                         cke_text_callback callback, void* user, cke_generate_result* result) {
  if (!s || !prompt || (params && params->n_stop > 0 && !params->stop) ||
      (params && params->n_stop < 0)) {
    set_error("cke_session_generate: bad argument");
    return -1;
  }
  cke_generate_params p;
  cke_generate_params_default(&p);
  if (params) p = *params;
  cke::GenerateParams gp;
  gp.sampling.temp = p.temperature;
  gp.sampling.top_k = p.top_k;
  gp.sampling.top_p = p.top_p;
  gp.sampling.min_p = p.min_p;
  gp.sampling.repeat_penalty = p.repeat_penalty;
  gp.sampling.presence_penalty = p.presence_penalty;
  gp.sampling.frequency_penalty = p.frequency_penalty;
  gp.sampling.repeat_last_n = p.repeat_last_n;
  gp.sampling.seed = p.seed;
  gp.max_tokens = p.max_tokens;
  if (const std::string bad = cke::sampler_params_error(gp.sampling); !bad.empty()) {
    set_error("cke_session_generate: " + bad);
    return -1;
  }
  for (int32_t i = 0; i < p.n_stop; ++i) {
    if (!p.stop[i]) {
      set_error("cke_session_generate: stop string is NULL");
      return -1;
    }
    gp.stop.emplace_back(p.stop[i]);
  }
  try {
    cke::GenerateResult r;
    std::string err;
    std::string piece;
    const bool ok = s->impl.generate_text(
        prompt, gp,
        [&](int32_t id, std::string_view text) {
          if (!callback) return true;
          piece.assign(text);
          return callback(user, id, piece.c_str(), int32_t(piece.size())) != 0;
        },
        &r, &err);
    if (result) {
      result->finish_reason = int32_t(r.finish);
      result->prompt_tokens = r.prompt_tokens;
      result->cached_tokens = r.cached_tokens;
      result->completion_tokens = r.completion_tokens;
      result->prompt_ms = r.prompt_ms;
      result->generate_ms = r.generate_ms;
    }
    if (!ok) {
      set_error(err);
      return -1;
    }
  } catch (const std::exception& ex) {
    set_error(std::string("cke_session_generate: ") + ex.what());
    return -1;
  }
  g_error.clear();
  return 0;
}

}  // extern "C"
