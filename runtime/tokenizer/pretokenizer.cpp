#include "runtime/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <initializer_list>

#include "runtime/tokenizer/unicode.h"

namespace cke::tok {

// ---------------------------------------------------------------------------------------
// The regexes, as llama.cpp lists them per pre-tokenizer type (llm_tokenizer_bpe). Most
// come from the models' tokenizer.json, with (?i:...) spelled out as character classes.
// Non-ASCII members are written as \u escapes.
namespace {

constexpr const char* kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr const char* kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen35 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kJais2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re";
constexpr const char* kDeepseek3Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kSpark25Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* kTekken =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kGraniteEmbMulti =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kTinyAya =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kBailing =
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* kSeedCoder =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kUfakzeka =
    R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kExaoneMoe =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* kMinicpm5Main =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kNewlines = R"re([^\n]+|[\n]+)re";
// CJK Unified Ideographs (U+4E00..U+9FA5), U+0800..U+4E00, Hangul syllables and beyond.
constexpr const char* kDeepseekCjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
// CJK ideographs, hiragana, katakana.
constexpr const char* kDeepseek3Cjk = "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+";
// deepseek-llm's "letters": ASCII and the cased letters of other scripts.
constexpr const char* kDeepseekLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293"
    "\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C"
    "\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5"
    "\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77"
    "\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59"
    "\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
    "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107"
    "\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE"
    "\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E"
    "\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A"
    "\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2"
    "\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+";
// deepseek-llm's punctuation: ASCII and full-width punctuation, quotes, CJK space/marks.
constexpr const char* kDeepseekPunct =
    "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
// BLOOM-style: anything up to whitespace or sentence punctuation (ASCII and CJK/Indic/Arabic).
constexpr const char* kBloom = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";

enum Flag : unsigned {
  kIgnoreMerges = 1u << 0,
  kNoCleanSpaces = 1u << 1,
  kAddBos = 1u << 2,
  kAddSep = 1u << 3,
  kNoBos = 1u << 4,
  kNoByteEncode = 1u << 5,
  kEscapeWs = 1u << 6,
  kNewlineWords = 1u << 7,
};

struct PreEntry {
  std::initializer_list<const char*> names;
  std::initializer_list<const char*> regexes;
  unsigned flags;
};

const std::initializer_list<const char*> kDefaultRegexes = {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2,
                                                            R"re(\p{N}+)re", "[0-9][0-9][0-9]"};

// Name -> regexes and flags, following llama.cpp's llama_vocab::impl::load. Not here (and
// so rejected): kimi-k2 and afmoe (hand-written splitters), youtu, and the non-gpt2 vocab
// models hybriddna and whitespace.
const PreEntry kPreTable[] = {
    {{"default"}, kDefaultRegexes, 0},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano"},
     {kLlama3},
     kIgnoreMerges | kAddBos},
    {{"dbrx", "smaug-bpe"}, {kLlama3}, 0},
    {{"deepseek-llm"},
     {"[\r\n]", kDeepseekLetters, kDeepseekPunct, R"re(\s+$)re", kDeepseekCjk, R"re(\p{N}+)re"},
     kNoCleanSpaces},
    {{"deepseek-coder"},
     {"[\r\n]", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kDeepseekCjk, R"re(\p{N})re"},
     kNoCleanSpaces},
    {{"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"},
     {R"re(\p{N}{1,3})re", kDeepseek3Cjk, kDeepseek3Main},
     kNoCleanSpaces},
    {{"spark2_5"},
     {R"re(\p{N}{1,3})re", kDeepseek3Cjk, kSpark25Main, R"re(\p{N})re"},
     kNoCleanSpaces},
    {{"falcon"}, {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, "[0-9][0-9][0-9]"}, 0},
    {{"mpt", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
      "a.x-4.0", "mellum", "modern-bert", "exaone4", "olmo", "jais"},
     {kGpt2},
     0},
    {{"jina-v1-en", "jina-v2-code", "roberta-bpe"}, {kGpt2}, kAddSep},
    {{"trillion", "granite-docling"}, {kGpt2}, kNoCleanSpaces},
    {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"},
     {R"re(\p{N})re", kGpt2},
     0},
    {{"command-r", "smollm"}, {R"re(\p{N})re", kGpt2}, kNoCleanSpaces},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"},
     {kQwen2},
     kNoCleanSpaces},
    {{"megrez", "stablelm2"}, {kQwen2}, 0},
    {{"qwen35"}, {kQwen35}, kNoCleanSpaces},
    {{"poro-chat"}, {kBloom}, kNoCleanSpaces},
    {{"bloom", "gpt3-finnish"}, {kBloom}, 0},
    {{"viking"}, {kBloom, R"re(\p{N})re"}, kNoCleanSpaces},
    {{"glm4", "chatglm-bpe"}, {kLlama3}, kNoBos},
    {{"jais-2"}, {kJais2}, 0},
    {{"tekken"}, {kTekken}, kNoCleanSpaces | kIgnoreMerges | kAddBos},
    {{"chameleon"},
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"re(([\t\n]|    |  ))re",
      R"re(\p{N})re", R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
     kAddBos | kNoCleanSpaces},
    {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}, kNoCleanSpaces},
    {{"granite-embed-multi-97m"}, {kGraniteEmbMulti}, kNoCleanSpaces | kIgnoreMerges},
    {{"tiny_aya", "cohere2moe"}, {R"re(\d{1,3}(?=(?:\d{3})*\b))re", kTinyAya}, kNoCleanSpaces},
    {{"superbpe"}, {R"re(\p{N}+)re", R"re((?=(\d{3})+(?!\d)))re"}, kNoCleanSpaces},
    {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}, kNoCleanSpaces},
    {{"seed-coder"}, {kSeedCoder}, kNoCleanSpaces},
    {{"ufakzeka"}, {kUfakzeka}, kNoCleanSpaces},
    {{"laguna"}, {kNewlines, kQwen2}, kNoCleanSpaces},
    {{"exaone-moe"}, {kExaoneMoe}, 0},
    {{"minicpm5"}, {R"re(\p{N}{1,3})re", kMinicpm5Main}, kIgnoreMerges},
    {{"gemma4", "granite-embed-multi-311m"},
     {kNewlines},
     kNoByteEncode | kEscapeWs | kNewlineWords},
    {{"sarvam-moe"}, {kNewlines}, kNoByteEncode | kEscapeWs | kNoCleanSpaces},
};

}  // namespace

