#include "kernels/rope.h"

#include <cmath>

#include "core/check.h"

namespace minfer::kernels {

void rope_angles(int64_t pos, const RopeConfig& config, float* cos_sin) {
  const int64_t half = config.n_rot / 2;
  const float theta_scale = std::pow(config.freq_base, -2.0f / static_cast<float>(config.n_rot));
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = config.freq_scale * theta;
    cos_sin[i] = std::cos(angle);
    cos_sin[half + i] = std::sin(angle);
    theta *= theta_scale;
  }
}

void apply_rope(const KernelTable& table, float* x, int64_t n_tokens, int64_t n_head,
                int64_t head_dim, const int32_t* positions, const RopeConfig& config) {
  MINFER_CHECK(config.n_rot > 0 && config.n_rot % 2 == 0 && config.n_rot <= head_dim &&
                   config.n_rot <= kMaxRopeDims,
               "rope: n_rot must be even, positive, <= head_dim and <= kMaxRopeDims");
  float cos_sin[kMaxRopeDims];  // [2][n_rot / 2]
  for (int64_t t = 0; t < n_tokens; ++t) {
    rope_angles(positions[t], config, cos_sin);
    table.rope(x + t * n_head * head_dim, n_head, head_dim, config.n_rot, cos_sin, config.style);
  }
}

}  // namespace minfer::kernels
