// AVX-512 vector ops (F/BW/VL/DQ). Called only through avx512_table after dispatch has checked
// the CPU. Tails use masked loads and stores, so they run the same arithmetic as the body. No
// header with inline code is included (see avx512_math.h for why).
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cmath>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"
#include "kernels/gelu_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

template <typename Op>
void map1(const float* x, int64_t n, float* y, Op op) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, op(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <typename Op>
void map2(const float* a, const float* b, int64_t n, float* y, Op op) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          op(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// SiLU as llama.cpp's CPU backend computes it (ggml_v_silu / ggml_silu_f32): x / (1 + e^-x) with
// its vector exp on whole groups of 16 and libm's expf on the elements after the last group.
__m512 silu_ps(__m512 x) {
  const __m512 e = exp_ps_ggml(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

float silu_tail(float x) {
  return x / (1.0f + std::exp(-x));
}

double hsum_pd(__m512d v) {
  const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

}  // namespace

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    // Each square rounded to float, as ggml (ref rms_norm).
    const __m512 v = _mm512_maskz_loadu_ps(lane_mask(n - i), x + i);
    const __m512 sq = _mm512_mul_ps(v, v);
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(sq, 1)));
  }
  const double sum = hsum_pd(_mm512_add_pd(acc0, acc1));
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m512 scale = _mm512_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
  map2(x, w, n, y,
       [scale](__m512 xv, __m512 wv) { return _mm512_mul_ps(_mm512_mul_ps(xv, scale), wv); });
}

double exp_sum(const float* x, float shift, int64_t n, float* y) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  const __m512 vs = _mm512_set1_ps(shift);
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  int64_t i = 0;
  // Four vectors a step, summed in the same order: exp_ps is a long chain of dependent
  // operations, and one vector at a time left the core waiting on it.
  for (; i + 64 <= n; i += 64) {
    __m512 e[4];
    for (int k = 0; k < 4; ++k) e[k] = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * k), vs));
    for (int k = 0; k < 4; ++k) {
      _mm512_storeu_ps(y + i + 16 * k, e[k]);
      acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e[k])));
      acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e[k], 1)));
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    // Masked-off lanes load -inf and so give exactly 0.
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_mask_loadu_ps(neg_inf, m, x + i), vs));
    _mm512_mask_storeu_ps(y + i, m, e);
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  return hsum_pd(_mm512_add_pd(acc0, acc1));
}

float max_f32(const float* x, int64_t n, float init) {
  // _mm512_max_ps(x, m) is x > m ? x : m, lane by lane; lanes past n keep m.
  __m512 m = _mm512_set1_ps(init);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lane_mask(n - i);
    m = _mm512_mask_max_ps(m, k, _mm512_maskz_loadu_ps(k, x + i), m);
  }
  return _mm512_reduce_max_ps(m);
}

void softmax(const float* x, int64_t n, float* y) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  __m512 vmax = neg_inf;
  for (int64_t i = 0; i < n; i += 16) {
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(neg_inf, lane_mask(n - i), x + i));
  }
  const double sum = exp_sum(x, _mm512_reduce_max_ps(vmax), n, y);
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  map1(y, n, y, [inv](__m512 v) { return _mm512_mul_ps(v, inv); });
}

void silu(const float* x, int64_t n, float* y) {
  const int64_t whole = n & ~int64_t{15};
  map1(x, whole, y, silu_ps);
  for (int64_t i = whole; i < n; ++i) y[i] = silu_tail(x[i]);
}

void swiglu(const float* gate, const float* up, int64_t n, float* y) {
  const int64_t whole = n & ~int64_t{15};
  map2(gate, up, whole, y, [](__m512 g, __m512 u) { return _mm512_mul_ps(silu_ps(g), u); });
  for (int64_t i = whole; i < n; ++i) y[i] = silu_tail(gate[i]) * up[i];
}

void geglu(const float* gate, const float* up, int64_t n, float* y) {
  const float* table = gelu_f16_table();
  const __m512 low = _mm512_set1_ps(kGeluTableLow);
  const __m512 high = _mm512_set1_ps(kGeluTableHigh);
  map2(gate, up, n, y, [=](__m512 g, __m512 u) {
    // The f16 bits of g (round to nearest even, as fp32_to_fp16) index the table.
    const __m256i h = _mm512_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 v = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(g, high, _CMP_GE_OQ), g);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(g, low, _CMP_LE_OQ), _mm512_setzero_ps());
    return _mm512_mul_ps(v, u);
  });
}

