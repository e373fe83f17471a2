#include "runtime/chat/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "runtime/chat/stop_matcher.h"

namespace cke {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

const char* chat_stop_name(ChatStop s) {
  switch (s) {
    case ChatStop::kEndOfGeneration:
      return "end of generation";
    case ChatStop::kStopString:
      return "stop string";
    case ChatStop::kLimit:
      return "reply limit";
    case ChatStop::kContextFull:
      return "context full";
  }
  return "?";
}

ChatSession::ChatSession(Engine& engine, ChatTemplate tmpl, const SamplerParams& sampling,
                         ChatOptions options)
    : engine_(engine), tmpl_(std::move(tmpl)), sampler_(sampling), opt_(std::move(options)) {
  engine_.rewind(0);  // the transcript starts empty, so must the KV cache
  if (!opt_.system.empty()) messages_.push_back({"system", opt_.system});
  for (const auto& s : tmpl_.stop)
    if (std::optional<int32_t> id = engine_.tokenizer().find_token(s)) stop_ids_.push_back(*id);
}

bool ChatSession::is_stop_token(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

bool ChatSession::eval(std::span<const int32_t> ids, std::string_view text, std::string* err) {
  if (!engine_.eval(ids, &logits_, /*all_logits=*/false, err)) return false;
  for (int32_t id : ids) {
    sampler_.accept(id);
    kv_tokens_.push_back(id);
  }
  transcript_.append(text, engine_.pos());
  return true;
}

bool ChatSession::send(std::string_view user_text,
                       const std::function<void(std::string_view)>& on_text, ChatTurnStats* stats,
                       std::string* err) {
  ChatTurnStats st;
  st.kv_before = engine_.pos();
  auto fail = [&](ChatStop stop) {
    messages_.pop_back();  // the user message did not make it into the conversation
    st.stop = stop;
    st.kv_after = engine_.pos();
    if (stats) *stats = st;
    return false;
  };
  messages_.push_back({"user", std::string(user_text)});
  std::optional<std::string> full = render_chat(tmpl_, messages_, true, err);
  if (!full) return fail(ChatStop::kEndOfGeneration);

  // Only what the KV cache does not hold yet is tokenized and evaluated.
  const Tokenizer& tok = engine_.tokenizer();
  const Transcript::Step step = transcript_.plan(*full);
  const bool at_start = step.keep_chars == 0;
  std::vector<int32_t> ids;
  if (at_start && tmpl_.bos == ChatBos::kAlways) {
    if (tok.bos() < 0) {
      *err = fmt::format("chat template '{}' starts with BOS, but the vocab has no BOS token",
                         tmpl_.name);
      return fail(ChatStop::kEndOfGeneration);
    }
    ids.push_back(tok.bos());
  }
  const std::vector<int32_t> text_ids =
      tok.encode(step.delta, at_start && tmpl_.bos == ChatBos::kTokenizer, /*parse_special=*/true);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  if (int64_t(step.keep_pos) + int64_t(ids.size()) > engine_.n_ctx()) {
    *err = fmt::format("the conversation needs {} tokens, the context holds {}",
                       int64_t(step.keep_pos) + int64_t(ids.size()), engine_.n_ctx());
    return fail(ChatStop::kContextFull);
  }
  engine_.rewind(step.keep_pos);
  transcript_.rewind(step.keep_chars, step.keep_pos);
  kv_tokens_.resize(size_t(step.keep_pos));
  st.kv_reused = step.keep_pos;
  st.prompt_tokens = int32_t(ids.size());
  auto t0 = std::chrono::steady_clock::now();
  if (!eval(ids, step.delta, err)) return fail(ChatStop::kEndOfGeneration);
  st.prompt_ms = ms_since(t0);

  // The reply: sample until EOG / a stop token, a stop string, the limit or a full context.
  t0 = std::chrono::steady_clock::now();
  StopMatcher stop(tmpl_.stop);
  std::string reply;
  auto show = [&](const std::string& s) {
    if (s.empty()) return;
    reply += s;
    if (on_text) on_text(s);
  };
  const int32_t limit = opt_.n_predict < 0 ? INT32_MAX : opt_.n_predict;
  st.stop = ChatStop::kLimit;
  while (st.generated < limit) {
    const int32_t id = sampler_.sample(logits_.data(), engine_.n_vocab());
    ++st.generated;
    if (tok.is_eog(id) || is_stop_token(id)) {
      st.stop = ChatStop::kEndOfGeneration;
      break;
    }
    show(stop.push(tok.token_to_piece(id)));
    if (stop.stopped()) {
      st.stop = ChatStop::kStopString;
      break;
    }
    if (st.generated == limit) break;
    if (engine_.pos() >= engine_.n_ctx()) {
      st.stop = ChatStop::kContextFull;
      break;
    }
    // The KV text spells control tokens out, so the next rendering can be compared with it.
    if (!eval({&id, 1}, tok.token_to_piece(id, /*special=*/true), err)) {
      messages_.push_back({"assistant", reply});
      st.kv_after = engine_.pos();
      if (stats) *stats = st;
      return false;
    }
  }
  show(stop.flush());
  st.generate_ms = ms_since(t0);
  messages_.push_back({"assistant", reply});
  st.kv_after = engine_.pos();
  if (stats) *stats = st;
  return true;
}

}  // namespace cke
