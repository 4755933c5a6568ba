// The sampler's parameters (sampling/sampler.h runs them), on their own so that the public API
// (include/minfer/minfer.h, whose GenerateParams extends them) can include them: no dependency
// beyond the standard library.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace minfer {

// The seed that means "draw one at random" (llama.cpp's LLAMA_DEFAULT_SEED has the same value).
inline constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

// `seed` itself, or a fresh random one below kRandomSeed when it is kRandomSeed (32 bits, as
// llama.cpp draws: exact as a JSON number everywhere), so that whoever resolves it can report the
// seed a run used.
inline uint64_t resolve_seed(uint64_t seed) {
  if (seed != kRandomSeed) return seed;
  std::random_device device;
  while (seed == kRandomSeed) seed = device();
  return seed;
}

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
  uint64_t seed = kRandomSeed;                        // kRandomSeed: a random one (resolve_seed)
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
};

}  // namespace minfer
