#include "runtime/chat/generate_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "runtime/chat/chat_prompt.h"
#include "runtime/chat/stop_matcher.h"

namespace cke {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kContext:
      return "context";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "?";
}

Session::Session(Engine& engine, std::optional<ChatTemplate> tmpl, int32_t seq,
                 SequenceEvaluator* via)
    : engine_(engine), tmpl_(std::move(tmpl)), seq_(seq), via_(via) {
  engine_.rewind(seq_, 0);  // the token stream starts empty, so must the KV cache
}

void Session::set_logits_observer(LogitsObserver obs, bool all_prompt_logits) {
  observer_ = std::move(obs);
  all_prompt_logits_ = all_prompt_logits;
}

size_t Session::cached_prefix(std::span<const int32_t> prompt) const {
  const size_t n = std::min(prompt.size(), kv_tokens_.size());
  return size_t(std::mismatch(prompt.begin(), prompt.begin() + n, kv_tokens_.begin()).first -
                prompt.begin());
}

bool Session::eval(std::span<const int32_t> ids, bool all_logits, std::string* err) {
  const int32_t before = engine_.pos(seq_);
  have_logits_ = false;
  const bool ok = via_ ? via_->eval(seq_, ids, &logits_, all_logits, err)
                       : engine_.eval(seq_, ids, &logits_, all_logits, err);
  if (!ok) {
    engine_.rewind(seq_, before);  // whatever a failed call left behind is forgotten
    return false;
  }
  if (observer_) observer_(logits_);
  const size_t n_vocab = size_t(engine_.n_vocab());
  if (logits_.size() > n_vocab) logits_.erase(logits_.begin(), logits_.end() - n_vocab);
  kv_tokens_.insert(kv_tokens_.end(), ids.begin(), ids.end());
  have_logits_ = true;
  return true;
}

bool Session::append(std::span<const int32_t> ids, bool one_at_a_time, std::string* err) {
  for (int32_t id : ids)
    if (id < 0 || id >= engine_.n_vocab()) {
      *err = fmt::format("token {} out of range (n_vocab {})", id, engine_.n_vocab());
      return false;
    }
  if (int64_t(kv_tokens_.size()) + int64_t(ids.size()) > engine_.n_ctx()) {
    *err = fmt::format("{} more tokens do not fit the context of {} ({} held)", ids.size(),
                       engine_.n_ctx(), kv_tokens_.size());
    return false;
  }
  if (!one_at_a_time) return ids.empty() || eval(ids, all_prompt_logits_, err);
  for (size_t i = 0; i < ids.size(); ++i)
    if (!eval(ids.subspan(i, 1), true, err)) return false;
  return true;
}

bool Session::generate(std::span<const int32_t> prompt, const GenerateParams& params,
                       const TokenCallback& on_token, GenerateResult* result, std::string* err) {
  GenerateResult r;
  r.prompt_tokens = int32_t(prompt.size());
  const Tokenizer& tok = engine_.tokenizer();
  const int32_t n_vocab = engine_.n_vocab();
  if (prompt.empty()) {
    *err = "empty prompt";
    return false;
  }
  for (int32_t id : prompt)
    if (id < 0 || id >= n_vocab) {
      *err = fmt::format("prompt token {} out of range (n_vocab {})", id, n_vocab);
      return false;
    }
  if (int64_t(prompt.size()) > engine_.n_ctx()) {
    *err = fmt::format("the prompt has {} tokens, the context holds {}", prompt.size(),
                       engine_.n_ctx());
    return false;
  }

  // Evaluate what the cache does not hold. A prompt the cache holds whole is sampled from
  // the logits at hand, or else its last token is evaluated again for them.
  auto t0 = std::chrono::steady_clock::now();
  if (size_t(engine_.pos(seq_)) != kv_tokens_.size()) {
    // Someone evaluated or rewound the engine behind the session: its cache is unknown.
    kv_tokens_.clear();
    have_logits_ = false;
  }
  size_t keep = cached_prefix(prompt);
  const bool logits_at_hand = keep == prompt.size() && keep == kv_tokens_.size() && have_logits_;
  if (!logits_at_hand) {
    keep = std::min(keep, prompt.size() - 1);
    engine_.rewind(seq_, int32_t(keep));
    kv_tokens_.resize(keep);
    if (!eval(prompt.subspan(keep), all_prompt_logits_, err)) return false;
  }
  r.cached_tokens = int32_t(keep);
  r.prompt_ms = ms_since(t0);

  // Sample until end of generation, a stop string, max_tokens, a full context or a cancel.
  t0 = std::chrono::steady_clock::now();
  Sampler sampler(params.sampling);
  const size_t window = size_t(std::max(params.sampling.repeat_last_n, 0));
  for (size_t i = prompt.size() - std::min(window, prompt.size()); i < prompt.size(); ++i)
    sampler.accept(prompt[i]);
  std::vector<int32_t> stop_ids;  // tokens whose text is a stop string
  for (const auto& s : params.stop)
    if (std::optional<int32_t> id = tok.find_token(s)) stop_ids.push_back(*id);
  StopMatcher stop(params.stop);
  auto show = [&](int32_t id, const std::string& s) {
    r.text += s;
    return !on_token || on_token(id, s);
  };
  const int32_t limit = params.max_tokens < 0 ? INT32_MAX : params.max_tokens;
  r.finish = FinishReason::kLength;
  while (r.completion_tokens < limit) {
    const int32_t id = sampler.sample(logits_.data(), n_vocab);
    ++r.completion_tokens;
    sampler.accept(id);
    if (tok.is_eog(id) || std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
      r.finish = FinishReason::kEos;
      break;
    }
    r.tokens.push_back(id);
    const bool shown = show(id, stop.push(tok.token_to_piece(id)));
    if (stop.stopped()) {
      r.finish = FinishReason::kStop;
      break;
    }
    if (!shown) {
      r.finish = FinishReason::kCancelled;
      break;
    }
    if (r.completion_tokens == limit) break;
    if (engine_.pos(seq_) >= engine_.n_ctx()) {
      r.finish = FinishReason::kContext;
      break;
    }
    if (!eval({&id, 1}, false, err)) {
      r.generate_ms = ms_since(t0);
      if (result) *result = std::move(r);
      return false;
    }
  }
  if (r.finish != FinishReason::kCancelled) {
    const std::string held = stop.flush();
    if (!held.empty()) show(-1, held);
  }
  r.generate_ms = ms_since(t0);
  if (result) *result = std::move(r);
  return true;
}

bool Session::generate_text(std::string_view prompt, const GenerateParams& params,
                            const TokenCallback& on_token, GenerateResult* result,
                            std::string* err) {
  const std::vector<int32_t> ids =
      engine_.tokenizer().encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  return generate(ids, params, on_token, result, err);
}

bool Session::chat_prompt(std::span<const ChatMessage> messages, std::vector<int32_t>* ids,
                          std::string* err) const {
  if (!tmpl_) {
    *err = "no chat template (the model has none and none was named)";
    return false;
  }
  return chat_prompt_tokens(*tmpl_, engine_.tokenizer(), messages, ids, err);
}

bool Session::generate_chat(std::span<const ChatMessage> messages, const GenerateParams& params,
                            const TokenCallback& on_token, GenerateResult* result,
                            std::string* err) {
  std::vector<int32_t> ids;
  if (!chat_prompt(messages, &ids, err)) return false;
  GenerateParams p = params;
  p.stop.insert(p.stop.end(), tmpl_->stop.begin(), tmpl_->stop.end());
  return generate(ids, p, on_token, result, err);
}

}  // namespace cke
