// The Walsh-Hadamard rotation llama.cpp applies around quantized KV cells (llama-kv-cache.cpp
// attn_rot_k / attn_rot_v, since its PR #21038): with q8_0 keys it stores H·k and scores H·q
// against them, with q8_0 values it stores H·v and turns attention's output back with H, so that
// the rounding of the cells falls on vectors whose energy is spread over the run. H_n is the
// orthonormal Sylvester Hadamard matrix (H_1 = 1, H_2n = [[H_n, H_n], [H_n, -H_n]] / sqrt 2),
// symmetric, and H_n H_n = I up to rounding.
#pragma once

#include <cstdint>
#include <vector>

namespace minfer::kernels {

// Each of n_runs consecutive runs of n floats (n a power of two) becomes H_n times itself, in
// place, computed as ggml's CPU backend computes it (ggml_compute_forward_fwht_f32): every
// element times 1 / sqrtf(n) first, then the butterflies (u, v) -> (u + v, u - v) over spans 1,
// 2, 4, ..., n / 2 in turn. Plain C++: the same bits on every kernel table.
void hadamard_rotate(float* x, int64_t n_runs, int64_t n);

// x's first n floats copied into `scratch` and rotated there in runs of `run` (hadamard_rotate);
// returns scratch's data. For rows that must stay as they are (a query, a stored key).
const float* hadamard_rotated(const float* x, int64_t n, int64_t run, std::vector<float>& scratch);

}  // namespace minfer::kernels
