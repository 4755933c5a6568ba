// AVX2 + FMA + F16C vector ops. Compiled with -mavx2 -mfma -mf16c: called only through
// avx2_table after dispatch has checked the CPU. Everything here is internal except the
// functions the table names, and no header with inline code is included (an inline function
// compiled here with AVX2 could be picked by the linker for a caller on an older CPU).
#include <immintrin.h>

#include <algorithm>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"
#include "kernels/gelu_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx2 {
namespace {

// The lanes [0, n) of a vector, n in [0, 8].
__m256i lane_mask(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), index);
}

// Applies op to whole vectors, then to the tail through masked loads/stores so that tails run
// the same arithmetic as the body.
template <typename Op>
void map1(const float* x, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, op(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = lane_mask(n - i);
    _mm256_maskstore_ps(y + i, m, op(_mm256_maskload_ps(x + i, m)));
  }
}

template <typename Op>
void map2(const float* a, const float* b, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, op(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {
    const __m256i m = lane_mask(n - i);
    _mm256_maskstore_ps(y + i, m, op(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

__m256 silu_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(one, e));
}

// Adds the squares of 8 floats, each rounded to float as ggml does, to two double accumulators.
void add_squares(__m256 v, __m256d& acc0, __m256d& acc1) {
  const __m256 sq = _mm256_mul_ps(v, v);
  acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
  acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
}

void add_values(__m256 v, __m256d& acc0, __m256d& acc1) {
  acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

double hsum_pd(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

}  // namespace

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) add_squares(_mm256_loadu_ps(x + i), acc0, acc1);
  if (i < n) add_squares(_mm256_maskload_ps(x + i, lane_mask(n - i)), acc0, acc1);
  const double sum = hsum_pd(_mm256_add_pd(acc0, acc1));
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m256 scale = _mm256_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
  map2(x, w, n, y,
       [scale](__m256 xv, __m256 wv) { return _mm256_mul_ps(_mm256_mul_ps(xv, scale), wv); });
}

double exp_sum(const float* x, float shift, int64_t n, float* y) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  // Four vectors a step, summed in the same order: exp_ps is a long chain of dependent
  // operations, and one vector at a time left the core waiting on it.
  for (; i + 32 <= n; i += 32) {
    __m256 e[4];
    for (int k = 0; k < 4; ++k) e[k] = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8 * k), vs));
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_ps(y + i + 8 * k, e[k]);
      add_values(e[k], acc0, acc1);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    _mm256_storeu_ps(y + i, e);
    add_values(e, acc0, acc1);
  }
  if (i < n) {
    const __m256i m = lane_mask(n - i);
    // Masked-off lanes load 0 and give exp(0 - shift): zero them before summing.
    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vs)),
                                   _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(y + i, m, e);
    add_values(e, acc0, acc1);
  }
  return hsum_pd(_mm256_add_pd(acc0, acc1));
}

float max_f32(const float* x, int64_t n, float init) {
  // _mm256_max_ps(x, m) is x > m ? x : m, lane by lane; lanes past n keep m.
  __m256 m = _mm256_set1_ps(init);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  if (i < n) {
    const __m256i k = lane_mask(n - i);
    m = _mm256_blendv_ps(m, _mm256_max_ps(_mm256_maskload_ps(x + i, k), m), _mm256_castsi256_ps(k));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float result = lanes[0];
  for (int l = 1; l < 8; ++l) result = lanes[l] > result ? lanes[l] : result;
  return result;
}

void softmax(const float* x, int64_t n, float* y) {
  __m256 vmax = _mm256_set1_ps(-__builtin_inff());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float max = hmax_ps(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const float inv = static_cast<float>(1.0 / exp_sum(x, max, n, y));
  const __m256 vinv = _mm256_set1_ps(inv);
  map1(y, n, y, [vinv](__m256 v) { return _mm256_mul_ps(v, vinv); });
}

void silu(const float* x, int64_t n, float* y) {
  map1(x, n, y, silu_ps);
}

void swiglu(const float* gate, const float* up, int64_t n, float* y) {
  map2(gate, up, n, y, [](__m256 g, __m256 u) { return _mm256_mul_ps(silu_ps(g), u); });
}

void geglu(const float* gate, const float* up, int64_t n, float* y) {
  const float* table = gelu_f16_table();
  const __m256 low = _mm256_set1_ps(kGeluTableLow);
  const __m256 high = _mm256_set1_ps(kGeluTableHigh);
  map2(gate, up, n, y, [=](__m256 g, __m256 u) {
    // The f16 bits of g (round to nearest even, as fp32_to_fp16) index the table.
    const __m128i h = _mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 v = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
    v = _mm256_blendv_ps(v, g, _mm256_cmp_ps(g, high, _CMP_GE_OQ));
    v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(g, low, _CMP_LE_OQ));
    return _mm256_mul_ps(v, u);
  });
}

void add(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](__m256 u, __m256 v) { return _mm256_add_ps(u, v); });
}

