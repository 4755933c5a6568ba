// Sampler settings the sampling tests share (sampler_test, speculative_rule_test,
// json_constraint_test).
#pragma once

#include <cstdint>

#include "sampling/sampler_params.h"

namespace minfer::test {

// Temperature 1 with top-k, top-p and min-p off: a seeded draw from the softmax of the logits
// themselves, so the tests can check what is drawn against that distribution (kRandomSeed: a
// fresh seed each run).
inline SamplerParams untruncated_sampling(uint64_t seed = kRandomSeed) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

}  // namespace minfer::test
