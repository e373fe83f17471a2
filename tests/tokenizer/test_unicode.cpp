// UTF-8 decoding, code point classes, GPT-2 byte alphabet, and the regex splitter's
// llama.cpp semantics. Expected values are worked out by hand from the Unicode tables and
// from how std::regex_iterator walks a string.
#include <gtest/gtest.h>

#include "runtime/tokenizer/pretokenizer.h"
#include "runtime/tokenizer/unicode.h"

namespace cke::tok {
namespace {

using Cpts = std::vector<uint32_t>;
using Words = std::vector<std::string>;

TEST(Utf8, DecodesLikeLlamaCpp) {
  EXPECT_EQ(utf8_to_cpts("a\xC3\xA9"), (Cpts{0x61, 0xE9}));
  EXPECT_EQ(utf8_to_cpts("\xE2\x82\xAC"), (Cpts{0x20AC}));
  EXPECT_EQ(utf8_to_cpts("\xF0\x9F\x98\x81"), (Cpts{0x1F601}));
  // Malformed: one byte becomes U+FFFD and decoding resumes at the next byte.
  EXPECT_EQ(utf8_to_cpts("\x80"), (Cpts{0xFFFD}));
  EXPECT_EQ(utf8_to_cpts("\xE2\x82"), (Cpts{0xFFFD, 0xFFFD}));
  EXPECT_EQ(utf8_to_cpts("\xC3("), (Cpts{0xFFFD, '('}));
  EXPECT_EQ(utf8_to_cpts("\xFF"), (Cpts{0xFFFD}));
  // Lenient: overlong forms and surrogates decode to their values.
  EXPECT_EQ(utf8_to_cpts("\xC0\x80"), (Cpts{0}));
  EXPECT_EQ(utf8_to_cpts("\xED\xA0\x80"), (Cpts{0xD800}));
  EXPECT_EQ(utf8_to_cpts(std::string("a\0b", 3)), (Cpts{'a', 0, 'b'}));
}

TEST(Utf8, EncodesAndReplacesOutOfRange) {
  std::string s;
  for (uint32_t c : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) append_utf8(s, c);
  EXPECT_EQ(s, "\x24\xC2\xA2\xE2\x82\xAC\xF0\x90\x8D\x88");
  s.clear();
  append_utf8(s, 0x110000);
  EXPECT_EQ(s, "\xEF\xBF\xBD");
  EXPECT_EQ(utf8_len('a'), 1u);
  EXPECT_EQ(utf8_len('\xC3'), 2u);
  EXPECT_EQ(utf8_len('\xE2'), 3u);
  EXPECT_EQ(utf8_len('\xF0'), 4u);
  EXPECT_EQ(utf8_len('\x80'), 1u);
}

TEST(Unicode, Categories) {
  EXPECT_EQ(cpt_category('A'), kCatLetter);
  EXPECT_EQ(cpt_category('5'), kCatNumber);
  EXPECT_EQ(cpt_category('!'), kCatPunct);
  EXPECT_EQ(cpt_category('$'), kCatSymbol);
  EXPECT_EQ(cpt_category('~'), kCatSymbol);
  EXPECT_EQ(cpt_category(' '), kCatSeparator);
  EXPECT_EQ(cpt_category('\n'), kCatOther);
  EXPECT_EQ(cpt_category(0xE9), kCatLetter);       // é
  EXPECT_EQ(cpt_category(0x0663), kCatNumber);     // Arabic-Indic three
  EXPECT_EQ(cpt_category(0x2163), kCatNumber);     // Roman numeral four (Nl)
  EXPECT_EQ(cpt_category(0x3002), kCatPunct);      // ideographic full stop
  EXPECT_EQ(cpt_category(0x0301), kCatMark);       // combining acute
  EXPECT_EQ(cpt_category(0x20AC), kCatSymbol);     // euro sign
  EXPECT_EQ(cpt_category(0x1F600), kCatSymbol);    // emoji (So)
  EXPECT_EQ(cpt_category(0x00A0), kCatSeparator);  // no-break space
  EXPECT_EQ(cpt_category(0x4E00), kCatLetter);     // CJK ideograph (Lo)
  EXPECT_EQ(cpt_category(0xE000), kCatOther);      // private use
  EXPECT_EQ(cpt_category(0x200D), kCatOther);      // zero width joiner (Cf)
  EXPECT_EQ(cpt_category(0xD800), kCatOther);      // surrogate
  EXPECT_EQ(cpt_category(0x10FFFF), kCatOther);    // noncharacter
  EXPECT_EQ(cpt_category(0x110000), kCatOther);    // beyond Unicode
}

TEST(Unicode, WhiteSpaceIsTheUnicodeProperty) {
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u,
                     0x2009u, 0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    EXPECT_TRUE(cpt_is_whitespace(c)) << std::hex << c;
  }
  // Python's str.isspace() also takes 0x1C..0x1F; White_Space does not. Nor ZWSP.
  for (uint32_t c : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu, 0x61u, 0xFEFFu}) {
    EXPECT_FALSE(cpt_is_whitespace(c)) << std::hex << c;
  }
}

