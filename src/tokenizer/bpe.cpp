#include "tokenizer/bpe.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace minfer::tokenizer {

namespace {

constexpr int32_t kNoRank = std::numeric_limits<int32_t>::max();
// Words up to this many bytes merge with linear scans (no heap traffic); longer ones (runs of
// letters or digits in data dumps) use a heap so the cost stays O(n log n).
constexpr size_t kLinearMaxBytes = 48;

std::array<uint32_t, 256> make_byte_to_codepoint() {
  std::array<uint32_t, 256> table{};
  std::array<bool, 256> printable{};
  for (int b = 0x21; b <= 0x7E; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  uint32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) table[b] = printable[b] ? static_cast<uint32_t>(b) : next_extra++;
  return table;
}

}  // namespace

const std::array<uint32_t, 256>& gpt2_byte_to_codepoint() {
  static const std::array<uint32_t, 256> table = make_byte_to_codepoint();
  return table;
}

int gpt2_codepoint_to_byte(uint32_t cp) {
  // The table's image is [0x21, 0x7E] ∪ [0xA1, 0xAC] ∪ [0xAE, 0xFF] (identity) ∪ [0x100, 0x143].
  static const std::array<int16_t, 0x144> inverse = [] {
    std::array<int16_t, 0x144> inv{};
    inv.fill(-1);
    const auto& fwd = gpt2_byte_to_codepoint();
    for (int b = 0; b < 256; ++b) inv[fwd[b]] = static_cast<int16_t>(b);
    return inv;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

std::string gpt2_byte_encode(std::string_view bytes) {
  const auto& table = gpt2_byte_to_codepoint();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append(out, table[static_cast<uint8_t>(c)]);
  return out;
}

Result<BpeModel> BpeModel::build(const Vocab& vocab, const std::vector<std::string>& merges,
                                 bool byte_encode) {
  BpeModel model;
  model.n_vocab_ = vocab.size();
  model.byte_encode_ = byte_encode;
  if (!byte_encode) {
    for (int b = 0; b < 256; ++b) {
      const std::string text = fmt::format("<0x{:02X}>", b);
      model.byte_token_[b] = vocab.find(text);
      if (model.byte_token_[b] < 0) {
        return make_error(ErrorCode::kCorrupt,
                          "[tokenizer] the vocabulary has no byte token '{}', which a BPE "
                          "vocabulary on raw UTF-8 (tokenizer.ggml.model gemma4) falls back to",
                          text);
      }
    }
  }

  // Texts that merges mention but the vocabulary lacks get ids past the vocabulary.
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> synthetic;
  std::vector<std::string> synthetic_text;
  auto id_for = [&](std::string_view text) -> int32_t {
    int32_t id = vocab.find(text);
    if (id >= 0) return id;
    auto it = synthetic.find(text);
    if (it != synthetic.end()) return it->second;
    id = model.n_vocab_ + static_cast<int32_t>(synthetic_text.size());
    synthetic.emplace(std::string(text), id);
    synthetic_text.emplace_back(text);
    return id;
  };

  const auto& byte_cp = gpt2_byte_to_codepoint();
  for (int b = 0; b < 256; ++b) {
    std::string text;
    utf8::append(text, byte_cp[b]);
    model.byte_id_[b] = id_for(text);
  }

  size_t capacity = 16;
  while (capacity < merges.size() * 2 + 16) capacity *= 2;
  model.slots_.assign(capacity, Slot{});
  model.mask_ = capacity - 1;

  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& merge = merges[rank];
    // llama.cpp splits at the first space after the first byte; a line without one names no pair.
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) continue;
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    if (right.empty()) continue;
    const int32_t left_id = id_for(left);
    const int32_t right_id = id_for(right);
    const int32_t result_id = id_for(std::string(left) + std::string(right));
    const uint64_t key = pair_key(left_id, right_id);
    for (uint64_t i = mix(key) & model.mask_;; i = (i + 1) & model.mask_) {
      Slot& s = model.slots_[i];
      if (s.key == key) break;  // a repeated pair keeps its first (lowest) rank, as in llama.cpp
      if (s.key == kEmptyKey) {
        s.key = key;
        s.rank = static_cast<int32_t>(rank);
        s.result = result_id;
        ++model.n_merges_;
        break;
      }
    }
  }

  model.synthetic_fallback_.resize(synthetic_text.size());
  if (!byte_encode) {
    // A surviving synthetic symbol is its bytes' <0xXX> tokens.
    for (size_t i = 0; i < synthetic_text.size(); ++i) {
      model.emit_bytes(synthetic_text[i], model.synthetic_fallback_[i]);
    }
    model.symbol_ids_ = std::move(synthetic);
    for (int32_t id = 0; id < vocab.size(); ++id) {
      const std::string& text = vocab.text[static_cast<size_t>(id)];
      if (!text.empty() && utf8::lead_length(static_cast<uint8_t>(text[0])) == text.size()) {
        model.symbol_ids_.emplace(text, id);
      }
    }
    return model;
  }
  for (size_t i = 0; i < synthetic_text.size(); ++i) {
    for (char c : synthetic_text[i]) {
      const int32_t id = vocab.find(std::string_view(&c, 1));
      if (id >= 0) model.synthetic_fallback_[i].push_back(id);
    }
  }
  return model;
}

