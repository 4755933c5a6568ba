// The element-wise, attention-loop and conversion kernels of every SIMD table (ops_decl.h),
// written once over a float vector policy V (one per ISA: avx2/avx2_ops.cpp,
// avx512/avx512_ops.cpp, arm64/neon_ops.cpp). Include only from that ISA's translation unit,
// after its policy: everything here sits in an anonymous namespace so that each ISA's TU keeps
// its own copies (an inline function with external linkage compiled with AVX-512 flags could be
// chosen by the linker for the AVX2 table). MINFER_DEFINE_OPS(V) then defines the table's
// functions in the ISA's namespace.
//
// Tails run the body's arithmetic on a partial vector (V::load_partial / store_partial: masked
// loads on x86, a zero-padded copy on NEON), so a SIMD kernel's result never depends on where an
// element falls. Where an ISA's arithmetic deliberately differs, the policy says so:
//   V::exp, V::silu_exp   the exponentials (AVX-512's SiLU is llama.cpp's ggml_v_expf, and
//                         kSiluTailLibm sends the elements after its last whole vector to expf,
//                         as ggml_vec_silu_f32 does);
//   V::axpy, V::rotate,   fused on x86, the reference's separate multiply and add on NEON;
//   V::rotate_pairs
//   V::hsum, V::hmax      each ISA's fixed reduction order;
//   V::kRowLoops          how attention's row loops hold their operands (kRowLoopsPlain: the
//                         reference's pair by pair; the x86 plans below).
//
// V supplies: F (kLanes floats), D (kLanes / 2 doubles), B (a lane predicate), M (a tail mask,
// x86 only); zero, set1, load, store, load_partial, store_partial, tail_lanes, select, ge, le,
// lt, add, sub, mul, div, fmadd (fused a·b + c), fnmadd (fused c - a·b), min and max (the ISA's
// instruction, NaNs as it treats them), round (to nearest even), floor, exp2i (2^n for an
// integral n that gives a normal float), max_keep (x > m ? x : m), hmax, hsum, exp, silu_exp,
// axpy, rotate, dup_pairs, rotate_pairs, gelu_lookup, zero_pd, add_pd_halves, sum_pd, from_f16,
// to_f16, from_bf16, to_bf16; and for the x86 row loops first_lanes, load / store with an M,
// any, hsum_rows, load_f16 and load_q8.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/gelu_table.h"
#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::ops {

// How a policy's attention row loops (dot_rows_*, weighted_sum_*) keep their operands.
enum class RowLoops {
  kPlain,         // pair by pair: dot_f32 / axpy_f32 per (x, row) (NEON)
  kXFromCache,    // 16 registers: the x's read from L1 by the multiply-adds (AVX2)
  kXInRegisters,  // 32 registers: the x's of the common head sizes held in registers (AVX-512)
};

namespace {

// e^x, lane by lane, within ~2 ulp of expf (every table's softmax; SiLU on AVX2 and NEON):
// x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor polynomial (truncation error
// < 1e-8 relative), 2^n applied in two halves so that results down to the subnormal range come
// out right. x below -103.5 (where expf is at most the smallest subnormal) gives exactly 0, so
// exp(-inf) = 0; x above 88.73 gives +inf.
template <class V>
typename V::F exp_taylor(typename V::F x) {
  using F = typename V::F;
  const F lo_limit = V::set1(-103.5f);
  const F xc = V::min(V::max(x, lo_limit), V::set1(89.0f));
  const F n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  // ln2 split so that n * kLn2Hi is exact for |n| < 2^9.
  F r = V::fnmadd(n, V::set1(0.693145751953125f), xc);
  r = V::fnmadd(n, V::set1(1.428606765330187e-06f), r);
  static constexpr float kCoef[] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f,
                                    0.5f,          1.0f,          1.0f};
  F p = V::set1(1.0f / 5040.0f);
  for (float c : kCoef) p = V::fmadd(p, r, V::set1(c));
  // n = n1 + n2 with n1 = floor(n / 2): each of 2^n1 and 2^n2 is a normal float.
  const F n1 = V::floor(V::mul(n, V::set1(0.5f)));
  const F result = V::mul(V::mul(p, V::exp2i(n1)), V::exp2i(V::sub(n, n1)));
  return V::select(V::lt(x, lo_limit), V::zero(), result);
}

// ---- element-wise maps: whole vectors, then one partial vector ----

template <class V, typename Op>
void map1(const float* x, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, op(V::load(x + i)));
  if (i < n) V::store_partial(y + i, op(V::load_partial(x + i, n - i)), n - i);
}

template <class V, typename Op>
void map2(const float* a, const float* b, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, op(V::load(a + i), V::load(b + i)));
  if (i < n) {
    V::store_partial(y + i, op(V::load_partial(a + i, n - i), V::load_partial(b + i, n - i)),
                     n - i);
  }
}

