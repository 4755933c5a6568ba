// llama.cpp reference outputs (../shared/golden, see ../shared/README.md) and the comparison
// the forward-pass issue is judged by: per row, KL(llama.cpp ‖ minfer) of the softmax
// distributions, max |Δlogit| and top-1 agreement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace minfer::test {

struct Golden {
  std::string name;   // e.g. "qwen2-tiny-f32.short", "arch/llama3-tiny-f32.long"
  std::string model;  // file name under models/
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
  int64_t n_vocab = 0;
  int64_t first_row = 0;      // row r holds the logits after the token at first_row + r
  std::vector<float> logits;  // [n_rows, n_vocab]
  int64_t n_rows = 0;
  // KV cells llama.cpp ran with ("f32" unless the JSON says: golden/arch/kv/ has f16 and q8_0),
  // and its own mean KL between its f32-cell and these cells' logits on the file (0 if absent).
  std::string cache_type = "f32";
  double llama_self_shift_mean_kl = 0.0;

  std::vector<int32_t> all_tokens() const;
};

// The path of `relative` (to golden/): this repository's tests/data/golden if it holds the file,
// else the shared data's golden/.
std::string golden_file(const std::string& relative);
// Every golden/<folder>/*.json of both places, sorted by name; a name in a folder keeps it
// ("arch/x.short").
std::vector<std::string> golden_names(const std::string& folder = "");
Golden load_golden(const std::string& name);

struct Agreement {
  double mean_kl = 0.0;
  double max_kl = 0.0;
  double max_abs_diff = 0.0;
  double top1_agreement = 0.0;  // fraction of rows with the same argmax
  int64_t n_rows = 0;
};

// `ours` holds the logits of every position of all_tokens(): [n_tokens, n_vocab].
Agreement compare_to_golden(const Golden& golden, const std::vector<float>& ours);

}  // namespace minfer::test
