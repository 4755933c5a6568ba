// UTF-8 helpers for the tokenizer: encoding code points, strict validation (RFC 3629), and the
// lenient decoding llama.cpp applies before splitting text for byte-level BPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace minfer::utf8 {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Bytes of the sequence a lead byte announces, read from its high nibble the way llama.cpp's
// SentencePiece and BPE symbol splitting read it: 1 for ASCII and for stray continuation bytes
// (0x80–0xBF), 2 for 0xC0–0xDF, 3 for 0xE0–0xEF, 4 for 0xF0–0xFF.
inline size_t lead_length(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

// Length of the valid UTF-8 sequence at the start of `s` (1–4), 0 when the bytes there are not a
// complete valid sequence: a bad lead, a bad continuation, an overlong form, a surrogate, a code
// point past U+10FFFF, or a sequence cut short by the end of `s`.
size_t valid_sequence_length(std::string_view s);

// True when the whole string is valid UTF-8.
bool is_valid(std::string_view s);

// The text llama.cpp's byte-level BPE actually sees (unicode_cpts_from_utf8 followed by
// re-encoding): sequences are decoded without range checks (overlong forms collapse to their
// shortest encoding, surrogates survive) and every byte that does not start a decodable sequence
// becomes U+FFFD. Code points past U+10FFFF, which llama.cpp cannot re-encode, also become U+FFFD.
// `match_text` receives the same text with each surrogate replaced by U+E000 (three bytes too, so
// offsets agree) for the regex engine, which only accepts valid UTF-8.
void normalize_like_llama(std::string_view text, std::string& bpe_text, std::string& match_text);

}  // namespace minfer::utf8
