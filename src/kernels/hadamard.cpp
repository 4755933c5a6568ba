#include "kernels/hadamard.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace minfer::kernels {
namespace {

// Runs rotated together: their element j side by side (cols[j · kGroup + r], run r), so that
// every butterfly step is the same add or subtract over kGroup neighbouring floats, which the
// compiler turns into vector arithmetic on any ISA. Each element goes through the very
// operations of ggml's run-by-run walk, so the bits are the same.
constexpr int64_t kGroup = 8;
// Runs up to this long (a head's values) keep their columns on the stack.
constexpr int64_t kStackRun = 512;

// g <= kGroup runs of n floats, one after the other from x; cols holds n · kGroup floats.
void rotate_group(float* x, int64_t g, int64_t n, float scale, float* cols) {
  for (int64_t r = 0; r < kGroup; ++r) {
    for (int64_t j = 0; j < n; ++j) cols[j * kGroup + r] = r < g ? x[r * n + j] * scale : 0.0f;
  }
  for (int64_t span = 1; span < n; span *= 2) {
    for (int64_t i = 0; i < n; i += 2 * span) {
      for (int64_t j = i; j < i + span; ++j) {
        float* lo = cols + j * kGroup;
        float* hi = cols + (j + span) * kGroup;
        for (int64_t r = 0; r < kGroup; ++r) {
          const float u = lo[r];
          const float v = hi[r];
          lo[r] = u + v;
          hi[r] = u - v;
        }
      }
    }
  }
  for (int64_t r = 0; r < g; ++r) {
    for (int64_t j = 0; j < n; ++j) x[r * n + j] = cols[j * kGroup + r];
  }
}

}  // namespace

void hadamard_rotate(float* x, int64_t n_runs, int64_t n) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  alignas(64) float stack_cols[kStackRun * kGroup];
  std::vector<float> heap_cols(n > kStackRun ? static_cast<size_t>(n * kGroup) : 0);
  float* cols = n > kStackRun ? heap_cols.data() : stack_cols;
  for (int64_t r = 0; r < n_runs; r += kGroup) {
    rotate_group(x + r * n, std::min(kGroup, n_runs - r), n, scale, cols);
  }
}

const float* hadamard_rotated(const float* x, int64_t n, int64_t run, std::vector<float>& scratch) {
  scratch.assign(x, x + n);
  hadamard_rotate(scratch.data(), n / run, run);
  return scratch.data();
}

}  // namespace minfer::kernels
