// The sampler's parameters (sampling/sampler.h runs them), on their own so that the public API
// (include/minfer/minfer.h, whose GenerateParams extends them) can include them: no dependency
// beyond the standard library.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace minfer {

// llama.cpp's sampling defaults; temperature 0 is greedy.
struct SamplerParams {
  float temperature = 0.8f;     // ≤ 0: greedy
  int32_t top_k = 40;           // ≤ 0: off
  float top_p = 0.95f;          // ≥ 1: off
  float min_p = 0.05f;          // ≤ 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;   // 0: off, -1: the whole history
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  uint64_t seed = 42;
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
};

}  // namespace minfer