void BpeModel::emit_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
  for (const char c : bytes) out.push_back(byte_token_[static_cast<uint8_t>(c)]);
}

void BpeModel::emit(int32_t id, std::vector<int32_t>& out) const {
  if (id < 0) {
    std::string bytes;
    utf8::append(bytes, static_cast<uint32_t>(-2 - id));
    emit_bytes(bytes, out);
    return;
  }
  if (id < n_vocab_) {
    out.push_back(id);
    return;
  }
  const auto& fallback = synthetic_fallback_[static_cast<size_t>(id - n_vocab_)];
  out.insert(out.end(), fallback.begin(), fallback.end());
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out,
                           BpeScratch& scratch) const {
  if (word.size() == 1 && byte_encode_) {
    emit(byte_id_[static_cast<uint8_t>(word[0])], out);
  } else if (word.size() <= kLinearMaxBytes) {
    encode_word_linear(word, out, scratch);
  } else {
    encode_word_heap(word, out, scratch);
  }
}

int32_t BpeModel::start_symbols(std::string_view word, BpeScratch& scratch) const {
  if (!byte_encode_) return start_char_symbols(word, scratch);
  const int32_t n = static_cast<int32_t>(word.size());
  scratch.ids.resize(n);
  scratch.prev.resize(n);
  scratch.next.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    scratch.ids[i] = byte_id_[static_cast<uint8_t>(word[i])];
    scratch.prev[i] = i - 1;
    scratch.next[i] = i + 1 < n ? i + 1 : -1;
  }
  return n;
}

int32_t BpeModel::start_char_symbols(std::string_view word, BpeScratch& scratch) const {
  scratch.ids.clear();
  for (size_t at = 0; at < word.size();) {
    // The text is valid UTF-8 (Tokenizer::encode_bpe rewrites invalid input first).
    const size_t len =
        std::min(utf8::lead_length(static_cast<uint8_t>(word[at])), word.size() - at);
    const std::string_view ch = word.substr(at, len);
    const auto it = symbol_ids_.find(ch);
    size_t i = 0;
    scratch.ids.push_back(it != symbol_ids_.end() ? it->second
                                                  : unknown_char_id(utf8::decode_next(ch, i)));
    at += len;
  }
  const auto n = static_cast<int32_t>(scratch.ids.size());
  scratch.prev.resize(n);
  scratch.next.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    scratch.prev[i] = i - 1;
    scratch.next[i] = i + 1 < n ? i + 1 : -1;
  }
  return n;
}

void BpeModel::encode_word_linear(std::string_view word, std::vector<int32_t>& out,
                                  BpeScratch& scratch) const {
  const int32_t n = start_symbols(word, scratch);
  if (n == 0) return;
  auto& ids = scratch.ids;
  auto& next = scratch.next;
  auto& prev = scratch.prev;
  auto& rank = scratch.rank;
  auto& merged = scratch.merged;
  rank.resize(n);
  merged.resize(n);
  auto update_pair = [&](int32_t i) {
    const Slot* s = next[i] < 0 ? nullptr : find_pair(ids[i], ids[next[i]]);
    rank[i] = s ? s->rank : kNoRank;
    merged[i] = s ? s->result : -1;
  };
  for (int32_t i = 0; i < n; ++i) update_pair(i);

  for (;;) {
    int32_t best = -1;
    int32_t best_rank = kNoRank;
    for (int32_t i = 0; i >= 0; i = next[i]) {
      if (rank[i] < best_rank) {  // strict: the leftmost pair wins ties
        best_rank = rank[i];
        best = i;
      }
    }
    if (best < 0) break;
    const int32_t right = next[best];
    ids[best] = merged[best];
    next[best] = next[right];
    if (next[right] >= 0) prev[next[right]] = best;
    update_pair(best);
    if (prev[best] >= 0) update_pair(prev[best]);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) emit(ids[i], out);
}

void BpeModel::encode_word_heap(std::string_view word, std::vector<int32_t>& out,
                                BpeScratch& scratch) const {
  const int32_t n = start_symbols(word, scratch);
  if (n == 0) return;
  auto& heap = scratch.heap;
  heap.clear();
  auto& ids = scratch.ids;
  auto& next = scratch.next;
  auto& prev = scratch.prev;
  // Min-heap on (rank, left position): llama.cpp's llm_bigram_bpe::comparator.
  auto later = [](const BpeScratch::HeapEntry& a, const BpeScratch::HeapEntry& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  auto push_pair = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const int32_t right = next[left];
    const Slot* s = find_pair(ids[left], ids[right]);
    if (s == nullptr) return;
    heap.push_back({s->rank, left, right, ids[left], ids[right], s->result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const BpeScratch::HeapEntry e = heap.back();
    heap.pop_back();
    // Stale when either side was absorbed or changed since the pair was queued. A merged-away
    // symbol is marked by ids = -1.
    if (ids[e.left] != e.left_id || ids[e.right] != e.right_id || next[e.left] != e.right) continue;
    ids[e.left] = e.result;
    ids[e.right] = -1;
    next[e.left] = next[e.right];
    if (next[e.right] >= 0) prev[next[e.right]] = e.left;
    push_pair(prev[e.left]);
    push_pair(e.left);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) emit(ids[i], out);
}

}  // namespace minfer::tokenizer
