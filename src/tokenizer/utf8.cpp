#include "tokenizer/utf8.h"

namespace minfer::utf8 {

size_t valid_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = b(0);
  if (lead < 0x80) return 1;
  const LeadByte rule = lead_byte(lead);
  const size_t n = rule.length;
  if (n == 0) return 0;
  if (s.size() < n) return 0;
  if (b(1) < rule.second_lo || b(1) > rule.second_hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

bool is_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs are the common case: skip them eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t word = 0;
      for (size_t k = 0; k < 8; ++k)
        word |= static_cast<uint64_t>(static_cast<uint8_t>(s[i + k])) << (8 * k);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = valid_sequence_length(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void normalize_like_llama(std::string_view text, std::string& bpe_text, std::string& match_text) {
  bpe_text.clear();
  match_text.clear();
  bpe_text.reserve(text.size() + 8);
  match_text.reserve(text.size() + 8);
  const auto b = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const auto is_cont = [&](size_t i) { return i < text.size() && (b(i) & 0xC0) == 0x80; };
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t lead = b(i);
    uint32_t cp = kReplacementChar;
    size_t n = 1;
    // The same decisions as llama.cpp's unicode_cpt_from_utf8: the lead's high bits pick the
    // length, continuation bytes must be 10xxxxxx, and nothing else is checked.
    if (lead < 0x80) {
      cp = lead;
    } else if ((lead & 0x40) == 0) {
      // stray continuation byte: U+FFFD
    } else if ((lead & 0x20) == 0) {
      if (is_cont(i + 1)) {
        cp = ((lead & 0x1Fu) << 6) | (b(i + 1) & 0x3Fu);
        n = 2;
      }
    } else if ((lead & 0x10) == 0) {
      if (is_cont(i + 1) && is_cont(i + 2)) {
        cp = ((lead & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu);
        n = 3;
      }
    } else if ((lead & 0x08) == 0) {
      if (is_cont(i + 1) && is_cont(i + 2) && is_cont(i + 3)) {
        cp = ((lead & 0x07u) << 18) | ((b(i + 1) & 0x3Fu) << 12) | ((b(i + 2) & 0x3Fu) << 6) |
             (b(i + 3) & 0x3Fu);
        n = 4;
        if (cp > 0x10FFFF) cp = kReplacementChar;
      }
    }
    i += n;
    append(bpe_text, cp);
    append(match_text, (cp >= 0xD800 && cp <= 0xDFFF) ? 0xE000 : cp);
  }
}

}  // namespace minfer::utf8