void mul(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](__m256 u, __m256 v) { return _mm256_mul_ps(u, v); });
}

void scale(const float* x, float s, int64_t n, float* y) {
  const __m256 vs = _mm256_set1_ps(s);
  map1(x, n, y, [vs](__m256 v) { return _mm256_mul_ps(v, vs); });
}

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style) {
  const int64_t half = n_rot / 2;
  const float* cosv = cos_sin;
  const float* sinv = cos_sin + half;
  for (int64_t h = 0; h < n_head; ++h) {
    float* head = x + h * head_dim;
    int64_t i = 0;
    if (style == RopeStyle::kNeox) {
      for (; i + 8 <= half; i += 8) {
        const __m256 c = _mm256_loadu_ps(cosv + i), s = _mm256_loadu_ps(sinv + i);
        const __m256 x0 = _mm256_loadu_ps(head + i), x1 = _mm256_loadu_ps(head + half + i);
        _mm256_storeu_ps(head + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
        _mm256_storeu_ps(head + half + i, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
      }
      for (; i < half; ++i) {
        const float x0 = head[i], x1 = head[half + i];
        head[i] = __builtin_fmaf(x0, cosv[i], -(x1 * sinv[i]));
        head[half + i] = __builtin_fmaf(x0, sinv[i], x1 * cosv[i]);
      }
    } else {
      // 4 pairs per vector: x = [a0 b0 a1 b1 …], c = [c0 c0 c1 c1 …];
      // fmaddsub gives even lanes a*c - b*s and odd lanes b*c + a*s.
      const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
      for (; i + 4 <= half; i += 4) {
        const __m256 c =
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cosv + i)), dup);
        const __m256 s =
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sinv + i)), dup);
        const __m256 v = _mm256_loadu_ps(head + 2 * i);
        const __m256 swapped = _mm256_permute_ps(v, 0xB1);
        _mm256_storeu_ps(head + 2 * i, _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(swapped, s)));
      }
      for (; i < half; ++i) {
        const float x0 = head[2 * i], x1 = head[2 * i + 1];
        head[2 * i] = __builtin_fmaf(x0, cosv[i], -(x1 * sinv[i]));
        head[2 * i + 1] = __builtin_fmaf(x1, cosv[i], x0 * sinv[i]);
      }
    }
  }
}

void axpy_f32(float a, const float* x, int64_t n, float* y) {
  const __m256 va = _mm256_set1_ps(a);
  map2(x, y, n, y, [va](__m256 xv, __m256 yv) { return _mm256_fmadd_ps(va, xv, yv); });
}
namespace {

// Two accumulators over a · b, added: dot_f32 is their hsum_ps.
inline __m256 dot_lanes(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i < n; i += 8) {
    const __m256i m = lane_mask(n - i < 8 ? n - i : 8);
    acc0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), acc0);
  }
  return _mm256_add_ps(acc0, acc1);
}

