// The per-sub-block scale searches behind the K-quant reference quantizers (internal to
// src/quant). They follow llama.cpp's make_qx_quants (rmse_type 1, no importance weights),
// make_q3_quants (do_rmse) and make_qkx2_quants, operation for operation, because the chosen
// scales decide every byte of the result.
#pragma once

#include <bit>
#include <cstdint>

namespace minfer::kquant {

// Below this magnitude a group counts as all zero (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves the rounded integer
// in the low mantissa bits (ggml's nearest_int). Independent of the FP rounding-mode flag only
// in that it assumes the default round-to-nearest-even, which minfer never changes.
inline int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

// Symmetric signed quantization of x[0..n) to L[i] = l + nmax, l in [-nmax, nmax - 1], with
// the scale minimizing sum x^2 (x - scale l)^2 over 19 trial inverse scales around
// -nmax / signed_max. Returns the scale (0 for an all-zero group, with L all 0).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L);

// As make_qx_quants for Q3_K: start from -nmax / signed_max, then up to 5 rounds of
// coordinate descent on each L[i] under the x^2-weighted error. L[i] in [0, 2 nmax).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);

// Asymmetric quantization x ~ scale * L[i] - the_min, L[i] in [0, nmax], min <= 0: the
// (scale, min) pair minimizing the weighted error (|err| when use_mad, err^2 otherwise) over
// nstep + 1 trial inverse scales (rmin + rdelta * is + nmax) / (max - min). `aux` is scratch of
// n bytes. Returns the scale; *the_min receives -min (>= 0).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* aux, float rmin, float rdelta, int nstep,
                       bool use_mad);

}  // namespace minfer::kquant