template <class V>
void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  // Each square rounded to float, as ggml (ref rms_norm), summed in double.
  typename V::D acc0 = V::zero_pd(), acc1 = V::zero_pd();
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const typename V::F v = V::load(x + i);
    V::add_pd_halves(V::mul(v, v), acc0, acc1);
  }
  if (i < n) {
    const typename V::F v = V::load_partial(x + i, n - i);
    V::add_pd_halves(V::mul(v, v), acc0, acc1);
  }
  const double sum = V::sum_pd(acc0, acc1);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const typename V::F scale = V::set1(1.0f / __builtin_sqrtf(mean + eps));
  map2<V>(x, w, n, y,
          [scale](typename V::F xv, typename V::F wv) { return V::mul(V::mul(xv, scale), wv); });
}

template <class V>
double exp_sum(const float* x, float shift, int64_t n, float* y) {
  using F = typename V::F;
  constexpr int64_t kL = V::kLanes;
  const F vs = V::set1(shift);
  typename V::D acc0 = V::zero_pd(), acc1 = V::zero_pd();
  int64_t i = 0;
  // Four vectors a step, summed in the same order: exp is a long chain of dependent
  // operations, and one vector at a time left the core waiting on it.
  for (; i + 4 * kL <= n; i += 4 * kL) {
    F e[4];
    for (int k = 0; k < 4; ++k) e[k] = V::exp(V::sub(V::load(x + i + kL * k), vs));
    for (int k = 0; k < 4; ++k) {
      V::store(y + i + kL * k, e[k]);
      V::add_pd_halves(e[k], acc0, acc1);
    }
  }
  for (; i + kL <= n; i += kL) {
    const F e = V::exp(V::sub(V::load(x + i), vs));
    V::store(y + i, e);
    V::add_pd_halves(e, acc0, acc1);
  }
  if (i < n) {
    // The padding lanes give exp(0 - shift): zero them before summing.
    const F e = V::select(V::tail_lanes(n - i), V::exp(V::sub(V::load_partial(x + i, n - i), vs)),
                          V::zero());
    V::store_partial(y + i, e, n - i);
    V::add_pd_halves(e, acc0, acc1);
  }
  return V::sum_pd(acc0, acc1);
}

template <class V>
float max_f32(const float* x, int64_t n, float init) {
  // max_keep(x, m) is x > m ? x : m, lane by lane (NaNs of x pass); lanes past n keep m.
  typename V::F m = V::set1(init);
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) m = V::max_keep(V::load(x + i), m);
  if (i < n) {
    m = V::select(V::tail_lanes(n - i), V::max_keep(V::load_partial(x + i, n - i), m), m);
  }
  return V::hmax(m);
}

template <class V>
void softmax(const float* x, int64_t n, float* y) {
  const float max = max_f32<V>(x, n, -__builtin_inff());
  const typename V::F inv = V::set1(static_cast<float>(1.0 / exp_sum<V>(x, max, n, y)));
  map1<V>(y, n, y, [inv](typename V::F v) { return V::mul(v, inv); });
}

template <class V>
typename V::F silu_v(typename V::F x) {
  return V::div(x, V::add(V::set1(1.0f), V::silu_exp(V::sub(V::zero(), x))));
}

// The elements map1 / map2 give to a whole vector (all, unless the policy sends the tail to
// libm's expf, as llama.cpp's SiLU does).
template <class V>
int64_t silu_vector_part(int64_t n) {
  return V::kSiluTailLibm ? n - n % V::kLanes : n;
}