// hsum_ps of 8 vectors at once, each sum in hsum_ps's order (lanes i + i+4, then 0+2 and 1+3,
// then those two): lane 4h + k of the result is the sum of v[2k + h].
inline __m256 hsum8_ps(const __m256* v) {
  __m256 w[4];  // w[p]: rows 2p | 2p+1 in the two halves, 4 partial sums each
  for (int p = 0; p < 4; ++p) {
    w[p] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x20),
                         _mm256_permute2f128_ps(v[2 * p], v[2 * p + 1], 0x31));
  }
  __m256 x[2];  // x[u], half h: rows 4u + h and 4u + 2 + h, 2 partial sums each
  for (int u = 0; u < 2; ++u) {
    x[u] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * u], w[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(w[2 * u], w[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return _mm256_add_ps(_mm256_shuffle_ps(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  return hsum_ps(dot_lanes(a, b, n));
}

namespace {

// The row order of hsum8_ps's lanes (lane 4h + k holds row 2k + h).
inline __m256i hsum8_row_order() {
  return _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
}

// One x against eight rows at a time: their lanes reduced together (hsum8_ps), then put back in
// row order.
void dot_rows_one(F32Rows rows, const float* x, int64_t n, float scale, float* out) {
  const __m256 vscale = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= rows.n; j += 8) {
    __m256 v[8];
    for (int r = 0; r < 8; ++r) v[r] = dot_lanes(rows.row(j + r), x, n);
    const __m256 sums = _mm256_permutevar8x32_ps(hsum8_ps(v), hsum8_row_order());
    _mm256_storeu_ps(out + j, _mm256_mul_ps(sums, vscale));
  }
  for (; j < rows.n; ++j) out[j] = dot_f32(rows.row(j), x, n) * scale;
}

// Rows of f32 floats or of f16 cells, loaded 8 floats at a time (f16 converted exactly).
struct F32Loader {
  F32Rows rows;
  void prefetch(int64_t /*j*/, int64_t /*n*/) const {}
  __m256 load(int64_t j, int64_t off) const { return _mm256_loadu_ps(rows.row(j) + off); }
  __m256 load(int64_t j, int64_t off, __m256i m) const {
    return _mm256_maskload_ps(rows.row(j) + off, m);
  }
};

// Only for widths that are a multiple of 32: AVX2 has no masked 16-bit load.
struct F16Loader {
  F16Rows rows;
  // Asks for row j of rows.prefetch (n cells), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch == nullptr) return;
    const auto* row = reinterpret_cast<const char*>(rows.prefetch + j * rows.stride);
    for (int64_t off = 0; off < n * 2; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
  }
  __m256 load(int64_t j, int64_t off) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.row(j) + off)));
  }
  __m256 load(int64_t j, int64_t off, __m256i /*full*/) const { return load(j, off); }
};

// Rows of q8_0 cells, n a multiple of 32 (no masked loads): d · q, exact in f32, as
// cells_to_f32 gives.
struct Q8Loader {
  Q8Rows rows;
  // Asks for row j of rows.prefetch (n values), when set.
  void prefetch(int64_t j, int64_t n) const {
    if (rows.prefetch == nullptr) return;
    const auto* row = reinterpret_cast<const char*>(rows.prefetch + j * rows.stride);
    for (int64_t off = 0; off < n / 32 * static_cast<int64_t>(sizeof(BlockQ8_0)); off += 64)
      _mm_prefetch(row + off, _MM_HINT_T0);
  }
  __m256 load(int64_t j, int64_t off) const {
    const BlockQ8_0& block = reinterpret_cast<const BlockQ8_0*>(rows.row(j))[off / 32];
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(block.d)));
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block.qs + off % 32));
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
  __m256 load(int64_t j, int64_t off, __m256i /*full*/) const { return load(j, off); }
};

