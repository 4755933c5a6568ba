// KernelTable::delta_rule_chunk written once over a matrix-product function, the only part each
// ISA writes itself (ref_delta_net.cpp: plain loops; delta_net_impl.h: over a vector policy):
//
//   gemm(M, N, P, A, a_row, a_col, B, ldb, C, ldc):
//     C[m·ldc + j] = fma(A[m·a_row + p·a_col], B[p·ldb + j], C[m·ldc + j]) for p = 0 .. P − 1
//     in order, for every m < M, j < N.
//
// Everything else here is single float products, adds and expf, the same bits in every
// translation unit (the build turns off floating-point contraction). The layout follows
// Yang et al., "Gated Delta Networks" §3 (the WY / UT-transform form of chunk_gated_delta_rule
// in flash-linear-attention). Include only from a kernel translation unit: everything is in an
// anonymous namespace, as in delta_net_impl.h.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels::chunk {

namespace {

// Rows per band of the triangular products (a multiple of the SIMD row tile).
constexpr int64_t kBand = 16;

// dst[c·rows + r] = src[r·cols + c], in square tiles that stay in the L1 cache (row by row, the
// strided stores of a 128 × 128 state missed it: most of the chunk's time outside its products).
void transpose(const float* src, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(r0 + kTile, rows);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(c0 + kTile, cols);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
      }
    }
  }
}

// Precondition: c.n >= 1.
template <class Gemm>
void delta_rule_chunk(float* state, const DeltaChunk& c, Gemm gemm) {
  const int64_t n = c.n;
  const int64_t dk = c.dk;
  const int64_t dv = c.dv;
  float* w = c.work;
  float* cum = w;  // [n] G_t, the cumulative log decay
  w += n;
  float* decay = w;  // [n][n] D_ts = exp(G_t − G_s), s ≤ t
  w += n * n;
  float* q_gamma = w;  // [n][dk] γ_t q_t
  w += n * dk;
  float* k_write = w;  // [n][dk] −β_t γ_t k_t
  w += n * dk;
  float* k_tail = w;  // [n][dk] D_{n−1,t} k_t
  w += n * dk;
  float* k_cols = w;  // [dk][n] kᵀ
  w += dk * n;
  float* state_t = w;  // [dk][dv] S₀ᵀ
  w += dk * dv;
  float* kk = w;  // [n][n] k_t · k_s, then the substitution's −β_t D_ts (k_t · k_s), s < t
  w += n * n;
  float* qk = w;  // [n][n] q_t · k_s, then M
  w += n * n;
  float* delta = w;  // [n][dv] Δ

  float sum = 0.0f;
  for (int64_t t = 0; t < n; ++t) {
    sum = sum + c.g[t];
    cum[t] = sum;
  }
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s <= t; ++s) decay[t * n + s] = __builtin_expf(cum[t] - cum[s]);
  }
  for (int64_t t = 0; t < n; ++t) {
    const float gamma = __builtin_expf(cum[t]);
    const float write = -(c.beta[t] * gamma);
    const float tail = decay[(n - 1) * n + t];
    const float* q = c.q + t * dk;
    const float* k = c.k + t * dk;
    for (int64_t i = 0; i < dk; ++i) {
      q_gamma[t * dk + i] = q[i] * gamma;
      k_write[t * dk + i] = k[i] * write;
      k_tail[t * dk + i] = k[i] * tail;
    }
  }
  transpose(c.k, n, dk, k_cols);
  transpose(state, dv, dk, state_t);
  // out = Γ Q S₀ᵀ; Δ starts as β V − Γ β K S₀ᵀ.
  for (int64_t t = 0; t < n; ++t) {
    float* out = c.out + t * c.out_stride;
    for (int64_t j = 0; j < dv; ++j) out[j] = 0.0f;
    const float* v = c.v + t * c.v_stride;
    for (int64_t j = 0; j < dv; ++j) delta[t * dv + j] = v[j] * c.beta[t];
  }
  gemm(n, dv, dk, q_gamma, dk, int64_t{1}, state_t, dv, c.out, c.out_stride);
  gemm(n, dv, dk, k_write, dk, int64_t{1}, state_t, dv, delta, dv);
  // Only the lower triangle is kept: each band of rows takes the columns up to its last row.
  for (int64_t x = 0; x < 2 * n * n; ++x) kk[x] = 0.0f;  // kk and qk
  for (int64_t t0 = 0; t0 < n; t0 += kBand) {
    const int64_t rows = std::min(kBand, n - t0);
    const float* k_band = c.k + t0 * dk;
    const float* q_band = c.q + t0 * dk;
    gemm(rows, t0 + rows, dk, k_band, dk, int64_t{1}, k_cols, n, kk + t0 * n, n);
    gemm(rows, t0 + rows, dk, q_band, dk, int64_t{1}, k_cols, n, qk + t0 * n, n);
  }
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s < n; ++s) {
      const int64_t ts = t * n + s;
      kk[ts] = s < t ? -(c.beta[t] * decay[ts] * kk[ts]) : 0.0f;
      qk[ts] = s <= t ? decay[ts] * qk[ts] : 0.0f;
    }
  }
  // (I + A) Δ = R by forward substitution: row s takes the finished rows r < s.
  for (int64_t s = 1; s < n; ++s)
    gemm(int64_t{1}, dv, s, kk + s * n, n, int64_t{1}, delta, dv, delta + s * dv, dv);
  // out += M Δ, each band of rows over the Δ rows up to its last (M is 0 beyond).
  for (int64_t t0 = 0; t0 < n; t0 += kBand) {
    const int64_t rows = std::min(kBand, n - t0);
    gemm(rows, dv, t0 + rows, qk + t0 * n, n, int64_t{1}, delta, dv, c.out + t0 * c.out_stride,
         c.out_stride);
  }
  // S = γ_{n−1} S₀ + Δᵀ (D_{n−1} K): row j of S takes Δ's column j.
  const float gamma_last = __builtin_expf(cum[n - 1]);
  for (int64_t x = 0; x < dv * dk; ++x) state[x] = state[x] * gamma_last;
  gemm(dv, dk, n, delta, int64_t{1}, dv, k_tail, dk, state, dk);
}

}  // namespace

}  // namespace minfer::kernels::chunk