template <class V>
void silu(const float* x, int64_t n, float* y) {
  const int64_t whole = silu_vector_part<V>(n);
  map1<V>(x, whole, y, silu_v<V>);
  for (int64_t i = whole; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

template <class V>
void swiglu(const float* gate, const float* up, int64_t n, float* y) {
  const int64_t whole = silu_vector_part<V>(n);
  map2<V>(gate, up, whole, y,
          [](typename V::F g, typename V::F u) { return V::mul(silu_v<V>(g), u); });
  for (int64_t i = whole; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

template <class V>
void geglu(const float* gate, const float* up, int64_t n, float* y) {
  using F = typename V::F;
  const float* table = gelu_f16_table();
  const F low = V::set1(kGeluTableLow);
  const F high = V::set1(kGeluTableHigh);
  map2<V>(gate, up, n, y, [=](F g, F u) {
    // The f16 bits of g (round to nearest even, as fp32_to_fp16) index the table.
    F v = V::gelu_lookup(g, table);
    v = V::select(V::ge(g, high), g, v);
    v = V::select(V::le(g, low), V::zero(), v);
    return V::mul(v, u);
  });
}

template <class V>
void add(const float* a, const float* b, int64_t n, float* y) {
  map2<V>(a, b, n, y, [](typename V::F u, typename V::F v) { return V::add(u, v); });
}

template <class V>
void mul(const float* a, const float* b, int64_t n, float* y) {
  map2<V>(a, b, n, y, [](typename V::F u, typename V::F v) { return V::mul(u, v); });
}

template <class V>
void scale(const float* x, float s, int64_t n, float* y) {
  const typename V::F vs = V::set1(s);
  map1<V>(x, n, y, [vs](typename V::F v) { return V::mul(v, vs); });
}

template <class V>
void axpy_f32(float a, const float* x, int64_t n, float* y) {
  const typename V::F va = V::set1(a);
  map2<V>(x, y, n, y, [va](typename V::F xv, typename V::F yv) { return V::axpy(va, xv, yv); });
}

// ---- RoPE ----

// NeoX pairs (i, i + half): V::rotate on kLanes pairs at a time.
template <class V>
void rope_neox(float* head, int64_t half, const float* cosv, const float* sinv) {
  for (int64_t i = 0; i < half; i += V::kLanes) {
    const int64_t left = half - i;
    if (left >= V::kLanes) {
      typename V::F x0 = V::load(head + i), x1 = V::load(head + half + i);
      V::rotate(x0, x1, V::load(cosv + i), V::load(sinv + i));
      V::store(head + i, x0);
      V::store(head + half + i, x1);
    } else {
      typename V::F x0 = V::load_partial(head + i, left);
      typename V::F x1 = V::load_partial(head + half + i, left);
      V::rotate(x0, x1, V::load_partial(cosv + i, left), V::load_partial(sinv + i, left));
      V::store_partial(head + i, x0, left);
      V::store_partial(head + half + i, x1, left);
    }
  }
}

// Adjacent pairs (2i, 2i + 1): kLanes / 2 pairs a vector, each angle in both lanes of its pair.
template <class V>
void rope_adjacent(float* head, int64_t half, const float* cosv, const float* sinv) {
  constexpr int64_t kPairs = V::kLanes / 2;
  for (int64_t i = 0; i < half; i += kPairs) {
    const int64_t pairs = std::min(kPairs, half - i);
    const typename V::F c = V::dup_pairs(cosv + i, pairs);
    const typename V::F s = V::dup_pairs(sinv + i, pairs);
    float* p = head + 2 * i;
    if (pairs == kPairs) {
      V::store(p, V::rotate_pairs(V::load(p), c, s));
    } else {
      V::store_partial(p, V::rotate_pairs(V::load_partial(p, 2 * pairs), c, s), 2 * pairs);
    }
  }
}

template <class V>
void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    if (style == RopeStyle::kNeox) {
      rope_neox<V>(x + h * head_dim, half, cos_sin, cos_sin + half);
    } else {
      rope_adjacent<V>(x + h * head_dim, half, cos_sin, cos_sin + half);
    }
  }
}

// ---- dot products ----

// Two accumulators over a · b, added: dot_f32 is their V::hsum.
template <class V>
typename V::F dot_lanes(const float* a, const float* b, int64_t n) {
  constexpr int64_t kL = V::kLanes;
  typename V::F acc0 = V::zero(), acc1 = V::zero();
  int64_t i = 0;
  for (; i + 2 * kL <= n; i += 2 * kL) {
    acc0 = V::fmadd(V::load(a + i), V::load(b + i), acc0);
    acc1 = V::fmadd(V::load(a + i + kL), V::load(b + i + kL), acc1);
  }
  for (; i < n; i += kL) {
    const int64_t left = n - i;
    acc0 = left >= kL ? V::fmadd(V::load(a + i), V::load(b + i), acc0)
                      : V::fmadd(V::load_partial(a + i, left), V::load_partial(b + i, left), acc0);
  }
  return V::add(acc0, acc1);
}

template <class V>
float dot_f32(const float* a, const float* b, int64_t n) {
  return V::hsum(dot_lanes<V>(a, b, n));
}

// ---- conversions: whole vectors, then the tail through a zero-padded copy ----

template <class V, typename From>
void to_f32(const uint16_t* x, int64_t n, float* y, From from) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, from(x + i));
  if (i < n) {
    uint16_t in[V::kLanes] = {};
    std::memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    V::store_partial(y + i, from(in), n - i);
  }
}

template <class V, typename To>
void from_f32(const float* x, int64_t n, uint16_t* y, To to) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) to(y + i, V::load(x + i));
  if (i < n) {
    uint16_t out[V::kLanes];
    to(out, V::load_partial(x + i, n - i));
    std::memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

// ---- attention's row loops (kernel_table.h: dot_rows_*, weighted_sum_*) ----

// Rows of f32 floats, f16 cells or q8_0 cells, loaded kLanes floats at a time (converted
// exactly). A masked load reads the lanes of m; the f16 and q8_0 rows are read in whole vectors
// only where the policy has no masked 16-bit load (its callers keep to whole vectors there).
template <class V>
struct F32Loader {
  F32Rows rows;
  void prefetch(int64_t /*j*/, int64_t /*n*/) const {}
  typename V::F load(int64_t j, int64_t off) const { return V::load(rows.row(j) + off); }
  typename V::F load(int64_t j, int64_t off, typename V::M m) const {
    return V::load(rows.row(j) + off, m);
  }
};

// Asks for `bytes` of a row that the caller reads next, a line at a time (no arithmetic).
inline void prefetch_row(const void* row, int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) {
    __builtin_prefetch(static_cast<const char*>(row) + off, 0, 3);
  }
}

// Rows of 16-bit cells, f16 or (kBF16) bf16, converted by the policy's loads: exact either way,
// as cells_to_f32 gives.
template <class V, bool kBF16>
struct Cells16Loader {
  F16Rows rows;
  // Asks for row j of rows.prefetch (n cells), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch != nullptr) prefetch_row(rows.prefetch + j * rows.stride, n * 2);
  }
  typename V::F load(int64_t j, int64_t off) const {
    if constexpr (kBF16) return V::from_bf16(rows.row(j) + off);
    return V::load_f16(rows.row(j) + off);
  }
  typename V::F load(int64_t j, int64_t off, typename V::M m) const {
    if constexpr (kBF16) return V::load_bf16(rows.row(j) + off, m);
    return V::load_f16(rows.row(j) + off, m);
  }
};