// Rows [begin, end) of q8_0 cells (n values each), converted to f32 ([end - begin, n]).
std::vector<float> rows_to_f32(Q8Rows rows, int64_t begin, int64_t end, int64_t n) {
  const Q8Loader loader{rows};
  std::vector<float> out(static_cast<size_t>((end - begin) * n));
  for (int64_t j = begin; j < end; ++j) {
    for (int64_t off = 0; off < n; off += 8) {
      _mm256_storeu_ps(out.data() + (j - begin) * n + off, loader.load(j, off));
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

// kX x's (rows of x_stride floats) against eight rows at a time (n_rows a multiple of 8), n a
// multiple of 16: each row's vectors are loaded (and converted) once for all of them, the x's
// read from L1 by the multiply-adds (2 kX accumulators and the row's two vectors fill AVX2's 16
// registers at kX = 7), and each pair runs dot_lanes' operations in its order.
template <int kX, typename Rows>
void dot_rows_held(Rows rows, int64_t n_rows, const float* x, int64_t x_stride, int64_t n,
                   float scale, float* out, int64_t out_stride) {
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int64_t j = 0; j + 8 <= n_rows; j += 8) {
    __m256 v[kX][8];  // [x][row] dot_lanes' two accumulators, added
    for (int r = 0; r < 8; ++r) {
      rows.prefetch(j + r, n);
      __m256 a0[kX], a1[kX];
      for (int k = 0; k < kX; ++k) a0[k] = a1[k] = _mm256_setzero_ps();
      for (int64_t i = 0; i < n; i += 16) {
        const __m256 r0 = rows.load(j + r, i);
        const __m256 r1 = rows.load(j + r, i + 8);
        for (int k = 0; k < kX; ++k) {
          a0[k] = _mm256_fmadd_ps(r0, _mm256_loadu_ps(x + k * x_stride + i), a0[k]);
          a1[k] = _mm256_fmadd_ps(r1, _mm256_loadu_ps(x + k * x_stride + i + 8), a1[k]);
        }
      }
      for (int k = 0; k < kX; ++k) v[k][r] = _mm256_add_ps(a0[k], a1[k]);
    }
    for (int k = 0; k < kX; ++k) {
      _mm256_storeu_ps(
          out + k * out_stride + j,
          _mm256_mul_ps(_mm256_permutevar8x32_ps(hsum8_ps(v[k]), hsum8_row_order()), vscale));
    }
  }
}

// dot_rows_held for n_x x's (1 <= n_x <= kX) in one pass over the rows.
template <int kX, typename Rows>
void dot_rows_pass(Rows rows, int64_t n_rows, int64_t n_x, const float* x, int64_t x_stride,
                   int64_t n, float scale, float* out, int64_t out_stride) {
  if constexpr (kX > 1) {
    if (n_x < kX) {
      dot_rows_pass<kX - 1>(rows, n_rows, n_x, x, x_stride, n, scale, out, out_stride);
      return;
    }
  }
  dot_rows_held<kX>(rows, n_rows, x, x_stride, n, scale, out, out_stride);
}

// Every x against the first n_rows rows (a multiple of 8; n a multiple of 16), kMaxX x's a pass:
// a decode step's query heads of one KV head (7 for Qwen2.5-0.5B, 6 for 1.5B, 2 for Qwen3-0.6B)
// in one pass, each row loaded and converted once. (minfer_bench_attention under
// MINFER_FORCE_ISA=avx2, Zen 5 VM: DecodeStep/f16/4096 4.1-4.3 -> 3.5-4.0 ms against pairs of
// x's; 4 a pass measured as 7.)
template <typename Rows>
void dot_rows_x(Rows rows, int64_t n_rows, F32Rows x, int64_t n, float scale, float* out,
                int64_t out_stride) {
  constexpr int kMaxX = 7;
  for (int64_t i = 0; i < x.n; i += kMaxX) {
    dot_rows_pass<kMaxX>(rows, n_rows, std::min<int64_t>(kMaxX, x.n - i), x.row(i), x.stride, n,
                         scale, out + i * out_stride, out_stride);
  }
}

// kY rows of y stay in registers, 32 floats at a time, while every row is added with one fused
// multiply-add per element in order of j: axpy_f32's arithmetic, each row loaded once for all
// of them.
template <int kY, typename Rows>
void weighted_sum_held(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  for (int64_t c = 0; c < n; c += 32) {
    __m256i m[4];
    __m256 acc[kY][4];
    for (int k = 0; k < 4; ++k) {
      const int64_t left = n - c - 8 * k;
      m[k] = lane_mask(left < 0 ? 0 : (left > 8 ? 8 : left));
      for (int i = 0; i < kY; ++i)
        acc[i][k] = _mm256_maskload_ps(y + i * y_stride + c + 8 * k, m[k]);
    }
    const bool whole = c + 32 <= n;
    for (int64_t j = 0; j < rows.rows.n; ++j) {
      if (c == 0) rows.prefetch(j, n);
      __m256 rv[4];
      if (whole) {  // f32 rows: AVX2's masked loads cost more than plain ones
        for (int k = 0; k < 4; ++k) rv[k] = rows.load(j, c + 8 * k);
      } else {
        for (int k = 0; k < 4; ++k) rv[k] = rows.load(j, c + 8 * k, m[k]);
      }
      for (int i = 0; i < kY; ++i) {
        const __m256 wj = _mm256_set1_ps(w.row(i)[j]);
        for (int k = 0; k < 4; ++k) acc[i][k] = _mm256_fmadd_ps(wj, rv[k], acc[i][k]);
      }
    }
    for (int i = 0; i < kY; ++i) {
      for (int k = 0; k < 4; ++k)
        _mm256_maskstore_ps(y + i * y_stride + c + 8 * k, m[k], acc[i][k]);
    }
  }
}

// kY rows of y (up to 4) stay in registers 16 floats at a time, 2 kY accumulators beside the
// row's two vectors and the broadcast weight, with weighted_sum_held's arithmetic; each row is
// loaded once per 16 floats for all kY. A decode step's 7 heads take 4 + 3 passes over 16 floats
// instead of 2 + 2 + 2 + 1 over 32: even for f16 rows (the loop issues about as many operations),
// 0.78x the time for f32 rows (q8_0 cells converted), whose 32-float passes load each row 4
// times (minfer_bench_attention's kernels, L1-resident, Zen 5). n a multiple of 16.
template <int kY, typename Rows>
void weighted_sum_held16(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  for (int64_t c = 0; c < n; c += 16) {
    __m256 acc0[kY], acc1[kY];
    for (int i = 0; i < kY; ++i) {
      acc0[i] = _mm256_loadu_ps(y + i * y_stride + c);
      acc1[i] = _mm256_loadu_ps(y + i * y_stride + c + 8);
    }
    for (int64_t j = 0; j < rows.rows.n; ++j) {
      if (c == 0) rows.prefetch(j, n);
      const __m256 r0 = rows.load(j, c);
      const __m256 r1 = rows.load(j, c + 8);
      for (int i = 0; i < kY; ++i) {
        const __m256 wj = _mm256_set1_ps(w.row(i)[j]);
        acc0[i] = _mm256_fmadd_ps(wj, r0, acc0[i]);
        acc1[i] = _mm256_fmadd_ps(wj, r1, acc1[i]);
      }
    }
    for (int i = 0; i < kY; ++i) {
      _mm256_storeu_ps(y + i * y_stride + c, acc0[i]);
      _mm256_storeu_ps(y + i * y_stride + c + 8, acc1[i]);
    }
  }
}

// Groups of 3 or 4 y rows in weighted_sum_held16 (6 as 3 + 3), where n is a multiple of 16;
// returns how many rows it took (the last one or two are left to the 32-float passes, whose 8
// accumulators keep the multiply-adds busy where 2 or 4 would wait on each other).
template <typename Rows>
int64_t weighted_sum_groups16(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  if (n % 16 != 0) return 0;
  int64_t i = 0;
  while (w.n - i >= 3) {
    const int64_t left = w.n - i;
    const F32Rows group{w.row(i), left == 6 || left == 3 ? 3 : 4, w.stride};
    if (group.n == 3) {
      weighted_sum_held16<3>(group, rows, n, y + i * y_stride, y_stride);
    } else {
      weighted_sum_held16<4>(group, rows, n, y + i * y_stride, y_stride);
    }
    i += group.n;
  }
  return i;
}

template <typename Rows>
void weighted_sum_rows(F32Rows w, Rows rows, int64_t n, float* y, int64_t y_stride) {
  int64_t i = weighted_sum_groups16(w, rows, n, y, y_stride);
  for (; i + 2 <= w.n; i += 2) {
    weighted_sum_held<2>({w.row(i), 2, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
  for (; i < w.n; ++i) {
    weighted_sum_held<1>({w.row(i), 1, w.stride}, rows, n, y + i * y_stride, y_stride);
  }
}

}  // namespace

void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  if (n % 16 != 0) {
    for (int64_t i = 0; i < x.n; ++i) dot_rows_one(rows, x.row(i), n, scale, out + i * out_stride);
    return;
  }
  dot_rows_x(F32Loader{rows}, rows.n & ~int64_t{7}, x, n, scale, out, out_stride);
  // The rows after the last eight.
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t j = rows.n & ~int64_t{7}; j < rows.n; ++j) {
      out[i * out_stride + j] = dot_f32(rows.row(j), x.row(i), n) * scale;
    }
  }
}

void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  if (n % 16 != 0) {
    const std::vector<float> f32 = rows_to_f32(rows, 0, rows.n, n);
    dot_rows_f32({f32.data(), rows.n, n}, x, n, scale, out, out_stride);
    return;
  }
  const int64_t whole = rows.n & ~int64_t{7};
  dot_rows_x(F16Loader{rows}, whole, x, n, scale, out, out_stride);
  // The rows after the last eight, as f32 (dot_f32 runs dot_lanes' operations too).
  if (whole == rows.n) return;
  const std::vector<float> tail = rows_to_f32(rows, whole, rows.n, n);
  dot_rows_f32({tail.data(), rows.n - whole, n}, x, n, scale, out + whole, out_stride);
}

