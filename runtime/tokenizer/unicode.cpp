#include "runtime/tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

namespace cke::tok {

std::vector<uint32_t> utf8_to_cpts(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  auto cont = [&](size_t k) { return i + k < n && (p[i + k] & 0xC0) == 0x80; };
  while (i < n) {
    const uint8_t b = p[i];
    if (!(b & 0x80)) {
      out.push_back(b);
      i += 1;
    } else if (!(b & 0x40)) {
      out.push_back(kReplacementChar);  // stray continuation byte
      i += 1;
    } else if (!(b & 0x20)) {
      if (!cont(1)) {
        out.push_back(kReplacementChar);
        i += 1;
      } else {
        out.push_back(((b & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu));
        i += 2;
      }
    } else if (!(b & 0x10)) {
      if (!cont(1) || !cont(2)) {
        out.push_back(kReplacementChar);
        i += 1;
      } else {
        out.push_back(((b & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu));
        i += 3;
      }
    } else if (!(b & 0x08)) {
      if (!cont(1) || !cont(2) || !cont(3)) {
        out.push_back(kReplacementChar);
        i += 1;
      } else {
        out.push_back(((b & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) |
                      (p[i + 3] & 0x3Fu));
        i += 4;
      }
    } else {
      out.push_back(kReplacementChar);  // F8..FF
      i += 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    append_utf8(out, kReplacementChar);
  }
}

namespace {

constexpr uint32_t kMaxCpt = 0x110000;

uint32_t next_scalar(uint32_t cpt) {
  return cpt + 1 == 0xD800 ? 0xE000 : cpt + 1;
}

// The general category of every code point, read from PCRE2's Unicode tables (PCRE2 has no
// public per-code-point query, so we match one regex over a string holding every scalar
// value in order; each match is a run of one category). Surrogates cannot appear in valid
// UTF-8 and stay kCatOther, which is their category (Cs).
std::vector<uint8_t> build_category_table() {
  std::vector<uint8_t> table(kMaxCpt, kCatOther);
  std::string all;
  all.reserve(4u << 20);
  for (uint32_t c = 0; c < kMaxCpt; c = next_scalar(c)) append_utf8(all, c);

  static const char kPattern[] =
      "(\\p{L}+)|(\\p{N}+)|(\\p{P}+)|(\\p{M}+)|(\\p{S}+)|(\\p{Z}+)|(\\p{C}+)";
  static constexpr Category kGroupCat[] = {kCatLetter, kCatNumber,    kCatPunct, kCatMark,
                                           kCatSymbol, kCatSeparator, kCatOther};
  int errcode = 0;
  PCRE2_SIZE erroff = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF, &errcode, &erroff, nullptr);
  if (!code) return table;
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional; interpreter otherwise
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);

  const auto* subject = reinterpret_cast<PCRE2_SPTR>(all.data());
  size_t off = 0;
  uint32_t cpt = 0;  // code point starting at byte `off`
  auto is_lead = [&](size_t i) { return (static_cast<uint8_t>(all[i]) & 0xC0) != 0x80; };
  while (off < all.size()) {
    const int rc = pcre2_match(code, subject, all.size(), off, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    Category cat = kCatOther;
    for (int g = 1; g < rc; ++g) {
      if (ov[2 * g] != PCRE2_UNSET) {
        cat = kGroupCat[g - 1];
        break;
      }
    }
    for (size_t i = off; i < ov[0]; ++i) {  // gap (should not happen): leave as Other
      if (is_lead(i)) cpt = next_scalar(cpt);
    }
    for (size_t i = ov[0]; i < ov[1]; ++i) {
      if (!is_lead(i)) continue;
      table[cpt] = cat;
      cpt = next_scalar(cpt);
    }
    if (ov[1] == off) break;  // cannot happen with '+' groups; guards against a loop
    off = ov[1];
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return table;
}

const std::vector<uint8_t>& category_table() {
  static const std::vector<uint8_t> table = build_category_table();
  return table;
}

struct ByteMaps {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cpt;  // code point (< 512) -> byte, -1 if none
};

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100.. in byte order.
const ByteMaps& byte_maps() {
  static const ByteMaps maps = [] {
    ByteMaps m;
    m.from_cpt.fill(-1);
    auto self = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    };
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cpt = self(b) ? static_cast<uint32_t>(b) : 256u + n++;
      append_utf8(m.to_utf8[b], cpt);
      m.from_cpt[cpt] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return maps;
}

}  // namespace

Category cpt_category(uint32_t cpt) {
  if (cpt >= kMaxCpt) return kCatOther;
  return static_cast<Category>(category_table()[cpt]);
}

bool cpt_is_whitespace(uint32_t cpt) {
  switch (cpt) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

const std::string& byte_to_gpt2(uint8_t b) {
  return byte_maps().to_utf8[b];
}

std::optional<uint8_t> gpt2_to_byte(uint32_t cpt) {
  if (cpt >= 512) return std::nullopt;
  const int16_t b = byte_maps().from_cpt[cpt];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

}  // namespace cke::tok