template <class V>
using F16Loader = Cells16Loader<V, false>;
template <class V>
using BF16Loader = Cells16Loader<V, true>;

// n a multiple of 32, so a masked load is of whole vectors or none: d · q, exact in f32, as
// cells_to_f32 gives.
template <class V>
struct Q8Loader {
  Q8Rows rows;
  // Asks for row j of rows.prefetch (n values), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch != nullptr) {
      prefetch_row(rows.prefetch + j * rows.stride,
                   n / 32 * static_cast<int64_t>(sizeof(BlockQ8_0)));
    }
  }
  typename V::F load(int64_t j, int64_t off) const {
    return V::load_q8(reinterpret_cast<const BlockQ8_0*>(rows.row(j))[off / 32], off % 32);
  }
  typename V::F load(int64_t j, int64_t off, typename V::M m) const {
    return V::any(m) ? load(j, off) : V::zero();
  }
};

// Rows [begin, end) of n values each, converted to f32 ([end - begin, n]).
template <class V, typename Loader>
std::vector<float> loaded_rows(Loader rows, int64_t begin, int64_t end, int64_t n) {
  std::vector<float> out(static_cast<size_t>((end - begin) * n));
  for (int64_t j = begin; j < end; ++j) {
    for (int64_t off = 0; off < n; off += V::kLanes) {
      V::store(out.data() + (j - begin) * n + off, rows.load(j, off));
    }
  }
  return out;
}

// One x against kLanes rows at a time: their lanes reduced together (V::hsum_rows, each row in
// V::hsum's order), then scaled.
template <class V>
void dot_rows_one(F32Rows rows, const float* x, int64_t n, float scale, float* out) {
  const typename V::F vscale = V::set1(scale);
  int64_t j = 0;
  for (; j + V::kLanes <= rows.n; j += V::kLanes) {
    typename V::F v[V::kLanes];
    for (int r = 0; r < V::kLanes; ++r) v[r] = dot_lanes<V>(rows.row(j + r), x, n);
    V::store(out + j, V::mul(V::hsum_rows(v), vscale));
  }
  for (; j < rows.n; ++j) out[j] = dot_f32<V>(rows.row(j), x, n) * scale;
}

// kX x's (rows of x_stride floats) against kLanes rows at a time (n_rows a multiple of kLanes),
// n a multiple of 2 kLanes: each row's vectors are loaded (and converted) once for all of them,
// the x's read from L1 by the multiply-adds (2 kX accumulators and the row's two vectors fill
// AVX2's 16 registers at kX = 7), and each pair runs dot_lanes' operations in its order.
template <class V, int kX, typename Rows>
void dot_rows_cached(Rows rows, int64_t n_rows, const float* x, int64_t x_stride, int64_t n,
                     float scale, float* out, int64_t out_stride) {
  using F = typename V::F;
  constexpr int kL = V::kLanes;
  const F vscale = V::set1(scale);
  for (int64_t j = 0; j + kL <= n_rows; j += kL) {
    F v[kX][kL];  // [x][row] dot_lanes' two accumulators, added
    for (int r = 0; r < kL; ++r) {
      rows.prefetch(j + r, n);
      F a0[kX], a1[kX];
      for (int k = 0; k < kX; ++k) a0[k] = a1[k] = V::zero();
      for (int64_t i = 0; i < n; i += 2 * kL) {
        const F r0 = rows.load(j + r, i);
        const F r1 = rows.load(j + r, i + kL);
        for (int k = 0; k < kX; ++k) {
          a0[k] = V::fmadd(r0, V::load(x + k * x_stride + i), a0[k]);
          a1[k] = V::fmadd(r1, V::load(x + k * x_stride + i + kL), a1[k]);
        }
      }
      for (int k = 0; k < kX; ++k) v[k][r] = V::add(a0[k], a1[k]);
    }
    for (int k = 0; k < kX; ++k) {
      V::store(out + k * out_stride + j, V::mul(V::hsum_rows(v[k]), vscale));
    }
  }
}

// kX x's (n = 2 kLanes · kChunks floats each, held in registers where they fit, else read from
// L1) against kLanes rows at a time: each row is loaded once for all of them, and each pair runs
// dot_lanes' operations in its order.
template <class V, int kChunks, int kX, typename Rows>
void dot_rows_held(Rows rows, int64_t n_rows, const float* x, int64_t x_stride, float scale,
                   float* out, int64_t out_stride) {
  using F = typename V::F;
  constexpr int kL = V::kLanes;
  F xv[kX][2 * kChunks];
  for (int i = 0; i < kX; ++i) {
    for (int c = 0; c < 2 * kChunks; ++c) xv[i][c] = V::load(x + i * x_stride + kL * c);
  }
  const F vscale = V::set1(scale);
  for (int64_t j = 0; j + kL <= n_rows; j += kL) {
    F v[kX][kL];  // [x][row] dot_lanes' two accumulators, added
    for (int r = 0; r < kL; ++r) {
      rows.prefetch(j + r, 2 * kL * kChunks);
      F acc0[kX], acc1[kX];
      for (int i = 0; i < kX; ++i) acc0[i] = acc1[i] = V::zero();
      for (int c = 0; c < kChunks; ++c) {
        const F r0 = rows.load(j + r, 2 * kL * c);
        const F r1 = rows.load(j + r, 2 * kL * c + kL);
        for (int i = 0; i < kX; ++i) {
          acc0[i] = V::fmadd(r0, xv[i][2 * c], acc0[i]);
          acc1[i] = V::fmadd(r1, xv[i][2 * c + 1], acc1[i]);
        }
      }
      for (int i = 0; i < kX; ++i) v[i][r] = V::add(acc0[i], acc1[i]);
    }
    for (int i = 0; i < kX; ++i) {
      V::store(out + i * out_stride + j, V::mul(V::hsum_rows(v[i]), vscale));
    }
  }
}