void dot_rows_q8_0(Q8Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  const int64_t whole = rows.n & ~int64_t{7};
  dot_rows_x(Q8Loader{rows}, whole, x, n, scale, out, out_stride);
  // The rows after the last eight, as f32 (dot_f32 runs dot_lanes' operations too).
  if (whole == rows.n) return;
  const std::vector<float> tail = rows_to_f32(rows, whole, rows.n, n);
  dot_rows_f32({tail.data(), rows.n - whole, n}, x, n, scale, out + whole, out_stride);
}

void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows(w, F32Loader{rows}, n, y, y_stride);
}

void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride) {
  if (n % 32 != 0) {
    const std::vector<float> f32 = rows_to_f32(rows, 0, rows.n, n);
    weighted_sum_f32(w, {f32.data(), rows.n, n}, n, y, y_stride);
    return;
  }
  weighted_sum_rows(w, F16Loader{rows}, n, y, y_stride);
}

void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride) {
  weighted_sum_rows(w, Q8Loader{rows}, n, y, y_stride);
}

void f16_to_f32(const uint16_t* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
}

void f32_to_f16(const float* x, int64_t n, uint16_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = f32_to_f16_scalar(x[i]);
}

void bf16_to_f32(const uint16_t* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
  }
  for (; i < n; ++i) {
    const __m256i v = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(x[i]) << 16));
    y[i] = _mm256_cvtss_f32(_mm256_castsi256_ps(v));
  }
}

void f32_to_bf16(const float* x, int64_t n, uint16_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i packed = f32_to_bf16_8(_mm256_loadu_ps(x + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), packed);
  }
  if (i < n) {
    alignas(32) float in[8] = {};
    alignas(16) uint16_t out[8];
    for (int64_t k = i; k < n; ++k) in[k - i] = x[k];
    _mm_store_si128(reinterpret_cast<__m128i*>(out), f32_to_bf16_8(_mm256_load_ps(in)));
    for (int64_t k = i; k < n; ++k) y[k] = out[k - i];
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

}  // namespace minfer::kernels::avx2
