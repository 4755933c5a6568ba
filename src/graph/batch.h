// A batch: the tokens one forward step computes, each with its position and sequence
// (DESIGN.md §1). Several sequences may share a batch; each token attends only to its own
// sequence's cache cells with position ≤ its own (invariant 3).
#pragma once

#include <cstdint>
#include <vector>

namespace minfer {

struct Batch {
  std::vector<int32_t> tokens;     // [n_tokens]
  std::vector<int32_t> positions;  // [n_tokens]
  std::vector<int32_t> seq_ids;    // [n_tokens]
  // Indices into the batch of the tokens whose logits are wanted, ascending. Only these rows go
  // through the final norm and the output matrix.
  std::vector<int32_t> output_rows;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  void add(int32_t token, int32_t pos, int32_t seq, bool want_logits) {
    if (want_logits) output_rows.push_back(static_cast<int32_t>(tokens.size()));
    tokens.push_back(token);
    positions.push_back(pos);
    seq_ids.push_back(seq);
  }
  void clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    output_rows.clear();
  }
};

}  // namespace minfer
