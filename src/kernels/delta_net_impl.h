// The gated delta net's kernels (kernel_table.h: ssm_conv, l2_norm, delta_rule_step,
// delta_rule_chunk's matrix products) written once
// over a float vector policy V (ops_impl.h says what V supplies), with the reference's lane sums:
// 16 lanes held in 16 / V::kLanes vectors, element i in lane i mod 16, folded in halves after a
// store. Fused multiply-adds and masked (zero-filled) tails give the reference's bits: a zero
// lane's fma leaves its sum as it was. Include only from an ISA's translation unit, after its
// policy (everything here is in an anonymous namespace, as in ops_impl.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/delta_chunk_impl.h"

namespace minfer::kernels::ops {

namespace {

template <class V>
struct LaneSums {
  static constexpr int kLanesTotal = 16;
  static constexpr int kRegs = kLanesTotal / V::kLanes;
  static_assert(kLanesTotal % V::kLanes == 0);

  typename V::F r[kRegs];

  LaneSums() {
    for (auto& v : r) v = V::zero();
  }
  // The register of the vector starting at element i (a multiple of kLanes).
  static int reg(int64_t i) { return static_cast<int>((i / V::kLanes) % kRegs); }
  float fold() const {
    alignas(64) float lanes[kLanesTotal];
    for (int j = 0; j < kRegs; ++j) V::store(lanes + j * V::kLanes, r[j]);
    for (int width = kLanesTotal / 2; width >= 1; width /= 2) {
      for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
    }
    return lanes[0];
  }
};

// m elements from p: a whole vector, or the tail's zero-filled one.
template <class V>
typename V::F load_n(const float* p, int64_t m) {
  return m == V::kLanes ? V::load(p) : V::load_partial(p, m);
}
template <class V>
void store_n(float* p, typename V::F v, int64_t m) {
  if (m == V::kLanes) {
    V::store(p, v);
  } else {
    V::store_partial(p, v, m);
  }
}

template <class V>
float lane_dot(const float* a, const float* b, int64_t n) {
  LaneSums<V> acc;
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t m = std::min<int64_t>(V::kLanes, n - i);
    typename V::F& r = acc.r[LaneSums<V>::reg(i)];
    r = V::fmadd(load_n<V>(a + i, m), load_n<V>(b + i, m), r);
  }
  return acc.fold();
}

template <class V>
void ssm_conv(const float* const* rows, const float* taps, int64_t d_conv, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t m = std::min<int64_t>(V::kLanes, n - i);
    typename V::F sum = V::zero();
    for (int64_t k = 0; k < d_conv; ++k) {
      sum = V::fmadd(load_n<V>(taps + k * n + i, m), load_n<V>(rows[k] + i, m), sum);
    }
    store_n<V>(y + i, sum, m);
  }
}

template <class V>
void l2_norm(const float* x, float eps, int64_t n, float* y) {
  const float norm = __builtin_sqrtf(lane_dot<V>(x, x, n));
  const typename V::F scale = V::set1(1.0f / (norm > eps ? norm : eps));
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t m = std::min<int64_t>(V::kLanes, n - i);
    store_n<V>(y + i, V::mul(load_n<V>(x + i, m), scale), m);
  }
}

template <class V>
void delta_rule_step(float* state, const float* q, const float* k, const float* v, float decay,
                     float beta, int64_t dk, int64_t dv, float* out) {
  using F = typename V::F;
  const F vdecay = V::set1(decay);
  for (int64_t j = 0; j < dv; ++j) {
    float* s = state + j * dk;
    LaneSums<V> sk;  // S_j · k after the decay
    for (int64_t i = 0; i < dk; i += V::kLanes) {
      const int64_t m = std::min<int64_t>(V::kLanes, dk - i);
      const F sv = V::mul(load_n<V>(s + i, m), vdecay);
      store_n<V>(s + i, sv, m);
      F& r = sk.r[LaneSums<V>::reg(i)];
      r = V::fmadd(sv, load_n<V>(k + i, m), r);
    }
    const F delta = V::set1((v[j] - sk.fold()) * beta);
    LaneSums<V> sq;  // S_j · q after the update
    for (int64_t i = 0; i < dk; i += V::kLanes) {
      const int64_t m = std::min<int64_t>(V::kLanes, dk - i);
      const F sv = V::fmadd(load_n<V>(k + i, m), delta, load_n<V>(s + i, m));
      store_n<V>(s + i, sv, m);
      F& r = sq.r[LaneSums<V>::reg(i)];
      r = V::fmadd(sv, load_n<V>(q + i, m), r);
    }
    out[j] = sq.fold();
  }
}