void add(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](__m512 u, __m512 v) { return _mm512_add_ps(u, v); });
}

void mul(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](__m512 u, __m512 v) { return _mm512_mul_ps(u, v); });
}

void scale(const float* x, float s, int64_t n, float* y) {
  const __m512 vs = _mm512_set1_ps(s);
  map1(x, n, y, [vs](__m512 v) { return _mm512_mul_ps(v, vs); });
}

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style) {
  const int64_t half = n_rot / 2;
  const float* cosv = cos_sin;
  const float* sinv = cos_sin + half;
  for (int64_t h = 0; h < n_head; ++h) {
    float* head = x + h * head_dim;
    if (style == RopeStyle::kNeox) {
      for (int64_t i = 0; i < half; i += 16) {
        const __mmask16 m = lane_mask(half - i);
        const __m512 c = _mm512_maskz_loadu_ps(m, cosv + i);
        const __m512 s = _mm512_maskz_loadu_ps(m, sinv + i);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, head + i);
        const __m512 x1 = _mm512_maskz_loadu_ps(m, head + half + i);
        _mm512_mask_storeu_ps(head + i, m, _mm512_fmsub_ps(x0, c, _mm512_mul_ps(x1, s)));
        _mm512_mask_storeu_ps(head + half + i, m, _mm512_fmadd_ps(x0, s, _mm512_mul_ps(x1, c)));
      }
    } else {
      // 8 pairs per vector: x = [a0 b0 a1 b1 …], c = [c0 c0 c1 c1 …]; fmaddsub gives even
      // lanes a*c - b*s and odd lanes b*c + a*s.
      const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
      for (int64_t i = 0; i < half; i += 8) {
        const int64_t pairs = half - i < 8 ? half - i : 8;
        const __mmask16 m8 = lane_mask(pairs);
        const __mmask16 m16 = lane_mask(2 * pairs);
        const __m512 c = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(m8, cosv + i));
        const __m512 s = _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(m8, sinv + i));
        const __m512 v = _mm512_maskz_loadu_ps(m16, head + 2 * i);
        const __m512 swapped = _mm512_permute_ps(v, 0xB1);
        _mm512_mask_storeu_ps(head + 2 * i, m16,
                              _mm512_fmaddsub_ps(v, c, _mm512_mul_ps(swapped, s)));
      }
    }
  }
}

namespace {

// Two accumulators over a · b, added: dot_f32 is their hsum_ps.
inline __m512 dot_lanes(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc0);
  }
  return _mm512_add_ps(acc0, acc1);
}

// hsum_ps of 16 vectors at once, each sum in hsum_ps's order (lanes i + i+8, then i + i+4,
// then 0+2 and 1+3, then those two): lane 4L + k of the result is the sum of v[4k + L].
inline __m512 hsum16_ps(const __m512* v) {
  __m512 w[8];  // w[p]: rows 2p and 2p+1, 8 partial sums each
  for (int p = 0; p < 8; ++p) {
    w[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0xEE));
  }
  __m512 x[4];  // x[r]: rows 4r..4r+3 in its quarters, 4 partial sums each
  for (int r = 0; r < 4; ++r) {
    x[r] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * r], w[2 * r + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * r], w[2 * r + 1], 0xDD));
  }
  __m512 y[2];  // y[u], quarter L: rows 8u + L and 8u + 4 + L, 2 partial sums each
  for (int u = 0; u < 2; ++u) {
    y[u] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  return hsum_ps(dot_lanes(a, b, n));
}

namespace {

// The row order of hsum16_ps's lanes (lane 4L + k holds row 4k + L).
inline __m512i hsum16_row_order() {
  return _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
}

// Rows of f32 floats or of f16 cells, loaded 16 floats at a time (f16 converted exactly).
struct F32Loader {
  F32Rows rows;
  void prefetch(int64_t /*j*/, int64_t /*n*/) const {}
  __m512 load(int64_t j, int64_t off) const { return _mm512_loadu_ps(rows.row(j) + off); }
  __m512 load(int64_t j, int64_t off, __mmask16 m) const {
    return _mm512_maskz_loadu_ps(m, rows.row(j) + off);
  }
};

struct F16Loader {
  F16Rows rows;
  // Asks for row j of rows.prefetch (n cells), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch == nullptr) return;
    const auto* row = reinterpret_cast<const char*>(rows.prefetch + j * rows.stride);
    for (int64_t off = 0; off < n * 2; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
  }
  __m512 load(int64_t j, int64_t off) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.row(j) + off)));
  }
  __m512 load(int64_t j, int64_t off, __mmask16 m) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, rows.row(j) + off));
  }
};

