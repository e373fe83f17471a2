#include "runtime/chat/session.h"

#include <fmt/format.h>

#include "runtime/chat/chat_prompt.h"

namespace cke {

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
    : engine_(engine),
      tmpl_(std::move(tmpl)),
      sampling_(sampling),
      opt_(std::move(options)),
      session_(engine) {  // the transcript starts empty, so does the session's KV cache
  if (!opt_.system.empty()) messages_.push_back({"system", opt_.system});
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

  // Only what the KV cache does not hold yet is tokenized: the prompt is the cached tokens up
  // to the transcript's checkpoint, then the new text's ids.
  const Tokenizer& tok = engine_.tokenizer();
  const Transcript::Step step = transcript_.plan(*full);
  std::vector<int32_t> ids;
  if (!encode_chat_text(tmpl_, tok, step.delta, step.keep_chars == 0, &ids, err))
    return fail(ChatStop::kEndOfGeneration);
  std::vector<int32_t> prompt(session_.kv_tokens().begin(),
                              session_.kv_tokens().begin() + step.keep_pos);
  prompt.insert(prompt.end(), ids.begin(), ids.end());
  if (int64_t(prompt.size()) > engine_.n_ctx()) {
    *err = fmt::format("the conversation needs {} tokens, the context holds {}", prompt.size(),
                       engine_.n_ctx());
    return fail(ChatStop::kContextFull);
  }

  GenerateParams params;
  params.sampling = sampling_;
  params.max_tokens = opt_.n_predict;
  params.stop = tmpl_.stop;
  GenerateResult r;
  const bool ok = session_.generate(
      prompt, params,
      [&](int32_t, std::string_view s) {
        if (on_text && !s.empty()) on_text(s);
        return true;
      },
      &r, err);
  transcript_.rewind(step.keep_chars, step.keep_pos);  // the session kept at least this
  if (!ok && r.completion_tokens == 0) return fail(ChatStop::kEndOfGeneration);

  // The transcript follows the cache: the new prompt text, then each evaluated reply token
  // with control tokens spelled out, so the next rendering can be compared with it.
  transcript_.append(step.delta, int32_t(prompt.size()));
  const std::vector<int32_t>& kv = session_.kv_tokens();
  for (size_t pos = prompt.size(); pos < kv.size(); ++pos)
    transcript_.append(tok.token_to_piece(kv[pos], /*special=*/true), int32_t(pos + 1));

  st.kv_reused = r.cached_tokens;
  st.prompt_tokens = r.prompt_tokens - r.cached_tokens;
  st.generated = r.completion_tokens;
  st.prompt_ms = r.prompt_ms;
  st.generate_ms = r.generate_ms;
  switch (r.finish) {
    case FinishReason::kStop:
      st.stop = ChatStop::kStopString;
      break;
    case FinishReason::kLength:
      st.stop = ChatStop::kLimit;
      break;
    case FinishReason::kContext:
      st.stop = ChatStop::kContextFull;
      break;
    default:
      st.stop = ChatStop::kEndOfGeneration;
  }
  messages_.push_back({"assistant", r.text});
  st.kv_after = engine_.pos();
  if (stats) *stats = st;
  return ok;
}

}  // namespace cke
