// Real vocabularies: llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf with
// .inp/.out, from shared/models/llama-vocab), the stories260K reference prompts, and
// decode(encode(x)) round trips.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "tests/common/files.h"
#include "tests/common/shared.h"
#include "tests/tokenizer/vocab_loader.h"

namespace cke {
namespace {

// A byte string made printable for failure messages (C escapes for control bytes).
std::string show(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

// test-tokenizer-0's format: the .inp split on "\n__ggml_vocab_test__\n" (a trailing
// non-empty piece counts), line i of .out holds the ids of case i.
std::vector<VectorCase> read_vectors(const std::string& inp_path, const std::string& out_path) {
  const std::string raw = test::read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(raw.substr(pos));
      break;
    }
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<VectorCase> cases;
  std::istringstream out(test::read_file(out_path));
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    VectorCase c;
    if (i < texts.size()) c.text = texts[i];
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(texts.size(), cases.size()) << "cases in " << inp_path << " vs lines in " << out_path;
  return cases;
}

std::string ids_with_pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids)
    s += std::to_string(id) + " " + show(tok.token_to_piece(id, true)) + ", ";
  return s;
}

struct VocabParam {
  const char* name;         // ggml-vocab-<name>.gguf
  const char* skip_reason;  // non-null: whole vocab not run
};

void PrintTo(const VocabParam& p, std::ostream* os) {
  *os << p.name;
}

// Individual cases allowed to differ, with the reason. Empty: every case must pass.
const std::map<std::pair<std::string, size_t>, const char*> kKnownFailures = {};

const VocabParam kVocabs[] = {
    {"llama-spm", nullptr},
    {"phi-3", nullptr},
    {"gpt-2", nullptr},
    {"mpt", nullptr},
    {"starcoder", nullptr},
    {"refact", nullptr},
    {"falcon", nullptr},
    {"deepseek-coder", nullptr},
    {"deepseek-llm", nullptr},
    {"llama-bpe", nullptr},
    {"qwen2", nullptr},
    {"qwen35", nullptr},
    {"gemma-4", nullptr},
    {"bert-bge", "WordPiece (tokenizer.ggml.model = bert) is not implemented"},
    {"command-r", "only the .inp/.out are in shared/models/llama-vocab, not the vocab GGUF"},
};

class LlamaVocabVectors : public ::testing::TestWithParam<VocabParam> {};

TEST_P(LlamaVocabVectors, EveryCaseMatches) {
  const VocabParam& p = GetParam();
  if (p.skip_reason) GTEST_SKIP() << p.skip_reason;
  const std::string base = std::string("models/llama-vocab/ggml-vocab-") + p.name + ".gguf";
  CKE_REQUIRE_SHARED(path, base);
  CKE_REQUIRE_SHARED(inp, base + ".inp");
  CKE_REQUIRE_SHARED(out, base + ".out");
  std::string err;
  const auto tok = test::load_tokenizer(path, &err);
  ASSERT_TRUE(tok) << err;
  const auto cases = read_vectors(inp, out);
  ASSERT_GE(cases.size(), 40u);
  size_t failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok->encode(cases[i].text, false, false);
    if (got == cases[i].ids) continue;
    if (const auto it = kKnownFailures.find({p.name, i}); it != kKnownFailures.end()) {
      std::cout << "[ known    ] case " << i << ": " << it->second << "\n";
      continue;
    }
    ++failed;
    ADD_FAILURE() << "case " << i << " text " << show(cases[i].text)
                  << "\n  expected: " << ids_with_pieces(*tok, cases[i].ids)
                  << "\n  got:      " << ids_with_pieces(*tok, got);
  }
  EXPECT_EQ(failed, 0u) << "of " << cases.size() << " cases";
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, LlamaVocabVectors, ::testing::ValuesIn(kVocabs),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// decode(encode(x)) == x for every vector text, where llama.cpp's detokenizer is lossless:
// always for SPM (the added leading space is removed again) and byte-level BPE, except
// that vocabs with clean_up_tokenization_spaces rewrite " ," " ." " 's" and the like.
class LlamaVocabRoundTrip : public ::testing::TestWithParam<VocabParam> {};

