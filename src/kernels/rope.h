// Rotary position embedding (RoFormer, Su et al. 2021, §3.4): pair i of a head is rotated by
// theta_i = pos · base^(-2i / n_rot) · freq_scale. Positions come from the batch, one per token
// (DESIGN.md invariant 1: no kernel keeps an n_past). Two refinements change the angles, both
// as ggml's rope computes them: Llama 3's per-pair frequency factors, and YaRN (Peng et al.
// 2023, "YaRN: Efficient Context Window Extension of Large Language Models", §3.2–3.4).
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels {

struct RopeConfig {
  int64_t n_rot = 0;  // rotated dims per head (even, <= head_dim, <= kMaxRopeDims)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling: 1 / the rope scaling factor
  RopeStyle style = RopeStyle::kNeox;
  // Llama 3's "llama3" rope scaling (rope_freqs.weight): pair i's frequency is divided by
  // freq_factors[i]. [n_rot / 2], or nullptr for none.
  const float* freq_factors = nullptr;
  // YaRN: pairs below yarn_low keep their unscaled angle (extrapolation), pairs above yarn_high
  // take the scaled one (interpolation), with a linear ramp between, mixed in by ext_factor
  // (0: off, plain linear scaling). yarn_low / yarn_high are pair indices from
  // set_yarn_corr_dims().
  float ext_factor = 0.0f;
  float yarn_low = 0.0f;
  float yarn_high = 0.0f;
  // The magnitude cos and sin are multiplied by; with YaRN on it is further multiplied by YaRN's
  // 1 + 0.1 · ln(1 / freq_scale).
  float attn_factor = 1.0f;
};

// YaRN's correction range (ggml_rope_yarn_corr_dims): the pair dims whose wavelength turns
// beta_fast (resp. beta_slow) times within n_ctx_orig positions, floor / ceil, clamped to
// [0, n_rot - 1]. Sets config.yarn_low and config.yarn_high from config.n_rot and freq_base.
void set_yarn_corr_dims(RopeConfig& config, int64_t n_ctx_orig, float beta_fast, float beta_slow);

// cos_sin[2][n_rot / 2]: the cosines then the sines of the n_rot / 2 angles at `pos`. Computed
// as llama.cpp's CPU backend does (ggml_rope_cache_init, rope_yarn), so angles agree with it to
// the bit: theta starts at (float) pos and is multiplied, in float, by theta_scale =
// powf(base, -2 / n_rot) once per pair; pair i's unscaled angle is theta / freq_factors[i], its
// angle freq_scale times that (mixed with the unscaled one on YaRN's ramp), and cosf / sinf of
// it times the magnitude. Every ISA uses these angles: the SIMD kernels only rotate.
void rope_angles(int64_t pos, const RopeConfig& config, float* cos_sin);

// Rotates q or k in place: x[n_tokens][n_head][head_dim], positions[n_tokens].
void apply_rope(const KernelTable& table, float* x, int64_t n_tokens, int64_t n_head,
                int64_t head_dim, const int32_t* positions, const RopeConfig& config);

// Moves rows that apply_rope rotated for position from_pos to position to_pos, in place (context
// shift: a kept key re-rotated after the positions before it were discarded). A rotation by
// angle(to_pos) - angle(from_pos) for every pair, worked out from the cosines and sines of both
// angles (cos(a - b) = cos a cos b + sin a sin b, sin(a - b) = sin a cos b - cos a sin b) so that
// each angle is the one apply_rope used, and divided by the magnitude squared (attn_factor and
// YaRN's scale were applied once already). x: [n_head][head_dim].
void rerotate(const KernelTable& table, float* x, int64_t n_head, int64_t head_dim,
              int64_t from_pos, int64_t to_pos, const RopeConfig& config);

}  // namespace minfer::kernels
