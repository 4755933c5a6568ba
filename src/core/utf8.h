// The UTF-8 rules every text layer shares (RFC 3629): encoding a code point and what a lead byte
// announces. The tokenizer adds validation and llama.cpp's lenient decoding
// (tokenizer/utf8.h); the chat layer adds Python's str semantics (chat/py_string.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace minfer::utf8 {

// Appends the UTF-8 encoding of `cp` (< 0x110000; surrogates are encoded as their 3 bytes).
void append(std::string& out, uint32_t cp);

// The code point at s[i], advancing i past it. A byte that does not start a complete valid
// sequence decodes as U+FFFD and i advances by one.
uint32_t decode_next(std::string_view s, size_t& i);

// What a lead byte allows in a valid sequence (RFC 3629 §4, the UTF8-1/2/3/4 rules): its length
// and the range of its second byte, which is how overlong forms (E0 80..9F, F0 80..8F),
// surrogates (ED A0..BF) and code points past U+10FFFF (F4 90..BF) are refused. Later
// continuation bytes are 0x80..0xBF. length 0: the byte cannot start a sequence (a continuation
// byte, C0, C1, F5..FF).
struct LeadByte {
  uint8_t length;
  uint8_t second_lo;
  uint8_t second_hi;
};

constexpr LeadByte lead_byte(uint8_t lead) {
  if (lead < 0x80) return {1, 0x80, 0xBF};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead >= 0xE0 && lead <= 0xEF) {
    return {3, static_cast<uint8_t>(lead == 0xE0 ? 0xA0 : 0x80),
            static_cast<uint8_t>(lead == 0xED ? 0x9F : 0xBF)};
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    return {4, static_cast<uint8_t>(lead == 0xF0 ? 0x90 : 0x80),
            static_cast<uint8_t>(lead == 0xF4 ? 0x8F : 0xBF)};
  }
  return {0, 0x80, 0xBF};
}

}  // namespace minfer::utf8
