// libFuzzer target for the tokenizer (runtime/tokenizer/): text -> ids -> text.
//
// Input: one byte choosing the vocabulary, one byte of flags, then the text (any bytes).
// The vocabularies are llama.cpp's vocab-only GGUFs in <shared>/models/llama-vocab (CKE_SHARED
// or the build's ../shared, loaded on first use) plus two small ones built here, so the
// target runs without ../shared too. For every text:
//   - encode never crashes, with and without BOS/EOS and special-token parsing, and every
//     id is in [0, n_vocab);
//   - every id has a piece, and decode works with every flag;
//   - decode(encode(text)) == text where the tokenizer guarantees it, as the round-trip
//     tests of tests/tokenizer/test_vocab_files.cpp check it: on the vocabs they check
//     (llama-spm, qwen2, deepseek-llm, llama-bpe, gpt-2, and the two built here), for valid
//     UTF-8 without C0 controls other than \t and \n, without U+2581 (SPM decodes it to a
//     space by design), without the text of a user-defined token (those match before the
//     text is split and may strip spaces) and, where the vocab cleans up tokenization
//     spaces, without " ?", " !", " .", " ," or " '".
//
//   fuzz_tokenizer CORPUS_DIR tests/fuzz/corpus/tokenizer -max_len=2048   (docs/fuzzing.md)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab_gguf.h"
#include "tests/fuzz/fuzz_common.h"

using namespace cke;

namespace {

struct VocabSlot {
  const char* name;  // ggml-vocab-<name>.gguf, or "builtin-*"
  bool round_trip;   // decode(encode(x)) == x is checked
};

// The vocab files the tokenizer supports (bert-bge is WordPiece, rejected by create()).
constexpr VocabSlot kSlots[] = {
    {"builtin-spm", true},     {"builtin-bpe", true},  {"llama-spm", true},
    {"qwen2", true},           {"deepseek-llm", true}, {"llama-bpe", true},
    {"gpt-2", true},           {"phi-3", false},       {"mpt", false},
    {"starcoder", false},      {"refact", false},      {"falcon", false},
    {"deepseek-coder", false}, {"qwen35", false},      {"gemma-4", false},
    {"baichuan", false},       {"gpt-neox", false},
};
constexpr size_t kNumSlots = sizeof kSlots / sizeof kSlots[0];

struct Loaded {
  std::unique_ptr<Tokenizer> tok;
  bool cleans_spaces = false;
  std::vector<std::string> user_defined;  // texts of user-defined tokens
};

std::string shared_dir() {
  if (const char* e = std::getenv("CKE_SHARED")) return e;
  return CKE_SHARED_DIR;
}

// <unk> <s> </s>, the 256 byte tokens, then pieces (SentencePiece, byte fallback).
VocabData builtin_spm() {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.push_back(buf);
    v.types.push_back(6);
    v.scores.push_back(0);
  }
  const std::string sp = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  const std::vector<std::string> pieces = {
      sp, "e", "t", "h", "a", "th", sp + "t", sp + "th", sp + "the", "he", "\xC3\xA9", "<|x|>"};
  float score = -1;
  for (const std::string& p : pieces) {
    v.tokens.push_back(p);
    v.types.push_back(p == "<|x|>" ? 4 : 1);
    v.scores.push_back(score -= 0.5f);
  }
  return v;
}

// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the others get
// U+0100, U+0101, ... in byte order.
std::string gpt2_bytes(std::string_view bytes) {
  std::string out;
  for (const unsigned char b : bytes) {
    auto printable = [](unsigned x) {
      return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
    };
    unsigned cp = b;
    if (!printable(b)) {
      unsigned n = 0;
      for (unsigned x = 0; x < b; ++x) n += !printable(x);
      cp = 256 + n;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// The 256 byte tokens, one per merge result, and a control token (byte-level BPE).
VocabData builtin_bpe() {
  VocabData v;
  v.model = "gpt2";
  v.pre = "qwen2";
  for (int x = 0; x < 256; ++x) v.tokens.push_back(gpt2_bytes(std::string(1, char(x))));
  const std::string G = gpt2_bytes(" ");
  v.merges = {"h e", "l l", "he ll", "hell o", G + " w", "o r", G + "w or", "t h", G + " th"};
  for (const std::string& m : v.merges) {
    const size_t sp = m.find(' ');
    v.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
  }
  v.types.assign(v.tokens.size(), 1);
  v.tokens.push_back("<|endoftext|>");
  v.types.push_back(3);
  return v;
}

// The tokenizer of slot i, or nullptr when its file is absent (loaded once).
const Loaded* vocab(size_t i) {
  static std::map<size_t, std::unique_ptr<Loaded>> cache;
  if (auto it = cache.find(i); it != cache.end()) return it->second.get();
  auto l = std::make_unique<Loaded>();
  const std::string name = kSlots[i].name;
  std::string err;
  std::optional<VocabData> v;
  if (name == "builtin-spm") {
    v = builtin_spm();
  } else if (name == "builtin-bpe") {
    v = builtin_bpe();
  } else {
    const std::string path = shared_dir() + "/models/llama-vocab/ggml-vocab-" + name + ".gguf";
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      gguf::GgufError gerr;
      const auto file = gguf::File::open(path, &gerr);
      if (!file) {
        std::fprintf(stderr, "fuzz_tokenizer: %s\n", gerr.message.c_str());
        std::abort();  // a real vocab that does not load is a bug
      }
      v = vocab_from_gguf(*file, &err);
      if (!v) {
        std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path.c_str(), err.c_str());
        std::abort();
      }
    }
  }
  if (v) {
    std::optional<Tokenizer> t = Tokenizer::create(std::move(*v), &err);
    if (!t) {
      std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", name.c_str(), err.c_str());
      std::abort();
    }
    l->tok = std::make_unique<Tokenizer>(std::move(*t));
    const std::string pre = l->tok->pre();
    // As test_vocab_files.cpp: SPM, deepseek-llm/coder and qwen2/3.5 keep spaces.
    l->cleans_spaces = !(l->tok->type() == VocabType::SPM || pre == "deepseek-llm" ||
                         pre == "deepseek-coder" || pre == "qwen2" || pre == "qwen35");
    for (int32_t id = 0; id < l->tok->n_vocab(); ++id)
      if (l->tok->token_attr(id) & kAttrUserDefined)
        l->user_defined.emplace_back(l->tok->token_text(id));
  }
  return (cache[i] = std::move(l)).get();
}

// Strictly valid UTF-8 without C0 controls other than \t and \n and without U+2581.
bool round_trip_text(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t n;
    if (b < 0x80) {
      cp = b, n = 1;
    } else if ((b & 0xE0) == 0xC0) {
      cp = b & 0x1F, n = 2;
    } else if ((b & 0xF0) == 0xE0) {
      cp = b & 0x0F, n = 3;
    } else if ((b & 0xF8) == 0xF0) {
      cp = b & 0x07, n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x20 && cp != '\t' && cp != '\n') return false;
    if (cp == 0x2581) return false;
    i += n;
  }
  return true;
}

bool touched_by_clean_spaces(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == ' ' && std::string_view("?!.,'").find(s[i + 1]) != std::string_view::npos)
      return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t slot = data[0] % kNumSlots;
  const uint8_t flags = data[1];
  const std::string_view text = fuzz::as_text(data + 2, size - 2);
  const Loaded* l = vocab(slot);
  if (!l->tok) {  // ../shared absent: a built-in vocab instead
    slot = data[0] % 2;
    l = vocab(slot);
  }
  const Tokenizer& tok = *l->tok;
  const int32_t n = tok.n_vocab();

  const bool add_special = flags & 1, parse_special = flags & 2;
  const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
  for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && id < n);
  for (const int32_t id : ids) {
    (void)tok.token_to_piece(id, (flags & 4) != 0);
    (void)tok.is_eog(id);
  }
  (void)tok.decode(ids, (flags & 8) != 0, (flags & 16) != 0);
  // Ids from the text's bytes, in range or not, decode without reading out of bounds.
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 4 <= text.size() && raw.size() < 64; i += 4) {
    int32_t id;
    std::memcpy(&id, text.data() + i, 4);
    raw.push_back((flags & 32) ? id : static_cast<int32_t>(static_cast<uint32_t>(id) % n));
  }
  (void)tok.decode(raw, (flags & 8) != 0, (flags & 16) != 0);
  for (const int32_t id : raw) (void)tok.token_to_piece(id, true);

  if (!kSlots[slot].round_trip || !round_trip_text(text)) return 0;
  if (l->cleans_spaces && touched_by_clean_spaces(text)) return 0;
  for (const std::string& u : l->user_defined)
    if (!u.empty() && text.find(u) != std::string_view::npos) return 0;
  const std::vector<int32_t> plain =
      add_special || parse_special ? tok.encode(text, false, false) : ids;
  const std::string back = tok.decode(plain);
  if (back != text) {
    std::fprintf(stderr, "round trip on %s: %zu bytes in, %zu bytes out\n", kSlots[slot].name,
                 text.size(), back.size());
    FUZZ_CHECK(back == text);
  }
  return 0;
}