// dot_rows_cached (kChunks = 0) or dot_rows_held for n_x x's (1 <= n_x <= kX) in one pass over
// the rows.
template <class V, int kChunks, int kX, typename Rows>
void dot_rows_pass(Rows rows, int64_t n_rows, int64_t n_x, const float* x, int64_t x_stride,
                   int64_t n, float scale, float* out, int64_t out_stride) {
  if constexpr (kX > 1) {
    if (n_x < kX) {
      dot_rows_pass<V, kChunks, kX - 1>(rows, n_rows, n_x, x, x_stride, n, scale, out, out_stride);
      return;
    }
  }
  if constexpr (kChunks == 0) {
    dot_rows_cached<V, kX>(rows, n_rows, x, x_stride, n, scale, out, out_stride);
  } else {
    dot_rows_held<V, kChunks, kX>(rows, n_rows, x, x_stride, scale, out, out_stride);
  }
}

// Every x against the first n_rows rows (a multiple of kLanes; n a multiple of 2 kLanes),
// kMaxX x's a pass: a decode step's query heads of one KV head (7 for Qwen2.5-0.5B, 6 for 1.5B,
// 2 for Qwen3-0.6B) in one pass, each row loaded and converted once.
template <class V, typename Rows>
void dot_rows_x_cached(Rows rows, int64_t n_rows, F32Rows x, int64_t n, float scale, float* out,
                       int64_t out_stride) {
  constexpr int kMaxX = 7;
  for (int64_t i = 0; i < x.n; i += kMaxX) {
    dot_rows_pass<V, 0, kMaxX>(rows, n_rows, std::min<int64_t>(kMaxX, x.n - i), x.row(i), x.stride,
                               n, scale, out + i * out_stride, out_stride);
  }
}

// dot_rows_held for x.n x's. Up to 8 (a decode step's query heads of one KV head: 7 for
// Qwen2.5-0.5B, 6 for Qwen2.5-1.5B) in one pass, each row loaded and converted once, the x's that
// do not fit the registers read from L1 by the multiply-adds; more (a prompt's rows), kMaxX at a
// time held in registers (kMaxX · 2 · kChunks = 16 of them), the last x.n % kMaxX in one pass too.
template <class V, int kChunks, typename Rows>
void dot_rows_x_held(Rows rows, int64_t n_rows, F32Rows x, float scale, float* out,
                     int64_t out_stride) {
  constexpr int kOnePass = 8;
  const int64_t n = 2 * V::kLanes * kChunks;
  if (x.n <= kOnePass) {
    dot_rows_pass<V, kChunks, kOnePass>(rows, n_rows, x.n, x.row(0), x.stride, n, scale, out,
                                        out_stride);
    return;
  }
  constexpr int kMaxX = 8 / kChunks;
  int64_t i = 0;
  for (; i + kMaxX <= x.n; i += kMaxX) {
    dot_rows_held<V, kChunks, kMaxX>(rows, n_rows, x.row(i), x.stride, scale, out + i * out_stride,
                                     out_stride);
  }
  if (i < x.n) {
    dot_rows_pass<V, kChunks, kMaxX>(rows, n_rows, x.n - i, x.row(i), x.stride, n, scale,
                                     out + i * out_stride, out_stride);
  }
}

// The policy's plan for every x against the first n_rows rows (a multiple of kLanes): false
// (nothing written) for a width the plan does not take: kXFromCache takes multiples of
// 2 kLanes, kXInRegisters the head sizes it holds in registers (4, 8 and 16 vectors).
template <class V, typename Rows>
bool dot_rows_whole(Rows rows, int64_t n_rows, F32Rows x, int64_t n, float scale, float* out,
                    int64_t out_stride) {
  constexpr int64_t kL = V::kLanes;
  if constexpr (V::kRowLoops == RowLoops::kXFromCache) {
    if (n % (2 * kL) != 0) return false;
    dot_rows_x_cached<V>(rows, n_rows, x, n, scale, out, out_stride);
    return true;
  } else {
    if (n % (2 * kL) != 0) return false;
    switch (n / (2 * kL)) {
      case 2:
        dot_rows_x_held<V, 2>(rows, n_rows, x, scale, out, out_stride);
        return true;
      case 4:
        dot_rows_x_held<V, 4>(rows, n_rows, x, scale, out, out_stride);
        return true;
      case 8:
        dot_rows_x_held<V, 8>(rows, n_rows, x, scale, out, out_stride);
        return true;
      default:
        return false;
    }
  }
}