// Rows of q8_0 cells (n a multiple of 32, so a masked load is of a whole half-block or none):
// d · q, exact in f32, as cells_to_f32 gives.
struct Q8Loader {
  Q8Rows rows;
  // Asks for row j of rows.prefetch (n values), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch == nullptr) return;
    const auto* row = reinterpret_cast<const char*>(rows.prefetch + j * rows.stride);
    for (int64_t off = 0; off < n / 32 * static_cast<int64_t>(sizeof(BlockQ8_0)); off += 64)
      _mm_prefetch(row + off, _MM_HINT_T0);
  }
  __m512 load(int64_t j, int64_t off) const {
    const BlockQ8_0& block = reinterpret_cast<const BlockQ8_0*>(rows.row(j))[off / 32];
    const __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<int16_t>(block.d)));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs + off % 32));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
  __m512 load(int64_t j, int64_t off, __mmask16 m) const {
    return m == 0 ? _mm512_setzero_ps() : load(j, off);
  }
};

// Rows [begin, end) of n values each, converted to f32 ([end - begin, n]).
template <typename Loader>
std::vector<float> loaded_rows(Loader rows, int64_t begin, int64_t end, int64_t n) {
  std::vector<float> out(static_cast<size_t>((end - begin) * n));
  for (int64_t j = begin; j < end; ++j) {
    for (int64_t off = 0; off < n; off += 16) {
      _mm512_storeu_ps(out.data() + (j - begin) * n + off, rows.load(j, off));
    }
  }
  return out;
}

// Rows [begin, end) of n cells each, converted to f32 ([end - begin, n]).
std::vector<float> rows_to_f32(F16Rows rows, int64_t begin, int64_t end, int64_t n) {
  std::vector<float> out(static_cast<size_t>((end - begin) * n));
  for (int64_t j = begin; j < end; ++j) f16_to_f32(rows.row(j), n, out.data() + (j - begin) * n);
  return out;
}

// One x against sixteen rows at a time: their lanes reduced together (hsum16_ps), then put back
// in row order.
void dot_rows_one(F32Rows rows, const float* x, int64_t n, float scale, float* out) {
  const __m512 vscale = _mm512_set1_ps(scale);
  int64_t j = 0;
  for (; j + 16 <= rows.n; j += 16) {
    __m512 v[16];
    for (int r = 0; r < 16; ++r) v[r] = dot_lanes(rows.row(j + r), x, n);
    const __m512 sums = _mm512_permutexvar_ps(hsum16_row_order(), hsum16_ps(v));
    _mm512_storeu_ps(out + j, _mm512_mul_ps(sums, vscale));
  }
  for (; j < rows.n; ++j) out[j] = dot_f32(rows.row(j), x, n) * scale;
}