std::optional<PreConfig> bpe_pre_config(std::string_view pre, std::string* err) {
  const std::string_view name = pre.empty() ? std::string_view("default") : pre;
  for (const PreEntry& e : kPreTable) {
    for (const char* n : e.names) {
      if (name != n) continue;
      PreConfig c;
      c.name = std::string(name);
      for (const char* re : e.regexes) c.regexes.emplace_back(re);
      c.ignore_merges = e.flags & kIgnoreMerges;
      c.clean_spaces = !(e.flags & kNoCleanSpaces);
      c.add_bos = e.flags & kAddBos;
      c.add_sep = e.flags & kAddSep;
      c.no_bos = e.flags & kNoBos;
      c.byte_encode = !(e.flags & kNoByteEncode);
      c.escape_whitespaces = e.flags & kEscapeWs;
      c.newline_words = e.flags & kNewlineWords;
      return c;
    }
  }
  if (err) *err = "unsupported pre-tokenizer type '" + std::string(pre) + "'";
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------
// Collapsed regexes.
namespace {

struct UCat {
  const char* name;
  char byte;          // the byte non-ASCII members collapse to
  const char* ascii;  // the ASCII members, as class syntax
};
// \p{Lu}, \p{Ll}, ... all collapse to "letter", as in llama.cpp. Its ASCII symbol set has
// no '~', so '~' is neither punctuation nor symbol here.
constexpr UCat kUCats[] = {
    {"\\p{N}", '\xD1', "0-9"},
    {"\\p{L}", '\xD2', "A-Za-z"},
    {"\\p{P}", '\xD3', "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", '\xD4', ""},
    {"\\p{S}", '\xD5', "\\$\\+<->^`\\|"},
    {"\\p{Lu}", '\xD2', "A-Za-z"},
    {"\\p{Ll}", '\xD2', "A-Za-z"},
    {"\\p{Lt}", '\xD2', "A-Za-z"},
    {"\\p{Lm}", '\xD2', "A-Za-z"},
    {"\\p{Lo}", '\xD2', "A-Za-z"},
};

char collapsed_byte(uint32_t cpt) {
  if (cpt < 128) return static_cast<char>(cpt);
  if (cpt_is_whitespace(cpt)) return '\x0B';
  switch (cpt_category(cpt)) {
    case kCatNumber:
      return '\xD1';
    case kCatLetter:
      return '\xD2';
    case kCatPunct:
      return '\xD3';
    case kCatMark:
      return '\xD4';
    case kCatSymbol:
      return '\xD5';
    default:
      return '\xD0';
  }
}

}  // namespace

bool regex_uses_categories(std::string_view re) {
  for (const UCat& u : kUCats) {
    if (re.find(u.name) != std::string_view::npos) return true;
  }
  return false;
}

std::string collapse_regex(std::string_view re) {
  std::string out;
  bool inside = false;  // inside [...]; nested classes do not occur in these regexes
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && re[i] == ']' && re[i - 1] != '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (re[i] == '\\' && i + 3 < re.size() && re[i + 1] == 'p' && re[i + 2] == '{') {
      const size_t close = re.find('}', i + 3);
      if (close != std::string_view::npos && close <= i + 10) {
        const std::string_view pat = re.substr(i, close - i + 1);
        const UCat* hit = nullptr;
        for (const UCat& u : kUCats) {
          if (pat == u.name) hit = &u;
        }
        if (hit) {
          if (!inside) out += '[';
          out += hit->byte;
          out += hit->ascii;
          if (!inside) out += ']';
          i = close;
          continue;
        }
      }
    }
    out += re[i];
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Splitter.

struct RegexSplitter::Compiled {
  struct Re {
    pcre2_code* code = nullptr;
    bool collapsed = false;
    bool jit = false;
  };
  std::vector<Re> res;
  bool any_collapsed = false;
  bool any_wide = false;
  bool any_jit = false;
  ~Compiled() {
    for (Re& r : res) pcre2_code_free(r.code);
  }
};

std::optional<RegexSplitter> RegexSplitter::create(const std::vector<std::string>& regexes,
                                                   std::string* err) {
  auto c = std::make_shared<Compiled>();
  for (const std::string& re : regexes) {
    Compiled::Re r;
    r.collapsed = regex_uses_categories(re);
    std::string pattern = re;
    uint32_t options = PCRE2_DOLLAR_ENDONLY;
    if (r.collapsed) {
      for (unsigned char ch : re) {
        if (ch >= 0x80) {
          if (err) *err = "regex mixes Unicode categories and non-ASCII characters: " + re;
          return std::nullopt;
        }
      }
      pattern = collapse_regex(re);
    } else {
      options |= PCRE2_UTF;
    }
    int errcode = 0;
    PCRE2_SIZE erroff = 0;
    r.code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                           &errcode, &erroff, nullptr);
    if (!r.code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(errcode, msg, sizeof msg);
      if (err) {
        *err = "cannot compile pre-tokenizer regex '" + re + "' at offset " +
               std::to_string(erroff) + ": " + reinterpret_cast<const char*>(msg);
      }
      return std::nullopt;
    }
    r.jit = pcre2_jit_compile(r.code, PCRE2_JIT_COMPLETE) == 0;
    c->any_collapsed |= r.collapsed;
    c->any_wide |= !r.collapsed;
    c->any_jit |= r.jit;
    c->res.push_back(r);
  }
  return RegexSplitter(std::move(c));
}

namespace {

// PCRE2 JIT stack, one per thread, reused across calls (creating one costs an mmap). The
// default 32 KB machine stack is too small for the lookahead-heavy regexes on long inputs.
struct JitStack {
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  JitStack() {
    mctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (mctx && stack) pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
  ~JitStack() {
    pcre2_match_context_free(mctx);
    pcre2_jit_stack_free(stack);
  }
};

pcre2_match_context* thread_match_context() {
  thread_local JitStack js;
  return js.mctx;
}

// One regex over one piece, the way std::regex_iterator walks it: every match becomes a
// piece, and so does the unmatched text before it. After an empty match the next attempt
// must be non-empty at the same place, else the search moves on by one character.
// `subject` is the piece; `to_cpt(byte offset)` converts offsets to code points.
template <typename ToCpt>
void split_piece(const pcre2_code* code, bool utf, const char* subject, size_t len,
                 pcre2_match_data* md, pcre2_match_context* mctx, ToCpt to_cpt,
                 std::vector<size_t>& out) {
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject);
  const uint32_t base_opts = utf ? PCRE2_NO_UTF_CHECK : 0;
  size_t pos = 0, start_idx = 0;
  uint32_t extra = 0;
  while (pos <= len) {
    const int rc = pcre2_match(code, s, len, pos, base_opts | extra, md, mctx);
    if (rc == PCRE2_ERROR_NOMATCH && extra != 0) {
      extra = 0;
      if (pos >= len) break;
      ++pos;
      if (utf) {
        while (pos < len && (static_cast<uint8_t>(subject[pos]) & 0xC0) == 0x80) ++pos;
      }
      continue;
    }
    if (rc < 0) break;  // no match, or a resource limit: the rest stays one piece
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t ms = ov[0], me = ov[1];
    if (ms > start_idx) out.push_back(to_cpt(ms) - to_cpt(start_idx));
    out.push_back(to_cpt(me) - to_cpt(ms));
    start_idx = me;
    pos = me;
    extra = (me == ms) ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  if (start_idx < len) out.push_back(to_cpt(len) - to_cpt(start_idx));
}

}  // namespace

std::vector<std::string> RegexSplitter::split(std::string_view text, bool byte_encode) const {
  const Compiled& c = *c_;
  const std::vector<uint32_t> cpts = utf8_to_cpts(text);
  const size_t n = cpts.size();

  std::string collapsed;
  if (c.any_collapsed) {
    collapsed.resize(n);
    for (size_t i = 0; i < n; ++i) collapsed[i] = collapsed_byte(cpts[i]);
  }
  // Code points as UTF-8 for the non-category regexes, non-ASCII whitespace as 0x0B.
  // Surrogates (which the lenient decoder lets through) are not valid UTF-8 for PCRE2;
  // they match none of these regexes' classes, and neither does U+FFFD, so it stands in.
  std::string wide;
  std::vector<size_t> byte_of;   // code point index -> byte offset in `wide`
  std::vector<uint32_t> cpt_of;  // byte offset in `wide` -> code point index
  if (c.any_wide) {
    byte_of.resize(n + 1);
    for (size_t i = 0; i < n; ++i) {
      byte_of[i] = wide.size();
      uint32_t cp = cpts[i];
      if (cp > 0x7F && cpt_is_whitespace(cp)) cp = 0x0B;
      if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementChar;
      append_utf8(wide, cp);
    }
    byte_of[n] = wide.size();
    cpt_of.resize(wide.size() + 1);
    for (size_t i = 0; i < n; ++i) {
      for (size_t b = byte_of[i]; b < byte_of[i + 1]; ++b) cpt_of[b] = static_cast<uint32_t>(i);
    }
    cpt_of[wide.size()] = static_cast<uint32_t>(n);
  }

  pcre2_match_context* mctx = c.any_jit ? thread_match_context() : nullptr;

  std::vector<size_t> offsets = {n};
  std::vector<size_t> next;
  for (const Compiled::Re& r : c.res) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(r.code, nullptr);
    next.clear();
    size_t start = 0;
    for (const size_t len : offsets) {
      if (r.collapsed) {
        split_piece(
            r.code, false, collapsed.data() + start, len, md, mctx, [](size_t b) { return b; },
            next);
      } else {
        const size_t b0 = byte_of[start];
        split_piece(
            r.code, true, wide.data() + b0, byte_of[start + len] - b0, md, mctx,
            [&](size_t b) { return static_cast<size_t>(cpt_of[b0 + b]); }, next);
      }
      start += len;
    }
    pcre2_match_data_free(md);
    offsets.swap(next);
  }

  std::vector<std::string> words;
  words.reserve(offsets.size());
  std::string utf8;
  size_t start = 0;
  for (const size_t len : offsets) {
    utf8.clear();
    for (size_t i = start; i < start + len; ++i) append_utf8(utf8, cpts[i]);
    start += len;
    if (!byte_encode) {
      words.push_back(utf8);
      continue;
    }
    std::string enc;
    enc.reserve(utf8.size() * 2);
    for (const char ch : utf8) enc += byte_to_gpt2(static_cast<uint8_t>(ch));
    words.push_back(std::move(enc));
  }
  return words;
}

}  // namespace cke::tok
