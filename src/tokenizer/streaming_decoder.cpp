#include "tokenizer/streaming_decoder.h"

#include "tokenizer/utf8.h"

namespace minfer {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// True when `s` (shorter than the sequence its first byte announces) could still become a valid
// character once more bytes arrive.
bool is_valid_prefix(std::string_view s) {
  const utf8::LeadByte rule = utf8::lead_byte(static_cast<uint8_t>(s[0]));
  if (rule.length < 2 || s.size() >= rule.length) return false;
  for (size_t i = 1; i < s.size(); ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (i == 1 ? (b < rule.second_lo || b > rule.second_hi) : (b & 0xC0) != 0x80) return false;
  }
  return true;
}

}  // namespace

std::string StreamingDecoder::push(int32_t id) {
  pending_ += tokenizer_.token_to_piece(id, render_special_);
  return drain(false);
}

std::string StreamingDecoder::flush() {
  return drain(true);
}

std::string StreamingDecoder::drain(bool at_end) {
  std::string out;
  const std::string_view s = pending_;
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8::valid_sequence_length(s.substr(i));
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else if (is_valid_prefix(s.substr(i))) {
      if (!at_end) break;  // wait for the rest of this character
      out.append(kReplacement);
      i = s.size();
    } else {
      out.append(kReplacement);
      ++i;
    }
  }
  pending_.erase(0, i);
  return out;
}

}  // namespace minfer
