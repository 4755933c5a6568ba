// Rotary position embedding (RoFormer, Su et al. 2021, §3.4): pair i of a head is rotated by
// theta_i = pos · base^(-2i / n_rot) · freq_scale. Positions come from the batch, one per token
// (DESIGN.md invariant 1: no kernel keeps an n_past).
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels {

struct RopeConfig {
  int64_t n_rot = 0;  // rotated dims per head (even, <= head_dim, <= kMaxRopeDims)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling: 1 / the rope scaling factor
  RopeStyle style = RopeStyle::kNeox;
};

// cos_sin[2][n_rot / 2]: the cosines then the sines of the n_rot / 2 angles at `pos`. Computed
// as llama.cpp's CPU backend does, so angles agree with it to the bit: theta starts at (float)
// pos and is multiplied, in float, by theta_scale = powf(base, -2 / n_rot) once per pair;
// each angle is freq_scale · theta, and cosf / sinf of it.
void rope_angles(int64_t pos, const RopeConfig& config, float* cos_sin);

// Rotates q or k in place: x[n_tokens][n_head][head_dim], positions[n_tokens].
void apply_rope(const KernelTable& table, float* x, int64_t n_tokens, int64_t n_head,
                int64_t head_dim, const int32_t* positions, const RopeConfig& config);

}  // namespace minfer::kernels