TEST(Unicode, Gpt2ByteAlphabet) {
  EXPECT_EQ(byte_to_gpt2('A'), "A");
  EXPECT_EQ(byte_to_gpt2(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_to_gpt2('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_to_gpt2(0x00), "\xC4\x80");  // U+0100
  EXPECT_EQ(byte_to_gpt2(0xAD), "\xC5\x83");  // U+0143 'Ń' (soft hyphen is not kept)
  EXPECT_EQ(byte_to_gpt2(0xE9), "\xC3\xA9");  // printable Latin-1 maps to itself
  EXPECT_EQ(gpt2_to_byte(0x120), std::optional<uint8_t>(0x20));
  EXPECT_EQ(gpt2_to_byte('A'), std::optional<uint8_t>('A'));
  EXPECT_EQ(gpt2_to_byte(0x7F), std::nullopt);  // DEL is remapped, so U+007F is no byte
  EXPECT_EQ(gpt2_to_byte(0x20AC), std::nullopt);
  for (int b = 0; b < 256; ++b) {
    const auto cpts = utf8_to_cpts(byte_to_gpt2(static_cast<uint8_t>(b)));
    ASSERT_EQ(cpts.size(), 1u);
    EXPECT_EQ(gpt2_to_byte(cpts[0]), std::optional<uint8_t>(static_cast<uint8_t>(b)));
  }
}

TEST(Regex, Collapse) {
  EXPECT_TRUE(regex_uses_categories("\\p{L}+"));
  EXPECT_TRUE(regex_uses_categories("[\\p{Lu}]"));
  EXPECT_FALSE(regex_uses_categories("\\s+[a-z]"));
  EXPECT_EQ(collapse_regex("\\p{L}+"),
            "[\xD2"
            "A-Za-z]+");
  EXPECT_EQ(collapse_regex("[^\\s\\p{L}\\p{N}]"),
            "[^\\s\xD2"
            "A-Za-z\xD1"
            "0-9]");
  EXPECT_EQ(collapse_regex("\\p{Lu}"),
            "[\xD2"
            "A-Za-z]");
  EXPECT_EQ(collapse_regex("\\p{M}"), "[\xD4]");
  EXPECT_EQ(collapse_regex("\\[\\p{N}"),
            "\\[[\xD1"
            "0-9]");  // escaped '[' opens nothing
}

Words split(std::vector<std::string> regexes, std::string_view text, bool byte_encode = false) {
  std::string err;
  auto s = RegexSplitter::create(regexes, &err);
  EXPECT_TRUE(s) << err;
  return s ? s->split(text, byte_encode) : Words{};
}

const char* kGpt2Re =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* kLlama3Re =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

TEST(Regex, Gpt2) {
  // Two spaces before "!!": \s+(?!\S) backs off one space, which then joins " !!".
  EXPECT_EQ(split({kGpt2Re}, "Hello world  !!"), (Words{"Hello", " world", " ", " !!"}));
  EXPECT_EQ(split({kGpt2Re}, "Hello world  !!", true),
            (Words{"Hello", "\xC4\xA0world", "\xC4\xA0", "\xC4\xA0!!"}));
  EXPECT_EQ(split({kGpt2Re}, "it's 42"), (Words{"it", "'s", " 42"}));
  // A lone tab before a letter matches nothing and stays a piece of its own.
  EXPECT_EQ(split({kGpt2Re}, "a\tb"), (Words{"a", "\t", "b"}));
}

TEST(Regex, Llama3) {
  EXPECT_EQ(split({kLlama3Re}, "12345 abc\n\n  x"),
            (Words{"123", "45", " abc", "\n\n", " ", " x"}));
  EXPECT_EQ(split({kLlama3Re}, "I'M"), (Words{"I", "'M"}));
}

TEST(Regex, UnmatchedTextAndRefinement) {
  EXPECT_EQ(split({"a"}, "xay"), (Words{"x", "a", "y"}));
  // The second regex splits each piece the first produced.
  EXPECT_EQ(split({"[0-9]+", "b"}, "ab12bc"), (Words{"a", "b", "12", "b", "c"}));
}

TEST(Regex, DollarOnlyAtEnd) {
  EXPECT_EQ(split({"b$"}, "ab\n"), (Words{"ab\n"}));  // PCRE's default would match
  EXPECT_EQ(split({"b$"}, "ab"), (Words{"a", "b"}));
}

TEST(Regex, CollapsedClassesFollowLlamaCpp) {
  // '~' is neither \p{S} nor \p{P} in the collapsed ASCII sets.
  EXPECT_EQ(split({"\\p{S}+"}, "a~+b"), (Words{"a~", "+", "b"}));
  EXPECT_EQ(split({"\\p{P}+"}, "a~.b"), (Words{"a~", ".", "b"}));
  // \p{Lu} means "any letter".
  EXPECT_EQ(split({"\\p{Lu}+"}, "aB1"), (Words{"aB", "1"}));
  EXPECT_EQ(split({"\\p{L}+"}, "caf\xC3\xA9!"), (Words{"caf\xC3\xA9", "!"}));
  // Non-ASCII letters, numbers, marks by class.
  EXPECT_EQ(split({"\\p{N}+"}, "x\xD9\xA3\xD9\xA4y"), (Words{"x", "\xD9\xA3\xD9\xA4", "y"}));
  EXPECT_EQ(split({"\\p{M}+"}, "e\xCC\x81"), (Words{"e", "\xCC\x81"}));
}

TEST(Regex, NonAsciiWhitespace) {
  // U+3000 is \s in both modes (collapsed to 0x0B / replaced by 0x0B).
  EXPECT_EQ(split({"\\s+"},
                  "a\xE3\x80\x80"
                  "b"),
            (Words{"a", "\xE3\x80\x80", "b"}));
  EXPECT_EQ(split({"\\s+|\\p{L}+"},
                  "a\xE3\x80\x80"
                  "b"),
            (Words{"a", "\xE3\x80\x80", "b"}));
  // ...but never a member of a literal class that names it.
  EXPECT_EQ(split({"[\xE3\x80\x80]"},
                  "a\xE3\x80\x80"
                  "b"),
            (Words{"a\xE3\x80\x80"
                   "b"}));
}

TEST(Regex, MalformedUtf8BecomesReplacementChar) {
  EXPECT_EQ(split({"\\p{L}+"},
                  "a\xFF"
                  "b"),
            (Words{"a", "\xEF\xBF\xBD", "b"}));
  EXPECT_EQ(split({"[^x]+"},
                  "a\xFF"
                  "b"),
            (Words{"a\xEF\xBF\xBD"
                   "b"}));
}

TEST(Regex, EmptyMatchesAdvanceLikeRegexIterator) {
  // Empty matches at 1 and 4 ("1|234|567"); each adds an empty piece.
  EXPECT_EQ(split({"(?=(\\d{3})+(?!\\d))"}, "1234567"), (Words{"1", "", "234", "", "567"}));
}

TEST(Regex, LongInputsDoNotHitLimits) {
  const std::string spaces(200000, ' ');
  const auto w = split({kLlama3Re}, spaces + "x");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].size(), spaces.size() - 1);
  EXPECT_EQ(w[1], " x");
}

TEST(Regex, BadRegexIsAnError) {
  std::string err;
  EXPECT_FALSE(RegexSplitter::create({"("}, &err));
  EXPECT_NE(err.find("cannot compile"), std::string::npos) << err;
  EXPECT_FALSE(RegexSplitter::create({"[\xC3\xA9]\\p{L}"}, &err));
}

TEST(PreConfig, Table) {
  std::string err;
  const auto def = bpe_pre_config("", &err);
  ASSERT_TRUE(def);
  EXPECT_EQ(def->name, "default");
  EXPECT_EQ(def->regexes.size(), 4u);
  const auto l3 = bpe_pre_config("llama-bpe", &err);
  ASSERT_TRUE(l3);
  EXPECT_TRUE(l3->ignore_merges);
  EXPECT_TRUE(l3->add_bos);
  EXPECT_TRUE(l3->clean_spaces);
  const auto q = bpe_pre_config("qwen2", &err);
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->clean_spaces);
  EXPECT_FALSE(q->ignore_merges);
  const auto g4 = bpe_pre_config("gemma4", &err);
  ASSERT_TRUE(g4);
  EXPECT_FALSE(g4->byte_encode);
  EXPECT_TRUE(g4->escape_whitespaces);
  EXPECT_FALSE(bpe_pre_config("kimi-k2", &err));
  EXPECT_NE(err.find("kimi-k2"), std::string::npos);
  // Every regex in the table compiles.
  for (const char* name : {"default",        "llama3",      "deepseek-llm",
                           "deepseek-coder", "deepseek-v3", "spark2_5",
                           "falcon",         "gpt-2",       "starcoder",
                           "qwen2",          "qwen35",      "bloom",
                           "viking",         "jais-2",      "tekken",
                           "chameleon",      "gpt-4o",      "granite-embed-multi-97m",
                           "tiny_aya",       "superbpe",    "bailingmoe",
                           "seed-coder",     "ufakzeka",    "laguna",
                           "exaone-moe",     "minicpm5",    "gemma4",
                           "sarvam-moe"}) {
    const auto c = bpe_pre_config(name, &err);
    ASSERT_TRUE(c) << name;
    EXPECT_TRUE(RegexSplitter::create(c->regexes, &err)) << name << ": " << err;
  }
}

}  // namespace
}  // namespace cke::tok
