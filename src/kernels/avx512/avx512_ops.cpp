// AVX-512 vector ops (F/BW/VL/DQ): kernels/ops_impl.h on a 16-lane policy. Called only through
// avx512_table after dispatch has checked the CPU. Tails use masked loads and stores, so they run
// the same arithmetic as the body. No header with inline code of external linkage is included
// (see avx512_math.h for why).

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"
#include "kernels/delta_net_impl.h"
#include "kernels/ops_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

// The float vector policy of ops_impl.h: 16 lanes, mask registers for tails and predicates,
// fused multiply-adds. SiLU takes llama.cpp's AVX-512 ggml_v_expf on whole vectors and libm's
// expf after them, as ggml_vec_silu_f32 does (matching logits need both); softmax ops_impl.h's
// exp_taylor, as the other tables.
struct OpsAvx512 {
  using F = __m512;
  using D = __m512d;
  using B = __mmask16;
  using M = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr bool kSiluTailLibm = true;
  static constexpr bool kMaskedF16 = true;
  static constexpr ops::RowLoops kRowLoops = ops::RowLoops::kXInRegisters;

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static M first_lanes(int64_t n) { return lane_mask(n); }
  static bool any(M m) { return m != 0; }
  static F load(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, M m, F v) { _mm512_mask_storeu_ps(p, m, v); }
  static F load_partial(const float* p, int64_t n) { return load(p, lane_mask(n)); }
  static void store_partial(float* p, F v, int64_t n) { store(p, lane_mask(n), v); }
  static B tail_lanes(int64_t n) { return lane_mask(n); }
  static F select(B b, F yes, F no) { return _mm512_mask_mov_ps(no, b, yes); }
  static B ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static B le(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static B lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }

  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F axpy(F a, F x, F y) { return _mm512_fmadd_ps(a, x, y); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F round(F x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static F floor(F x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F exp2i(F n) {
    const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23));
  }
  // _mm512_max_ps(x, m) is x > m ? x : m, lane by lane.
  static F max_keep(F x, F m) { return _mm512_max_ps(x, m); }
  static float hmax(F m) { return _mm512_reduce_max_ps(m); }
  static float hsum(F v) { return hsum_ps(v); }
  // Lane r: hsum(v[r]), r < 16.
  static F hsum_rows(const F* v) { return hsum_rows_ps(v); }
  static F exp(F x) { return ops::exp_taylor<OpsAvx512>(x); }
  static F silu_exp(F x) { return exp_ps_ggml(x); }

  // NeoX: x0 c - x1 s and x0 s + x1 c, the second product of each rounded first.
  static void rotate(F& x0, F& x1, F c, F s) {
    const F r0 = _mm512_fmsub_ps(x0, c, _mm512_mul_ps(x1, s));
    x1 = _mm512_fmadd_ps(x0, s, _mm512_mul_ps(x1, c));
    x0 = r0;
  }
  // [c0 c0 c1 c1 …] from `pairs` (<= 8) angles.
  static F dup_pairs(const float* p, int64_t pairs) {
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(dup, _mm512_maskz_loadu_ps(lane_mask(pairs), p));
  }
  // Adjacent: x = [a0 b0 a1 b1 …]; fmaddsub gives even lanes a c - b s, odd lanes b c + a s.
  static F rotate_pairs(F v, F c, F s) {
    return _mm512_fmaddsub_ps(v, c, _mm512_mul_ps(_mm512_permute_ps(v, 0xB1), s));
  }
  static F gelu_lookup(F g, const float* table) {
    const __m256i h = _mm512_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
  }

  static D zero_pd() { return _mm512_setzero_pd(); }
  // Adds the 16 floats of v to two double accumulators (low and high halves).
  static void add_pd_halves(F v, D& acc0, D& acc1) {
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
  }
  static double sum_pd(D acc0, D acc1) {
    const __m512d v = _mm512_add_pd(acc0, acc1);
    const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }

  static F from_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void to_f16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static F from_bf16(const uint16_t* p) {
    const __m512i v =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static void to_bf16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), f32_to_bf16_16(v));
  }
  static F load_f16(const uint16_t* p) { return from_f16(p); }
  static F load_f16(const uint16_t* p, M m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static F load_bf16(const uint16_t* p, M m) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  // Values off .. off + 15 of a q8_0 block: d · q, exact in f32.
  static F load_q8(const BlockQ8_0& block, int64_t off) {
    const __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<int16_t>(block.d)));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs + off));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};

}  // namespace

MINFER_DEFINE_OPS(OpsAvx512)
MINFER_DEFINE_DELTA_NET_OPS(OpsAvx512)
MINFER_DEFINE_CELL_ROW_LOOPS(OpsAvx512)
MINFER_DEFINE_BF16_CELL_LOOPS(OpsAvx512)

}  // namespace minfer::kernels::avx512
