// SentencePiece-style tokenization (tokenizer.ggml.model = "llama") as llama.cpp performs it
// (llm_tokenizer_spm_session): the text, with spaces already replaced by U+2581 "▁", is split into
// UTF-8 characters; adjacent symbols whose concatenation is a token are merged, highest score
// first (leftmost on ties), until no such pair remains; a symbol that is not a token is emitted
// byte by byte as <0xNN> tokens (byte fallback).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace minfer::tokenizer {

class SpmModel {
 public:
  // `unk_id` is emitted for a byte with neither a <0xNN> token nor a one-byte token (-1: none).
  SpmModel(const Vocab& vocab, int32_t unk_id);

  // Appends the ids of `escaped` (spaces already replaced by ▁, space prefix already added).
  void encode(std::string_view escaped, std::vector<int32_t>& out) const;

 private:
  const Vocab& vocab_;
  std::array<int32_t, 256>
      byte_id_{};  // <0xNN> token of each byte, else its one-byte token, else unk
};

}  // namespace minfer::tokenizer
