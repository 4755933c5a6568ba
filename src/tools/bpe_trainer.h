// The tiny byte-level BPE that make-model writes when no --tokenizer-from is given: 256 byte
// tokens in GPT-2's byte-to-unicode spelling, merges learned deterministically from a built-in
// English paragraph, then <|endoftext|>, <|im_start|>, <|im_end|> as control tokens, and a
// ChatML template. About 600 tokens, so token_embd stays small whatever the preset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/gguf_writer.h"

namespace minfer {

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others are moved to
// U+0100 and up, in byte order, so every byte has a visible one-character spelling. [256]
std::vector<std::string> byte_spellings();

// Learns up to max_merges BPE merges from text: words (a run of ASCII letters with its leading
// space, or one other character) are split into byte symbols; the most frequent adjacent pair
// (ties: the smallest pair in byte order) is merged, until max_merges are learned or every word
// is one symbol.
std::vector<std::pair<std::string, std::string>> learn_merges(std::string_view text,
                                                              size_t max_merges);

// Adds the built-in tokenizer's tokenizer.* keys (and chat template) for `arch` and returns its
// vocabulary size.
int64_t add_builtin_tokenizer(GgufWriter& writer, const std::string& arch);

}  // namespace minfer