// delta_chunk_impl.h's matrix product over V: R rows of C by NV vectors of columns from j0 held
// in registers across the whole p loop, so each element's fused multiply-adds run in order of p
// as in the reference. kFull: NV whole vectors; else one vector's first w lanes (zero-filled).
struct GemmOperands {
  int64_t p_len;
  const float* a;
  int64_t a_row;
  int64_t a_col;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
};

template <class V, int R, int NV, bool kFull>
void gemm_block(const GemmOperands& g, int64_t m0, int64_t j0, int64_t w) {
  using F = typename V::F;
  auto load = [w](const float* p) { return kFull ? V::load(p) : V::load_partial(p, w); };
  F acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = load(g.c + (m0 + r) * g.ldc + j0 + v * V::kLanes);
  }
  for (int64_t p = 0; p < g.p_len; ++p) {
    F b[NV];
    for (int v = 0; v < NV; ++v) b[v] = load(g.b + p * g.ldb + j0 + v * V::kLanes);
    for (int r = 0; r < R; ++r) {
      const F a = V::set1(g.a[(m0 + r) * g.a_row + p * g.a_col]);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(a, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      float* dst = g.c + (m0 + r) * g.ldc + j0 + v * V::kLanes;
      if (kFull) {
        V::store(dst, acc[r][v]);
      } else {
        V::store_partial(dst, acc[r][v], w);
      }
    }
  }
}

// Rows m0 .. m0 + R − 1 of C over the column block [j0, j0 + w): whole tiles of R rows, then
// single rows.
template <class V, int R, int NV, bool kFull>
void gemm_column_block(const GemmOperands& g, int64_t m_rows, int64_t j0, int64_t w) {
  int64_t m = 0;
  for (; m + R <= m_rows; m += R) gemm_block<V, R, NV, kFull>(g, m, j0, w);
  for (; m < m_rows; ++m) gemm_block<V, 1, NV, kFull>(g, m, j0, w);
}

// Column blocks outermost, so that the block's panel of B stays in the L1 cache while every
// row tile runs over it. AVX-512 (32 registers) holds 8 × 2 accumulators, the others 4 × 2.
template <class V>
void gemm(int64_t m_rows, int64_t n_cols, int64_t p_len, const float* a, int64_t a_row,
          int64_t a_col, const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int kRows = V::kLanes >= 16 ? 8 : 4;
  const GemmOperands g{p_len, a, a_row, a_col, b, ldb, c, ldc};
  int64_t j = 0;
  for (; j + 2 * V::kLanes <= n_cols; j += 2 * V::kLanes) {
    gemm_column_block<V, kRows, 2, true>(g, m_rows, j, 0);
  }
  for (; j + V::kLanes <= n_cols; j += V::kLanes) {
    gemm_column_block<V, kRows, 1, true>(g, m_rows, j, 0);
  }
  if (j < n_cols) gemm_column_block<V, kRows, 1, false>(g, m_rows, j, n_cols - j);
}

template <class V>
void delta_rule_chunk(float* state, const DeltaChunk& c) {
  chunk::delta_rule_chunk(state, c, gemm<V>);
}

}  // namespace

}  // namespace minfer::kernels::ops

// Defines the table's delta-net functions (ops_decl.h) in the ISA's namespace on policy V.
#define MINFER_DEFINE_DELTA_NET_OPS(V)                                                            \
  void ssm_conv(const float* const* rows, const float* taps, int64_t d_conv, int64_t n,           \
                float* y) {                                                                       \
    ::minfer::kernels::ops::ssm_conv<V>(rows, taps, d_conv, n, y);                                \
  }                                                                                               \
  void l2_norm(const float* x, float eps, int64_t n, float* y) {                                  \
    ::minfer::kernels::ops::l2_norm<V>(x, eps, n, y);                                             \
  }                                                                                               \
  void delta_rule_step(float* state, const float* q, const float* k, const float* v, float decay, \
                       float beta, int64_t dk, int64_t dv, float* out) {                          \
    ::minfer::kernels::ops::delta_rule_step<V>(state, q, k, v, decay, beta, dk, dv, out);         \
  }                                                                                               \
  void delta_rule_chunk(float* state, const DeltaChunk& c) {                                      \
    ::minfer::kernels::ops::delta_rule_chunk<V>(state, c);                                        \
  }