// kX x's (n = 32 · kChunks floats each, held in registers where they fit, else read from L1)
// against sixteen rows at a time: each row is loaded once for all of them, and each pair runs
// dot_lanes' operations in its order.
template <int kChunks, int kX, typename Rows>
void dot_rows_held(Rows rows, int64_t n_rows, const float* x, int64_t x_stride, float scale,
                   float* out, int64_t out_stride) {
  __m512 xv[kX][2 * kChunks];
  for (int i = 0; i < kX; ++i) {
    for (int c = 0; c < 2 * kChunks; ++c) xv[i][c] = _mm512_loadu_ps(x + i * x_stride + 16 * c);
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t j = 0; j + 16 <= n_rows; j += 16) {
    __m512 v[kX][16];  // [x][row] dot_lanes' two accumulators, added
    for (int r = 0; r < 16; ++r) {
      rows.prefetch(j + r, 32 * kChunks);
      __m512 acc0[kX], acc1[kX];
      for (int i = 0; i < kX; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
      for (int c = 0; c < kChunks; ++c) {
        const __m512 r0 = rows.load(j + r, 32 * c);
        const __m512 r1 = rows.load(j + r, 32 * c + 16);
        for (int i = 0; i < kX; ++i) {
          acc0[i] = _mm512_fmadd_ps(r0, xv[i][2 * c], acc0[i]);
          acc1[i] = _mm512_fmadd_ps(r1, xv[i][2 * c + 1], acc1[i]);
        }
      }
      for (int i = 0; i < kX; ++i) v[i][r] = _mm512_add_ps(acc0[i], acc1[i]);
    }
    for (int i = 0; i < kX; ++i) {
      const __m512 sums = _mm512_permutexvar_ps(hsum16_row_order(), hsum16_ps(v[i]));
      _mm512_storeu_ps(out + i * out_stride + j, _mm512_mul_ps(sums, vscale));
    }
  }
}

// dot_rows_held for n_x x's (1 <= n_x <= kX) in one pass over the rows.
template <int kChunks, int kX, typename Rows>
void dot_rows_pass(Rows rows, int64_t n_rows, int64_t n_x, const float* x, int64_t x_stride,
                   float scale, float* out, int64_t out_stride) {
  if constexpr (kX > 1) {
    if (n_x < kX) {
      dot_rows_pass<kChunks, kX - 1>(rows, n_rows, n_x, x, x_stride, scale, out, out_stride);
      return;
    }
  }
  dot_rows_held<kChunks, kX>(rows, n_rows, x, x_stride, scale, out, out_stride);
}

// dot_rows_held for x.n x's. Up to 8 (a decode step's query heads of one KV head: 7 for
// Qwen2.5-0.5B, 6 for Qwen2.5-1.5B) in one pass, each row loaded and converted once, the x's that
// do not fit the registers read from L1 by the multiply-adds; more (a prompt's rows), kMaxX at a
// time held in registers (kMaxX · 2 · kChunks = 16 of them), the last x.n % kMaxX in one pass too.
template <int kChunks, typename Rows>
void dot_rows_chunks(Rows rows, int64_t n_rows, F32Rows x, float scale, float* out,
                     int64_t out_stride) {
  constexpr int kOnePass = 8;
  if (x.n <= kOnePass) {
    dot_rows_pass<kChunks, kOnePass>(rows, n_rows, x.n, x.row(0), x.stride, scale, out, out_stride);
    return;
  }
  constexpr int kMaxX = 8 / kChunks;
  int64_t i = 0;
  for (; i + kMaxX <= x.n; i += kMaxX) {
    dot_rows_held<kChunks, kMaxX>(rows, n_rows, x.row(i), x.stride, scale, out + i * out_stride,
                                  out_stride);
  }
  if (i < x.n) {
    dot_rows_pass<kChunks, kMaxX>(rows, n_rows, x.n - i, x.row(i), x.stride, scale,
                                  out + i * out_stride, out_stride);
  }
}

// dot_rows_chunks for the head sizes it holds in registers (64, 128, 256 floats): false for
// any other n, and nothing written.
template <typename Rows>
bool dot_rows_held_sizes(Rows rows, int64_t n_rows, F32Rows x, int64_t n, float scale, float* out,
                         int64_t out_stride) {
  switch (n) {
    case 64:
      dot_rows_chunks<2>(rows, n_rows, x, scale, out, out_stride);
      return true;
    case 128:
      dot_rows_chunks<4>(rows, n_rows, x, scale, out, out_stride);
      return true;
    case 256:
      dot_rows_chunks<8>(rows, n_rows, x, scale, out, out_stride);
      return true;
    default:
      return false;
  }
}

}  // namespace

void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  if (!dot_rows_held_sizes(F32Loader{rows}, rows.n, x, n, scale, out, out_stride)) {
    for (int64_t i = 0; i < x.n; ++i) dot_rows_one(rows, x.row(i), n, scale, out + i * out_stride);
    return;
  }
  // The rows after the last sixteen.
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t j = rows.n & ~int64_t{15}; j < rows.n; ++j) {
      out[i * out_stride + j] = dot_f32(rows.row(j), x.row(i), n) * scale;
    }
  }
}

void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  const int64_t whole = rows.n & ~int64_t{15};
  if (!dot_rows_held_sizes(F16Loader{rows}, whole, x, n, scale, out, out_stride)) {
    const std::vector<float> f32 = rows_to_f32(rows, 0, rows.n, n);
    dot_rows_f32({f32.data(), rows.n, n}, x, n, scale, out, out_stride);
    return;
  }
  // The rows after the last sixteen, as f32.
  if (whole == rows.n) return;
  const std::vector<float> tail = rows_to_f32(rows, whole, rows.n, n);
  dot_rows_f32({tail.data(), rows.n - whole, n}, x, n, scale, out + whole, out_stride);
}

void dot_rows_q8_0(Q8Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  const int64_t whole = rows.n & ~int64_t{15};
  if (!dot_rows_held_sizes(Q8Loader{rows}, whole, x, n, scale, out, out_stride)) {
    const std::vector<float> f32 = loaded_rows(Q8Loader{rows}, 0, rows.n, n);
    dot_rows_f32({f32.data(), rows.n, n}, x, n, scale, out, out_stride);
    return;
  }
  // The rows after the last sixteen, as f32.
  if (whole == rows.n) return;
  const std::vector<float> tail = loaded_rows(Q8Loader{rows}, whole, rows.n, n);
  dot_rows_f32({tail.data(), rows.n - whole, n}, x, n, scale, out + whole, out_stride);
}

