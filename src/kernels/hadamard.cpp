#include "kernels/hadamard.h"

#include <cmath>

namespace minfer::kernels {

void hadamard_rotate(float* x, int64_t n_runs, int64_t n) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t r = 0; r < n_runs; ++r) {
    float* run = x + r * n;
    for (int64_t i = 0; i < n; ++i) run[i] *= scale;
    for (int64_t span = 1; span < n; span *= 2) {
      for (int64_t i = 0; i < n; i += 2 * span) {
        for (int64_t j = i; j < i + span; ++j) {
          const float u = run[j];
          const float v = run[j + span];
          run[j] = u + v;
          run[j + span] = u - v;
        }
      }
    }
  }
}

}  // namespace minfer::kernels