bool touched_by_clean_spaces(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == ' ' && std::string_view("?!.,'").find(s[i + 1]) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

TEST_P(LlamaVocabRoundTrip, DecodeEncodeIsIdentity) {
  const VocabParam& p = GetParam();
  if (p.skip_reason) GTEST_SKIP() << p.skip_reason;
  const std::string base = std::string("models/llama-vocab/ggml-vocab-") + p.name + ".gguf";
  CKE_REQUIRE_SHARED(path, base);
  CKE_REQUIRE_SHARED(inp, base + ".inp");
  CKE_REQUIRE_SHARED(out, base + ".out");
  std::string err;
  const auto tok = test::load_tokenizer(path, &err);
  ASSERT_TRUE(tok) << err;
  // SPM, deepseek-llm/coder and qwen2/3.5 keep spaces; the other BPE vocabs clean them up.
  const std::string pre = tok->pre();
  const bool cleans = !(tok->type() == VocabType::SPM || pre == "deepseek-llm" ||
                        pre == "deepseek-coder" || pre == "qwen2" || pre == "qwen35");
  size_t checked = 0;
  for (const auto& c : read_vectors(inp, out)) {
    if (cleans && touched_by_clean_spaces(c.text)) continue;
    const auto ids = tok->encode(c.text, false, false);
    EXPECT_EQ(show(tok->decode(ids)), show(c.text));
    ++checked;
  }
  EXPECT_GE(checked, 30u);
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, LlamaVocabRoundTrip, ::testing::ValuesIn(kVocabs),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// Every 97th code point (all planes, no surrogates) survives encode/decode, one at a time
// and all together, as llama.cpp's test-tokenizer-1 checks.
TEST(VocabRoundTrip, CodePointsSpmAndBpe) {
  for (const char* name : {"llama-spm", "qwen2", "llama-bpe", "gpt-2"}) {
    CKE_REQUIRE_SHARED(path, std::string("models/llama-vocab/ggml-vocab-") + name + ".gguf");
    std::string err;
    const auto tok = test::load_tokenizer(path, &err);
    ASSERT_TRUE(tok) << err;
    std::string all;
    size_t bad = 0;
    for (uint32_t cp = 0x20; cp < 0x110000; cp += 97) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::string s;
      if (cp < 0x80) {
        s = static_cast<char>(cp);
      } else if (cp < 0x800) {
        s = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      } else if (cp < 0x10000) {
        s = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
             static_cast<char>(0x80 | (cp & 0x3F))};
      } else {
        s = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
             static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
      }
      all += s;
      if (tok->decode(tok->encode(s, false, false)) != s && ++bad < 5) {
        ADD_FAILURE() << name << ": U+" << std::hex << cp << " does not round-trip";
      }
    }
    EXPECT_EQ(tok->decode(tok->encode(all, false, false)), all) << name;
    EXPECT_EQ(bad, 0u) << name;
  }
}

// Vocabs without test vectors still load and round-trip plain text.
TEST(VocabFiles, OthersLoadAndRoundTrip) {
  for (const char* name : {"baichuan", "gpt-neox"}) {
    CKE_REQUIRE_SHARED(path, std::string("models/llama-vocab/ggml-vocab-") + name + ".gguf");
    std::string err;
    const auto tok = test::load_tokenizer(path, &err);
    ASSERT_TRUE(tok) << name << ": " << err;
    const std::string text = "Hello world\n\tnew line: 12345 and caf\xC3\xA9";
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text) << name;
  }
}

