#include "kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace minfer::kernels {

namespace {

// The pair dim whose wavelength turns n_turns times within n_ctx_orig positions (YaRN §3.2,
// solved for the dim; ggml_rope_yarn_corr_dim, in its float operation order).
float yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, float n_turns, float base) {
  const float turns_len = n_turns * 2.0f * std::numbers::pi_v<float>;
  return static_cast<float>(n_rot) * std::log(static_cast<float>(n_ctx_orig) / turns_len) /
         (2.0f * std::log(base));
}

// 1 at and below pair `low`, 0 at and above `high`, linear between (ggml's rope_yarn_ramp).
float yarn_ramp(float low, float high, int64_t pair) {
  const float y = (static_cast<float>(pair) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

void check_rope_dims(const RopeConfig& config, int64_t head_dim) {
  MINFER_CHECK(config.n_rot > 0 && config.n_rot % 2 == 0 && config.n_rot <= head_dim &&
                   config.n_rot <= kMaxRopeDims,
               "rope: n_rot must be even, positive, <= head_dim and <= kMaxRopeDims");
}

}  // namespace

void set_yarn_corr_dims(RopeConfig& config, int64_t n_ctx_orig, float beta_fast, float beta_slow) {
  const float start =
      std::floor(yarn_corr_dim(config.n_rot, n_ctx_orig, beta_fast, config.freq_base));
  const float end = std::ceil(yarn_corr_dim(config.n_rot, n_ctx_orig, beta_slow, config.freq_base));
  config.yarn_low = std::max(0.0f, start);
  config.yarn_high = std::min(static_cast<float>(config.n_rot - 1), end);
}

void rope_angles(int64_t pos, const RopeConfig& config, float* cos_sin) {
  const int64_t half = config.n_rot / 2;
  const float theta_scale = std::pow(config.freq_base, -2.0f / static_cast<float>(config.n_rot));
  const bool yarn = config.ext_factor != 0.0f;
  float mscale = config.attn_factor;
  // YaRN's two blends as llama.cpp's x86 build compiles rope_yarn (GCC contracts a · b + c into
  // one fused multiply-add): the first product fused with the sum. gpt-oss's q and k rows left
  // llama.cpp's at row 7 without it.
  if (yarn) mscale *= std::fma(0.1f, std::log(1.0f / config.freq_scale), 1.0f);
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float extrapolated =
        config.freq_factors != nullptr ? theta / config.freq_factors[i] : theta;
    const float interpolated = config.freq_scale * extrapolated;
    float angle = interpolated;
    if (yarn) {
      const float mix = yarn_ramp(config.yarn_low, config.yarn_high, i) * config.ext_factor;
      angle = std::fma(interpolated, 1.0f - mix, extrapolated * mix);
    }
    cos_sin[i] = std::cos(angle) * mscale;
    cos_sin[half + i] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

void rerotate(const KernelTable& table, float* x, int64_t n_head, int64_t head_dim,
              int64_t from_pos, int64_t to_pos, const RopeConfig& config) {
  check_rope_dims(config, head_dim);
  const int64_t half = config.n_rot / 2;
  float from[kMaxRopeDims];   // [2][n_rot / 2]
  float to[kMaxRopeDims];     // [2][n_rot / 2]
  float delta[kMaxRopeDims];  // [2][n_rot / 2]
  rope_angles(from_pos, config, from);
  rope_angles(to_pos, config, to);
  for (int64_t i = 0; i < half; ++i) {
    // Magnitude m: from and to hold m·cos and m·sin, so the products carry m² once.
    const double m2 = static_cast<double>(from[i]) * from[i] +
                      static_cast<double>(from[half + i]) * from[half + i];
    const double c =
        static_cast<double>(to[i]) * from[i] + static_cast<double>(to[half + i]) * from[half + i];
    const double s =
        static_cast<double>(to[half + i]) * from[i] - static_cast<double>(to[i]) * from[half + i];
    delta[i] = static_cast<float>(c / m2);
    delta[half + i] = static_cast<float>(s / m2);
  }
  table.rope(x, n_head, head_dim, config.n_rot, delta, config.style);
}

void apply_rope(const KernelTable& table, float* x, int64_t n_tokens, int64_t n_head,
                int64_t head_dim, const int32_t* positions, const RopeConfig& config) {
  check_rope_dims(config, head_dim);
  float cos_sin[kMaxRopeDims];  // [2][n_rot / 2]
  for (int64_t t = 0; t < n_tokens; ++t) {
    rope_angles(positions[t], config, cos_sin);
    table.rope(x + t * n_head * head_dim, n_head, head_dim, config.n_rot, cos_sin, config.style);
  }
}

}  // namespace minfer::kernels
