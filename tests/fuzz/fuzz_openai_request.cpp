// libFuzzer target for what cke-server parses itself (HTTP framing is cpp-httplib's): the
// JSON bodies of POST /v1/completions and /v1/chat/completions (runtime/server/
// openai_request.cpp) and the UTF-8 hold-back of streamed text (utf8_holdback.cpp).
//
// Input: one flag byte (bit 0: chat), then the body.
//   - a body is accepted or refused with a 400 whose message is non-empty and whose OpenAI
//     error JSON parses; an accepted request holds what the generation needs: non-empty
//     messages with known roles (chat) or a non-empty prompt / valid token ids, every
//     sampling value in the range the server documents, at most 16 stop strings;
//   - the body, streamed through Utf8Holdback in uneven pieces, comes out byte for byte, and
//     what each push returns never ends inside a UTF-8 sequence more bytes could complete.
//
//   fuzz_openai_request CORPUS_DIR tests/fuzz/corpus/openai_request -max_len=4096
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/server/openai_request.h"
#include "runtime/server/utf8_holdback.h"
#include "tests/fuzz/fuzz_common.h"

using namespace cke;
using namespace cke::server;

namespace {

bool in(float v, float lo, float hi) {
  return v >= lo && v <= hi;
}

void check_request(const std::string& body, bool chat) {
  GenerateParams defaults;
  HttpError err;
  const auto r = parse_completion_request(body, chat, defaults, &err);
  if (!r) {
    FUZZ_CHECK(err.status == 400);
    FUZZ_CHECK(!err.message.empty());
    const auto j = nlohmann::json::parse(error_body(err), nullptr, false);
    FUZZ_CHECK(!j.is_discarded() && j["error"]["message"].is_string());
    if (fuzz::debug()) std::fprintf(stderr, "refused: %s\n", err.message.c_str());
    return;
  }
  FUZZ_CHECK(r->chat == chat);
  if (chat) {
    FUZZ_CHECK(!r->messages.empty());
    for (const ChatMessage& m : r->messages)
      FUZZ_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant");
  } else {
    FUZZ_CHECK(!r->prompt.empty() || !r->prompt_tokens.empty());
    for (int32_t t : r->prompt_tokens) FUZZ_CHECK(t >= 0);
  }
  const SamplerParams& s = r->params.sampling;
  FUZZ_CHECK(in(s.temp, 0, 100) && in(s.top_p, 0, 1) && in(s.min_p, 0, 1));
  FUZZ_CHECK(in(s.repeat_penalty, 0, 100));
  FUZZ_CHECK(in(s.presence_penalty, -2, 2) && in(s.frequency_penalty, -2, 2));
  FUZZ_CHECK(s.top_k >= 0 && s.repeat_last_n >= 0 && s.seed >= 0);
  for (const auto& [id, bias] : s.logit_bias) FUZZ_CHECK(id >= 0 && in(bias, -100, 100));
  FUZZ_CHECK(r->params.max_tokens >= -1);
  FUZZ_CHECK(r->params.stop.size() <= 16);
}

// Marks the bytes of `text` that sit after the lead byte of a whole UTF-8 character (a lead
// 0xC2..0xF4 followed by all its continuation bytes): a piece may not end before them.
std::vector<bool> inside_character(const std::string& text) {
  std::vector<bool> inside(text.size() + 1, false);
  for (size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    const size_t len = u >= 0xF0 ? 4 : u >= 0xE0 ? 3 : u >= 0xC0 ? 2 : 1;
    if (u < 0xC2 || u > 0xF4 || i + len > text.size()) continue;
    bool whole = true;
    for (size_t k = 1; k < len; ++k)
      whole = whole && (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (!whole) continue;
    for (size_t k = 1; k < len; ++k) inside[i + k] = true;
    i += len - 1;
  }
  return inside;
}

void check_holdback(const std::string& text, uint8_t salt) {
  const std::vector<bool> inside = inside_character(text);
  Utf8Holdback h;
  std::string out;
  size_t step = 1 + salt % 5;
  for (size_t at = 0; at < text.size(); at += step, step = 1 + (step * 3 + salt) % 7) {
    out += h.push(std::string_view(text).substr(at, step));
    FUZZ_CHECK(out.size() <= text.size() && !inside[out.size()]);  // no character split
    FUZZ_CHECK(at + step < text.size() ? at + std::min(step, text.size() - at) - out.size() <= 3
                                       : true);  // at most 3 bytes held
  }
  out += h.flush();
  FUZZ_CHECK(out == text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string body(fuzz::as_text(data + 1, size - 1));
  check_request(body, (data[0] & 1) != 0);
  check_holdback(body, data[0]);
  return 0;
}