// kY rows of y stay in registers, kLanes · kVecs floats at a time, while every row is added with
// one fused multiply-add per element in order of j: axpy_f32's arithmetic, each row loaded once
// for all of them. Whole vectors load plainly (masked loads cost more on AVX2).
template <class V, int kY, int kVecs, typename Rows>
void weighted_sum_held(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  using F = typename V::F;
  constexpr int64_t kL = V::kLanes;
  for (int64_t c = 0; c < n; c += kL * kVecs) {
    const bool whole = c + kL * kVecs <= n;
    typename V::M m[kVecs];
    F acc[kY][kVecs];
    for (int k = 0; k < kVecs; ++k) {
      m[k] = V::first_lanes(std::clamp<int64_t>(n - c - kL * k, 0, kL));
      for (int i = 0; i < kY; ++i) {
        float* yk = y + i * y_stride + c + kL * k;
        acc[i][k] = whole ? V::load(yk) : V::load(yk, m[k]);
      }
    }
    for (int64_t j = 0; j < rows.rows.n; ++j) {
      if (c == 0) rows.prefetch(j, n);
      F rv[kVecs];
      for (int k = 0; k < kVecs; ++k) {
        rv[k] = whole ? rows.load(j, c + kL * k) : rows.load(j, c + kL * k, m[k]);
      }
      for (int i = 0; i < kY; ++i) {
        const F wj = V::set1(w.row(i)[j]);
        for (int k = 0; k < kVecs; ++k) acc[i][k] = V::fmadd(wj, rv[k], acc[i][k]);
      }
    }
    for (int i = 0; i < kY; ++i) {
      for (int k = 0; k < kVecs; ++k) {
        float* yk = y + i * y_stride + c + kL * k;
        if (whole) {
          V::store(yk, acc[i][k]);
        } else {
          V::store(yk, m[k], acc[i][k]);
        }
      }
    }
  }
}

