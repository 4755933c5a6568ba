#include "tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "tokenizer/utf8.h"

namespace minfer::tokenizer {

SpmModel::SpmModel(const Vocab& vocab, int32_t unk_id) : vocab_(vocab) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = vocab.find(std::string_view(name, 6));
    if (id < 0) {
      const char c = static_cast<char>(b);
      id = vocab.find(std::string_view(&c, 1));
    }
    byte_id_[b] = id >= 0 ? id : unk_id;
  }
}

namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  size_t offset;  // into the text
  size_t n;       // bytes; 0 once merged into the symbol on its left
};

struct Bigram {
  int32_t left;
  int32_t right;
  float score;
  size_t size;
};

// Highest score first, then the leftmost pair (llm_bigram_spm::comparator).
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;  // [n_chars]
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t n =
        std::min(utf8::lead_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, offset + n == text.size() ? -1 : index + 1, offset, n});
    offset += n;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged =
        text.substr(symbols[left].offset, symbols[left].n + symbols[right].n);
    const int32_t id = vocab_.find(merged);
    if (id < 0) return;
    queue.push({left, right, vocab_.score[id], merged.size()});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Stale: one side was merged away or grew since the pair was queued.
    if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  // Every merged symbol is a token, so a symbol that is not one is a single character, which
  // falls back to bytes. (llama.cpp's resegment also consults a reverse-merge map, but a single
  // character never equals the text of two merged symbols: each symbol starts with a lead byte
  // announcing its own full length, so that lookup cannot succeed.)
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].offset, symbols[i].n);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = byte_id_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace minfer::tokenizer
