// Byte-level BPE (GPT-2 family: tokenizer.ggml.model = "gpt2"), run on token ids.
//
// A pre-tokenized word is first turned into one symbol per byte (GPT-2 maps each byte to a
// printable code point, and every such code point is a token of the vocabulary), then the adjacent
// pair with the lowest merge rank is merged, leftmost first on ties, until no pair has a rank —
// exactly llama.cpp's llm_tokenizer_bpe_session. Ranks come from tokenizer.ggml.merges ("A B" at
// index i has rank i) and live in a hash table keyed by the pair of ids, so merging never touches
// strings. Strings that merges name but the vocabulary lacks get synthetic ids (>= n_vocab) so
// such merges still apply as they do in llama.cpp; a final symbol with a synthetic id falls back
// to the single-byte tokens of its text, as llama.cpp does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace minfer::tokenizer {

// GPT-2's byte → code point table (bytes_to_unicode in OpenAI's encoder.py): printable bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 to U+0100, U+0101, … in order.
const std::array<uint32_t, 256>& gpt2_byte_to_codepoint();
// The inverse: code point → byte, or -1 for code points outside the table.
int gpt2_codepoint_to_byte(uint32_t cp);
// `bytes` with every byte replaced by the UTF-8 of its GPT-2 code point.
std::string gpt2_byte_encode(std::string_view bytes);

// Reusable buffers for encode_word, so encoding a long text does not allocate per word.
struct BpeScratch {
  std::vector<int32_t> ids;     // [n_symbols] current symbol ids
  std::vector<int32_t> prev;    // [n_symbols] linked list over live symbols (-1 = none)
  std::vector<int32_t> next;    // [n_symbols]
  std::vector<int32_t> rank;    // [n_symbols] rank of the pair (i, next[i]), kNoRank when none
  std::vector<int32_t> merged;  // [n_symbols] id that pair produces
  struct HeapEntry {
    int32_t rank, left, right, left_id, right_id, result;
  };
  std::vector<HeapEntry> heap;
};

class BpeModel {
 public:
  // Builds the rank table from "A B" merge strings; the vocabulary must hold the byte tokens'
  // texts or they get synthetic ids. byte_encode false (Gemma 4, llama.cpp's byte_encode off):
  // the symbols a word starts from are its UTF-8 characters as they are, and a final symbol
  // that is no token falls back to the <0xXX> tokens of its bytes, which the vocabulary must
  // hold.
  static Result<BpeModel> build(const Vocab& vocab, const std::vector<std::string>& merges,
                                bool byte_encode = true);

  // Appends the ids of one pre-tokenized word given as raw bytes (before the GPT-2 mapping).
  void encode_word(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const;

  // The two merge loops encode_word chooses between (linear scans for short words, a heap for
  // long ones); public so tests can check they agree.
  void encode_word_linear(std::string_view word, std::vector<int32_t>& out,
                          BpeScratch& scratch) const;
  void encode_word_heap(std::string_view word, std::vector<int32_t>& out,
                        BpeScratch& scratch) const;

  size_t n_merges() const { return n_merges_; }

 private:
  static constexpr uint64_t kEmptyKey = ~0ull;
  struct Slot {
    uint64_t key = kEmptyKey;  // (left id << 32) | right id
    int32_t rank = 0;
    int32_t result = 0;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  static uint64_t mix(uint64_t k) {
    // splitmix64 finalizer: spreads consecutive ids over the table.
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return k;
  }
  const Slot* find_pair(int32_t left, int32_t right) const {
    uint64_t key = pair_key(left, right);
    for (uint64_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s;
      if (s.key == kEmptyKey) return nullptr;
    }
  }
  void emit(int32_t id, std::vector<int32_t>& out) const;
  // One symbol per byte of `word` (its GPT-2 character's id), linked in order in scratch's ids,
  // prev and next. Returns the number of symbols.
  int32_t start_symbols(std::string_view word, BpeScratch& scratch) const;
  // start_symbols without byte_encode: one symbol per UTF-8 character.
  int32_t start_char_symbols(std::string_view word, BpeScratch& scratch) const;

  // A character of a byte_encode-off word that is no token and no merge's text: -(2 + its code
  // point), which no pair matches and emit turns into byte tokens.
  static int32_t unknown_char_id(uint32_t cp) { return -2 - static_cast<int32_t>(cp); }
  // The ids of a final symbol's UTF-8 bytes as <0xXX> tokens (byte_encode off).
  void emit_bytes(std::string_view bytes, std::vector<int32_t>& out) const;

  bool byte_encode_ = true;
  std::array<int32_t, 256> byte_token_{};  // <0xXX> token of each byte (byte_encode off)
  // byte_encode off: the id of each one-character token and of each merge text that is no
  // token (>= n_vocab).
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> symbol_ids_;
  int32_t n_vocab_ = 0;
  std::array<int32_t, 256> byte_id_{};  // id of each byte's GPT-2 character
  // For synthetic id n_vocab + i: the tokens llama.cpp emits when such a symbol survives, one
  // per byte of its GPT-2 text that is itself a token.
  std::vector<std::vector<int32_t>> synthetic_fallback_;
  std::vector<Slot> slots_;  // [capacity] open addressing, linear probing
  uint64_t mask_ = 0;
  size_t n_merges_ = 0;
};

}  // namespace minfer::tokenizer
