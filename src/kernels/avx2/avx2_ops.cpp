// AVX2 + FMA + F16C vector ops: kernels/ops_impl.h on an 8-lane policy. Compiled with -mavx2
// -mfma -mf16c: called only through avx2_table after dispatch has checked the CPU. Everything
// here is internal except the functions the table names, and no header with inline code of
// external linkage is included (an inline function compiled here with AVX2 could be picked by
// the linker for a caller on an older CPU).
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"
#include "kernels/delta_net_impl.h"
#include "kernels/ops_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx2 {
namespace {

// The lanes [0, n) of a vector, n in [0, 8].
__m256i lane_mask(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), index);
}

// hsum_ps of 8 vectors at once, each sum in hsum_ps's order (lanes i + i+4, then 0+2 and 1+3,
// then those two): lane 4h + k of the result is the sum of v[2k + h].
__m256 hsum8_ps(const __m256* v) {
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

// The float vector policy of ops_impl.h: 8 lanes, masked loads and stores for tails, fused
// multiply-adds, ops_impl.h's exp_taylor for softmax and SiLU alike.
struct OpsAvx2 {
  using F = __m256;
  using D = __m256d;
  using B = __m256;   // a lane predicate: all ones or zero
  using M = __m256i;  // a tail mask for maskload / maskstore
  static constexpr int kLanes = 8;
  static constexpr bool kSiluTailLibm = false;
  static constexpr bool kMaskedF16 = false;  // AVX2 has no masked 16-bit load
  static constexpr ops::RowLoops kRowLoops = ops::RowLoops::kXFromCache;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static M first_lanes(int64_t n) { return lane_mask(n); }
  static bool any(M m) { return _mm256_testz_si256(m, m) == 0; }
  static F load(const float* p, M m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, M m, F v) { _mm256_maskstore_ps(p, m, v); }
  static F load_partial(const float* p, int64_t n) { return load(p, lane_mask(n)); }
  static void store_partial(float* p, F v, int64_t n) { store(p, lane_mask(n), v); }
  static B tail_lanes(int64_t n) { return _mm256_castsi256_ps(lane_mask(n)); }
  static F select(B b, F yes, F no) { return _mm256_blendv_ps(no, yes, b); }
  static B ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static B le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static B lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }

  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F axpy(F a, F x, F y) { return _mm256_fmadd_ps(a, x, y); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F round(F x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F floor(F x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F exp2i(F n) {
    const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
  }
  // _mm256_max_ps(x, m) is x > m ? x : m, lane by lane.
  static F max_keep(F x, F m) { return _mm256_max_ps(x, m); }
  static float hmax(F m) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float result = lanes[0];
    for (int l = 1; l < 8; ++l) result = lanes[l] > result ? lanes[l] : result;
    return result;
  }
  static float hsum(F v) { return hsum_ps(v); }
  // Lane r: hsum(v[r]), r < 8.
  static F hsum_rows(const F* v) {
    return _mm256_permutevar8x32_ps(hsum8_ps(v), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static F exp(F x) { return ops::exp_taylor<OpsAvx2>(x); }
  static F silu_exp(F x) { return ops::exp_taylor<OpsAvx2>(x); }

  // NeoX: x0 c - x1 s and x0 s + x1 c, the second product of each rounded first.
  static void rotate(F& x0, F& x1, F c, F s) {
    const F r0 = _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s));
    x1 = _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c));
    x0 = r0;
  }
  // [c0 c0 c1 c1 …] from `pairs` (<= 4) angles.
  static F dup_pairs(const float* p, int64_t pairs) {
    const __m128 v =
        pairs == 4 ? _mm_loadu_ps(p) : _mm_maskload_ps(p, _mm256_castsi256_si128(lane_mask(pairs)));
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v),
                                    _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  }
  // Adjacent: x = [a0 b0 a1 b1 …]; fmaddsub gives even lanes a c - b s, odd lanes b c + a s.
  static F rotate_pairs(F v, F c, F s) {
    return _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(_mm256_permute_ps(v, 0xB1), s));
  }
  static F gelu_lookup(F g, const float* table) {
    const __m128i h = _mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
  }

  static D zero_pd() { return _mm256_setzero_pd(); }
  // Adds the 8 floats of v to two double accumulators (low and high halves).
  static void add_pd_halves(F v, D& acc0, D& acc1) {
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  static double sum_pd(D acc0, D acc1) {
    const __m256d v = _mm256_add_pd(acc0, acc1);
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }

  static F from_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void to_f16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static F from_bf16(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static void to_bf16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), f32_to_bf16_8(v));
  }
  // Cells read in place: whole vectors only (the row loops keep to them, see kMaskedF16).
  static F load_f16(const uint16_t* p) { return from_f16(p); }
  static F load_f16(const uint16_t* p, M /*whole*/) { return from_f16(p); }
  static F load_bf16(const uint16_t* p, M /*whole*/) { return from_bf16(p); }
  // Values off .. off + 7 of a q8_0 block: d · q, exact in f32.
  static F load_q8(const BlockQ8_0& block, int64_t off) {
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(block.d)));
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block.qs + off));
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
};

}  // namespace

MINFER_DEFINE_OPS(OpsAvx2)
MINFER_DEFINE_DELTA_NET_OPS(OpsAvx2)
MINFER_DEFINE_CELL_ROW_LOOPS(OpsAvx2)
MINFER_DEFINE_BF16_CELL_LOOPS(OpsAvx2)

}  // namespace minfer::kernels::avx2