// Random text: valid UTF-8 from a mix of scripts, spaces and punctuation round-trips
// (U+2581 is left out: SPM decodes it to a space by design);
// random bytes (malformed UTF-8 included) never crash and give in-range ids.
TEST(VocabRoundTrip, RandomText) {
  std::mt19937 rng(1234);
  const std::vector<uint32_t> alphabet = {' ',     ' ',     '\n',   '\t',  'a',    'Z',    '0',
                                          '9',     '.',     ',',    '\'',  '!',    '<',    '|',
                                          0xE9,    0x44F,   0x627,  0x915, 0x3000, 0x4E2D, 0xAC00,
                                          0x1F600, 0x1F3FB, 0x200D, 0x301, 0xA0,   0xFF01};
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  for (const char* name : {"llama-spm", "qwen2", "deepseek-llm"}) {
    CKE_REQUIRE_SHARED(path, std::string("models/llama-vocab/ggml-vocab-") + name + ".gguf");
    std::string err;
    const auto tok = test::load_tokenizer(path, &err);
    ASSERT_TRUE(tok) << err;
    for (int iter = 0; iter < 200; ++iter) {
      std::string text;
      const int len = static_cast<int>(rng() % 40);
      for (int i = 0; i < len; ++i) text += utf8(alphabet[rng() % alphabet.size()]);
      EXPECT_EQ(show(tok->decode(tok->encode(text, false, false))), show(text)) << name;
      std::string bytes;
      for (int i = 0; i < len; ++i) bytes += static_cast<char>(rng() & 0xFF);
      for (const bool special : {false, true}) {
        for (const int32_t id : tok->encode(bytes, true, special)) {
          ASSERT_GE(id, 0);
          ASSERT_LT(id, tok->n_vocab());
        }
      }
    }
  }
}

// stories260K: the prompt ids llama.cpp produced (node-llama-cpp reference), with and
// without BOS, and the detokenized greedy text.
TEST(Stories260K, ReferencePrompts) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  CKE_REQUIRE_SHARED(ref_path, "models/stories260K.reference.json");
  std::string err;
  const auto tok = test::load_tokenizer(model, &err);
  ASSERT_TRUE(tok) << err;
  const auto ref = nlohmann::json::parse(test::read_file(ref_path));
  ASSERT_GE(ref["cases"].size(), 4u);
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_TRUE(tok->add_bos());
  for (const auto& c : ref["cases"]) {
    const std::string prompt = c["prompt"];
    const auto expected = c["prompt_tokens_no_bos"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(prompt, false, false), expected) << show(prompt);
    std::vector<int32_t> with_bos = {c["bos"].get<int32_t>()};
    with_bos.insert(with_bos.end(), expected.begin(), expected.end());
    EXPECT_EQ(tok->encode(prompt, true, false), with_bos) << show(prompt);
    EXPECT_EQ(tok->bos(), c["bos"].get<int32_t>());
    EXPECT_EQ(tok->decode(expected), prompt);
    // The generated tokens detokenize (on their own, so the first piece loses its leading
    // space) to the recorded text.
    const auto greedy = c["greedy_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->decode(greedy), c["greedy_text"].get<std::string>()) << show(prompt);
  }
}

TEST(Stories260K, SpecialTokens) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  std::string err;
  const auto tok = test::load_tokenizer(model, &err);
  ASSERT_TRUE(tok) << err;
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->unk(), 0);
  EXPECT_EQ(tok->pad(), -1);  // 0xFFFFFFFF in the file: unset
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_EQ(tok->nl(), 3 + '\n');  // <0x0A>
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
  // "<s>" in the text is only BOS with parse_special.
  EXPECT_EQ(tok->encode("<s>", false, true), std::vector<int32_t>({1}));
  EXPECT_NE(tok->encode("<s>", false, false), std::vector<int32_t>({1}));
}

// The performance target: 100 KB of mixed text through the qwen2 vocab well under 1 s
// (checked loosely here so sanitizer builds pass; the measured time is printed).
TEST(VocabFiles, Qwen2HundredKilobytes) {
  CKE_REQUIRE_SHARED(path, "models/llama-vocab/ggml-vocab-qwen2.gguf");
  CKE_REQUIRE_SHARED(inp, "models/llama-vocab/ggml-vocab-qwen2.gguf.inp");
  std::string err;
  const auto tok = test::load_tokenizer(path, &err);
  ASSERT_TRUE(tok) << err;
  const std::string unit = test::read_file(inp);
  std::string text;
  while (text.size() < 100 * 1024) text += unit;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tok->encode(text, false, false);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ timing   ] qwen2: " << text.size() << " bytes -> " << ids.size() << " tokens in "
            << s * 1e3 << " ms\n";
  EXPECT_LT(s, 10.0);
  EXPECT_EQ(tok->decode(ids), text);
}

}  // namespace
}  // namespace cke