void axpy_f32(float a, const float* x, int64_t n, float* y) {
  const __m512 va = _mm512_set1_ps(a);
  map2(x, y, n, y, [va](__m512 xv, __m512 yv) { return _mm512_fmadd_ps(va, xv, yv); });
}

namespace {

// kY rows of y stay in registers, 16 · kVecs floats at a time, while every row is added with
// one fused multiply-add per element in order of j: axpy_f32's arithmetic, each row loaded once
// for all of them.
template <int kY, int kVecs, typename Rows>
void weighted_sum_held(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  for (int64_t c = 0; c < n; c += 16 * kVecs) {
    __mmask16 m[kVecs];
    __m512 acc[kY][kVecs];
    for (int k = 0; k < kVecs; ++k) {
      const int64_t left = n - c - 16 * k;
      m[k] = left > 0 ? lane_mask(left) : static_cast<__mmask16>(0);
      for (int i = 0; i < kY; ++i) {
        acc[i][k] = _mm512_maskz_loadu_ps(m[k], y + i * y_stride + c + 16 * k);
      }
    }
    for (int64_t j = 0; j < rows.rows.n; ++j) {
      if (c == 0) rows.prefetch(j, n);
      __m512 rv[kVecs];
      for (int k = 0; k < kVecs; ++k) rv[k] = rows.load(j, c + 16 * k, m[k]);
      for (int i = 0; i < kY; ++i) {
        const __m512 wj = _mm512_set1_ps(w.row(i)[j]);
        for (int k = 0; k < kVecs; ++k) acc[i][k] = _mm512_fmadd_ps(wj, rv[k], acc[i][k]);
      }
    }
    for (int i = 0; i < kY; ++i) {
      for (int k = 0; k < kVecs; ++k) {
        _mm512_mask_storeu_ps(y + i * y_stride + c + 16 * k, m[k], acc[i][k]);
      }
    }
  }
}

// weighted_sum_held for kY rows of y: a 128-float row in one pass over the rows where its
// accumulators fit the registers with the row's (kY <= 2: 24 of 32), else 64 floats a pass.
template <int kY, typename Rows>
void weighted_sum_y(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  if constexpr (kY <= 2) {
    if (n > 64 && n <= 128) {
      weighted_sum_held<kY, 8>(w, rows, n, y, y_stride);
      return;
    }
  }
  weighted_sum_held<kY, 4>(w, rows, n, y, y_stride);
}

template <typename Rows>
void weighted_sum_rows(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  constexpr int kMaxY = 4;  // 16 accumulators
  int64_t i = 0;
  for (; i + kMaxY <= w.n; i += kMaxY) {
    weighted_sum_y<kMaxY>({w.row(i), kMaxY, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
  // The last w.n % kMaxY rows in one pass over the rows too.
  float* rest = y + i * y_stride;
  switch (w.n - i) {
    case 3:
      weighted_sum_y<3>({w.row(i), 3, w.stride}, rows, n, rest, y_stride);
      break;
    case 2:
      weighted_sum_y<2>({w.row(i), 2, w.stride}, rows, n, rest, y_stride);
      break;
    case 1:
      weighted_sum_y<1>({w.row(i), 1, w.stride}, rows, n, rest, y_stride);
      break;
    default:
      break;
  }
}

}  // namespace

void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows(w, F32Loader{rows}, n, y, y_stride);
}

void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows(w, F16Loader{rows}, n, y, y_stride);
}

void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows(w, Q8Loader{rows}, n, y, y_stride);
}

void f16_to_f32(const uint16_t* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

void f32_to_f16(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(y + i, m, h);
  }
}

void bf16_to_f32(const uint16_t* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
  }
}

void f32_to_bf16(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, f32_to_bf16_16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void act_f16(const float* x, void* y, int64_t n) {
  f32_to_f16(x, n, static_cast<uint16_t*>(y));
}

void act_bf16(const float* x, void* y, int64_t n) {
  f32_to_bf16(x, n, static_cast<uint16_t*>(y));
}

void cells_to_f32_f16(const void* x, float* y, int64_t n) {
  f16_to_f32(static_cast<const uint16_t*>(x), n, y);
}

}  // namespace minfer::kernels::avx512