// kXFromCache: groups of 3 or 4 y rows (6 as 3 + 3) 2 kLanes floats a pass where n is a multiple
// of 2 kLanes: 2 kY accumulators beside the row's two vectors and the broadcast weight, each row
// loaded once per pass for all kY. The last one or two rows go 4 kLanes floats a pass, whose 8
// accumulators keep the multiply-adds busy where 2 or 4 would wait on each other.
template <class V, typename Rows>
void weighted_sum_cached(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  int64_t i = 0;
  if (n % (2 * V::kLanes) == 0) {
    while (w.n - i >= 3) {
      const int64_t left = w.n - i;
      const F32Rows group{w.row(i), left == 6 || left == 3 ? 3 : 4, w.stride};
      if (group.n == 3) {
        weighted_sum_held<V, 3, 2>(group, rows, n, y + i * y_stride, y_stride);
      } else {
        weighted_sum_held<V, 4, 2>(group, rows, n, y + i * y_stride, y_stride);
      }
      i += group.n;
    }
  }
  for (; i + 2 <= w.n; i += 2) {
    weighted_sum_held<V, 2, 4>({w.row(i), 2, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
  for (; i < w.n; ++i) {
    weighted_sum_held<V, 1, 4>({w.row(i), 1, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
}

// kXInRegisters for kY rows of y: an 8-vector row in one pass over the rows where its
// accumulators fit the registers with the row's (kY <= 2: 24 of 32), else 4 vectors a pass.
template <class V, int kY, typename Rows>
void weighted_sum_y(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  if constexpr (kY <= 2) {
    if (n > 4 * V::kLanes && n <= 8 * V::kLanes) {
      weighted_sum_held<V, kY, 8>(w, rows, n, y, y_stride);
      return;
    }
  }
  weighted_sum_held<V, kY, 4>(w, rows, n, y, y_stride);
}

template <class V, typename Rows>
void weighted_sum_in_registers(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  constexpr int kMaxY = 4;  // 16 accumulators
  int64_t i = 0;
  for (; i + kMaxY <= w.n; i += kMaxY) {
    weighted_sum_y<V, kMaxY>({w.row(i), kMaxY, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
  // The last w.n % kMaxY rows in one pass over the rows too.
  float* rest = y + i * y_stride;
  switch (w.n - i) {
    case 3:
      weighted_sum_y<V, 3>({w.row(i), 3, w.stride}, rows, n, rest, y_stride);
      break;
    case 2:
      weighted_sum_y<V, 2>({w.row(i), 2, w.stride}, rows, n, rest, y_stride);
      break;
    case 1:
      weighted_sum_y<V, 1>({w.row(i), 1, w.stride}, rows, n, rest, y_stride);
      break;
    default:
      break;
  }
}

template <class V, typename Rows>
void weighted_sum_rows(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  if constexpr (V::kRowLoops == RowLoops::kXFromCache) {
    weighted_sum_cached<V>(w, rows, n, y, y_stride);
  } else {
    weighted_sum_in_registers<V>(w, rows, n, y, y_stride);
  }
}

template <class V>
void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  constexpr int64_t kL = V::kLanes;
  if constexpr (V::kRowLoops == RowLoops::kPlain) {
    for (int64_t i = 0; i < x.n; ++i) {
      for (int64_t j = 0; j < rows.n; ++j) {
        out[i * out_stride + j] = dot_f32<V>(rows.row(j), x.row(i), n) * scale;
      }
    }
  } else {
    if (!dot_rows_whole<V>(F32Loader<V>{rows}, rows.n / kL * kL, x, n, scale, out, out_stride)) {
      for (int64_t i = 0; i < x.n; ++i) {
        dot_rows_one<V>(rows, x.row(i), n, scale, out + i * out_stride);
      }
      return;
    }
    // The rows after the last whole group of kLanes.
    for (int64_t i = 0; i < x.n; ++i) {
      for (int64_t j = rows.n / kL * kL; j < rows.n; ++j) {
        out[i * out_stride + j] = dot_f32<V>(rows.row(j), x.row(i), n) * scale;
      }
    }
  }
}

template <class V>
void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {
  if constexpr (V::kRowLoops == RowLoops::kPlain) {
    for (int64_t i = 0; i < w.n; ++i) {
      for (int64_t j = 0; j < rows.n; ++j) {
        axpy_f32<V>(w.row(i)[j], rows.row(j), n, y + i * y_stride);
      }
    }
  } else {
    weighted_sum_rows<V>(w, F32Loader<V>{rows}, n, y, y_stride);
  }
}

// f16 / q8_0 rows: the whole groups of kLanes read in place, the others converted to f32 rows
// first (all of them where the plan does not take the width).
template <class V, typename Loader>
void dot_rows_cells(Loader rows, F32Rows x, int64_t n, float scale, float* out,
                    int64_t out_stride) {
  const int64_t whole = rows.rows.n / V::kLanes * V::kLanes;
  const int64_t begin = dot_rows_whole<V>(rows, whole, x, n, scale, out, out_stride) ? whole : 0;
  if (begin == rows.rows.n) return;
  const std::vector<float> f32 = loaded_rows<V>(rows, begin, rows.rows.n, n);
  dot_rows_f32<V>({f32.data(), rows.rows.n - begin, n}, x, n, scale, out + begin, out_stride);
}

template <class V>
void f16_to_f32(const uint16_t* x, int64_t n, float* y) {
  to_f32<V>(x, n, y, V::from_f16);
}

// Rows of f16 cells converted to f32 rows ([rows.n, n]), n any width.
template <class V>
std::vector<float> f16_rows_to_f32(F16Rows rows, int64_t n) {
  std::vector<float> out(static_cast<size_t>(rows.n * n));
  for (int64_t j = 0; j < rows.n; ++j) f16_to_f32<V>(rows.row(j), n, out.data() + j * n);
  return out;
}

template <class V>
void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  if (n % V::kLanes != 0) {
    const std::vector<float> f32 = f16_rows_to_f32<V>(rows, n);
    dot_rows_f32<V>({f32.data(), rows.n, n}, x, n, scale, out, out_stride);
    return;
  }
  dot_rows_cells<V>(F16Loader<V>{rows}, x, n, scale, out, out_stride);
}

template <class V>
void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride) {
  if (!V::kMaskedF16 && n % (4 * V::kLanes) != 0) {
    const std::vector<float> f32 = f16_rows_to_f32<V>(rows, n);
    weighted_sum_f32<V>(w, {f32.data(), rows.n, n}, n, y, y_stride);
    return;
  }
  weighted_sum_rows<V>(w, F16Loader<V>{rows}, n, y, y_stride);
}

// Rows of bf16 cells converted to f32 rows ([rows.n, n]), n any width.
template <class V>
std::vector<float> bf16_rows_to_f32(BF16Rows rows, int64_t n) {
  std::vector<float> out(static_cast<size_t>(rows.n * n));
  for (int64_t j = 0; j < rows.n; ++j) to_f32<V>(rows.row(j), n, out.data() + j * n, V::from_bf16);
  return out;
}

// As weighted_sum_f16: in place where the loads take the width, else (and for the pair-by-pair
// policies) on the rows converted.
template <class V>
void weighted_sum_bf16(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride) {
  if constexpr (V::kRowLoops != RowLoops::kPlain) {
    if (V::kMaskedF16 || n % (4 * V::kLanes) == 0) {
      weighted_sum_rows<V>(w, BF16Loader<V>{rows}, n, y, y_stride);
      return;
    }
  }
  const std::vector<float> f32 = bf16_rows_to_f32<V>(rows, n);
  weighted_sum_f32<V>(w, {f32.data(), rows.n, n}, n, y, y_stride);
}

template <class V>
void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows<V>(w, Q8Loader<V>{rows}, n, y, y_stride);
}

}  // namespace
}  // namespace minfer::kernels::ops

// Defines the functions of ops_decl.h (and the F16 / BF16 activation and cell wrappers of
// simd_kernels_decl.h) on policy V, in the namespace where it stands.
#define MINFER_DEFINE_OPS(V)                                                                 \
  void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {            \
    ::minfer::kernels::ops::rms_norm<V>(x, w, eps, n, y);                                    \
  }                                                                                          \
  void softmax(const float* x, int64_t n, float* y) {                                        \
    ::minfer::kernels::ops::softmax<V>(x, n, y);                                             \
  }                                                                                          \
  double exp_sum(const float* x, float shift, int64_t n, float* y) {                         \
    return ::minfer::kernels::ops::exp_sum<V>(x, shift, n, y);                               \
  }                                                                                          \
  float max_f32(const float* x, int64_t n, float init) {                                     \
    return ::minfer::kernels::ops::max_f32<V>(x, n, init);                                   \
  }                                                                                          \
  void silu(const float* x, int64_t n, float* y) {                                           \
    ::minfer::kernels::ops::silu<V>(x, n, y);                                                \
  }                                                                                          \
  void swiglu(const float* gate, const float* up, int64_t n, float* y) {                     \
    ::minfer::kernels::ops::swiglu<V>(gate, up, n, y);                                       \
  }                                                                                          \
  void geglu(const float* gate, const float* up, int64_t n, float* y) {                      \
    ::minfer::kernels::ops::geglu<V>(gate, up, n, y);                                        \
  }                                                                                          \
  void add(const float* a, const float* b, int64_t n, float* y) {                            \
    ::minfer::kernels::ops::add<V>(a, b, n, y);                                              \
  }                                                                                          \
  void mul(const float* a, const float* b, int64_t n, float* y) {                            \
    ::minfer::kernels::ops::mul<V>(a, b, n, y);                                              \
  }                                                                                          \
  void scale(const float* x, float s, int64_t n, float* y) {                                 \
    ::minfer::kernels::ops::scale<V>(x, s, n, y);                                            \
  }                                                                                          \
  void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin, \
            RopeStyle style) {                                                               \
    ::minfer::kernels::ops::rope<V>(x, n_head, head_dim, n_rot, cos_sin, style);             \
  }                                                                                          \
  float dot_f32(const float* a, const float* b, int64_t n) {                                 \
    return ::minfer::kernels::ops::dot_f32<V>(a, b, n);                                      \
  }                                                                                          \
  void axpy_f32(float a, const float* x, int64_t n, float* y) {                              \
    ::minfer::kernels::ops::axpy_f32<V>(a, x, n, y);                                         \
  }                                                                                          \
  void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out,             \
                    int64_t out_stride) {                                                    \
    ::minfer::kernels::ops::dot_rows_f32<V>(rows, x, n, scale, out, out_stride);             \
  }                                                                                          \
  void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {    \
    ::minfer::kernels::ops::weighted_sum_f32<V>(w, rows, n, y, y_stride);                    \
  }                                                                                          \
  void f16_to_f32(const uint16_t* x, int64_t n, float* y) {                                  \
    ::minfer::kernels::ops::f16_to_f32<V>(x, n, y);                                          \
  }                                                                                          \
  void f32_to_f16(const float* x, int64_t n, uint16_t* y) {                                  \
    ::minfer::kernels::ops::from_f32<V>(x, n, y, V::to_f16);                                 \
  }                                                                                          \
  void bf16_to_f32(const uint16_t* x, int64_t n, float* y) {                                 \
    ::minfer::kernels::ops::to_f32<V>(x, n, y, V::from_bf16);                                \
  }                                                                                          \
  void f32_to_bf16(const float* x, int64_t n, uint16_t* y) {                                 \
    ::minfer::kernels::ops::from_f32<V>(x, n, y, V::to_bf16);                                \
  }                                                                                          \
  void act_f16(const float* x, void* y, int64_t n) {                                         \
    f32_to_f16(x, n, static_cast<uint16_t*>(y));                                             \
  }                                                                                          \
  void act_bf16(const float* x, void* y, int64_t n) {                                        \
    f32_to_bf16(x, n, static_cast<uint16_t*>(y));                                            \
  }                                                                                          \
  void cells_to_f32_f16(const void* x, float* y, int64_t n) {                                \
    f16_to_f32(static_cast<const uint16_t*>(x), n, y);                                       \
  }                                                                                          \
  void cells_to_f32_bf16(const void* x, float* y, int64_t n) {                               \
    bf16_to_f32(static_cast<const uint16_t*>(x), n, y);                                      \
  }

// Defines attention's row loops over f16 and q8_0 cells (the x86 tables' dot_rows_f16,
// weighted_sum_f16, weighted_sum_q8_0) on policy V.
#define MINFER_DEFINE_CELL_ROW_LOOPS(V)                                                   \
  void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out,          \
                    int64_t out_stride) {                                                 \
    ::minfer::kernels::ops::dot_rows_f16<V>(rows, x, n, scale, out, out_stride);          \
  }                                                                                       \
  void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride) { \
    ::minfer::kernels::ops::weighted_sum_f16<V>(w, rows, n, y, y_stride);                 \
  }                                                                                       \
  void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride) { \
    ::minfer::kernels::ops::weighted_sum_q8_0<V>(w, rows, n, y, y_stride);                \
  }

// Defines the values' loop over bf16 cells (the SIMD tables' weighted_sum_bf16; their
// dot_rows_bf16 is the ISA's *_bf16_cells.cpp) on policy V.
#define MINFER_DEFINE_BF16_CELL_LOOPS(V)                                                    \
  void weighted_sum_bf16(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride) { \
    ::minfer::kernels::ops::weighted_sum_bf16<V>(w, rows, n, y, y_stride);                  \
  }
