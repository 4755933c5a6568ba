// Turns a stream of token ids into text that is safe to print as it arrives: a token can end in
// the middle of a UTF-8 character (byte-level BPE splits multi-byte characters across tokens,
// SentencePiece emits <0xNN> bytes one at a time), so bytes are held back until the character
// they start is complete.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace minfer {

class StreamingDecoder {
 public:
  // `tokenizer` must outlive the decoder. render_special: print CONTROL tokens' text.
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}

  // Adds one token; returns the text that became complete (possibly empty). Never returns part
  // of a UTF-8 character. A byte that can never start or continue a valid character is replaced
  // by U+FFFD at once, so an invalid sequence never blocks what follows it.
  std::string push(int32_t id);

  // Ends the stream: returns what is still held back, an unfinished character as one U+FFFD.
  std::string flush();

  // Bytes held back, waiting for the rest of their character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string drain(bool at_end);

  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;  // [< 4 bytes after each push] the start of an unfinished character
};

}  // namespace minfer
