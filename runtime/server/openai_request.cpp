#include "runtime/server/openai_request.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace cke::server {

using nlohmann::json;

std::string error_body(const HttpError& e) {
  return json{{"error", {{"message", e.message}, {"type", e.type}, {"code", e.status}}}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

namespace {

// Reads optional fields of one object, recording the first problem.
class Fields {
 public:
  Fields(const json& j, HttpError* err) : j_(j), err_(err) {}
  bool ok() const { return ok_; }

  void number(const char* key, float lo, float hi, float* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number()) return fail(fmt::format("'{}' must be a number", key));
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi)) return fail(fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
    *out = float(d);
  }
  template <typename Int>
  void integer(const char* key, int64_t lo, int64_t hi, Int* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number_integer()) return fail(fmt::format("'{}' must be an integer", key));
    const int64_t d = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                          ? INT64_MAX
                          : v->get<int64_t>();
    if (d < lo || d > hi) return fail(fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
    *out = Int(d);
  }
  void boolean(const char* key, bool* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_boolean()) return fail(fmt::format("'{}' must be true or false", key));
    *out = v->get<bool>();
  }
  void string(const char* key, std::string* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return fail(fmt::format("'{}' must be a string", key));
    *out = v->get<std::string>();
  }
  // OpenAI's "stop": a string or an array of strings.
  void strings(const char* key, std::vector<std::string>* out) {
    const json* v = find(key);
    if (!v) return;
    if (v->is_string()) {
      out->push_back(v->get<std::string>());
      return;
    }
    if (!v->is_array())
      return fail(fmt::format("'{}' must be a string or an array of strings", key));
    for (const json& s : *v) {
      if (!s.is_string()) return fail(fmt::format("'{}' must hold strings only", key));
      out->push_back(s.get<std::string>());
    }
  }
  // OpenAI's logit_bias: {"token id": bias in [-100, 100]}.
  void logit_bias(const char* key, std::vector<std::pair<int32_t, float>>* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_object()) return fail(fmt::format("'{}' must be an object", key));
    for (const auto& [k, b] : v->items()) {
      char* end = nullptr;
      const long id = std::strtol(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0' || id < 0 || id > INT32_MAX)
        return fail(fmt::format("'{}': '{}' is not a token id", key, k));
      if (!b.is_number() || !(std::fabs(b.get<double>()) <= 100))
        return fail(fmt::format("'{}': the bias of {} must be a number in [-100, 100]", key, k));
      out->emplace_back(int32_t(id), b.get<float>());
    }
  }
  void fail(std::string msg) {
    if (!ok_) return;
    ok_ = false;
    err_->message = std::move(msg);
  }

 private:
  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& j_;
  HttpError* err_;
  bool ok_ = true;
};

// A message's content: a string, or OpenAI's array of parts of which only text is read.
bool message_content(const json& c, std::string* out) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return true;
  }
  if (!c.is_array()) return false;
  for (const json& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string())
      return false;
    *out += part["text"].get<std::string>();
  }
  return true;
}

bool parse_messages(const json& j, std::vector<ChatMessage>* out, HttpError* err) {
  auto it = j.find("messages");
  if (it == j.end()) {
    err->message = "'messages' is required";
    return false;
  }
  if (!it->is_array() || it->empty()) {
    err->message = "'messages' must be a non-empty array";
    return false;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    ChatMessage cm;
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      err->message = fmt::format("messages[{}] needs a string 'role'", i);
      return false;
    }
    cm.role = m["role"].get<std::string>();
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant") {
      err->message =
          fmt::format("messages[{}].role '{}' is not system, user or assistant", i, cm.role);
      return false;
    }
    if (!m.contains("content") || !message_content(m["content"], &cm.content)) {
      err->message =
          fmt::format("messages[{}].content must be a string or an array of text parts", i);
      return false;
    }
    out->push_back(std::move(cm));
  }
  return true;
}

bool parse_prompt(const json& j, CompletionRequest* r, HttpError* err) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) {
    err->message = "'prompt' is required";
    return false;
  }
  const json& p = *it;
  if (p.is_string()) {
    r->prompt = p.get<std::string>();
    if (r->prompt.empty()) {
      err->message = "'prompt' is empty";
      return false;
    }
    return true;
  }
  // A batch of one prompt is accepted as that prompt; token ids as OpenAI allows.
  if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r->prompt = p[0].get<std::string>();
    return !r->prompt.empty() || (err->message = "'prompt' is empty", false);
  }
  if (p.is_array() && !p.empty()) {
    for (const json& t : p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        err->message = "'prompt' must be a string or an array of token ids (one prompt only)";
        return false;
      }
      r->prompt_tokens.push_back(t.get<int32_t>());
    }
    return true;
  }
  err->message = "'prompt' must be a non-empty string or an array of token ids";
  return false;
}

}  // namespace

std::optional<CompletionRequest> parse_completion_request(const std::string& body, bool chat,
                                                          const GenerateParams& defaults,
                                                          HttpError* err) {
  *err = HttpError{};
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    err->message = "the request body is not valid JSON";
    return std::nullopt;
  }
  if (!j.is_object()) {
    err->message = "the request body must be a JSON object";
    return std::nullopt;
  }
  CompletionRequest r;
  r.chat = chat;
  r.params = defaults;
  if (chat ? !parse_messages(j, &r.messages, err) : !parse_prompt(j, &r, err)) return std::nullopt;

  Fields f(j, err);
  SamplerParams& s = r.params.sampling;
  f.string("model", &r.model);
  f.boolean("stream", &r.stream);
  for (const SamplerRange& sr : kSamplerRanges) f.number(sr.name, sr.lo, sr.hi, &(s.*sr.field));
  f.integer("top_k", 0, INT32_MAX, &s.top_k);
  f.integer("repeat_last_n", 0, 1 << 20, &s.repeat_last_n);
  f.integer("seed", 0, INT64_MAX, &s.seed);
  f.logit_bias("logit_bias", &s.logit_bias);
  // max_tokens (OpenAI), max_completion_tokens (OpenAI's newer name), n_predict (llama.cpp).
  f.integer("n_predict", -1, INT32_MAX, &r.params.max_tokens);
  f.integer("max_tokens", -1, INT32_MAX, &r.params.max_tokens);
  f.integer("max_completion_tokens", -1, INT32_MAX, &r.params.max_tokens);
  f.strings("stop", &r.params.stop);
  int32_t n = 1;
  f.integer("n", 1, 1, &n);
  if (!f.ok()) return std::nullopt;
  if (r.params.stop.size() > 16) {
    err->message = "'stop' holds at most 16 strings";
    return std::nullopt;
  }
  return r;
}

}  // namespace cke::server
