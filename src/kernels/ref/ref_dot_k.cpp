// Reference dot products of the K-quants with Q8_K activations. Q2_K … Q5_K: llama.cpp's
// ggml_vec_dot_q*_K_q8_K_generic semantics: per super-block, an exact integer sum of
// (sub-block scale) * (sub-block sum of q_x q_y); the minimum terms of Q2_K/Q4_K/Q5_K come from
// Q8_K's per-16 bsums; then one float step d_x d_y * isum - dmin_x d_y * summins. Q6_K: its x86
// order (below).
#include <cmath>
#include <cstdint>

#include "kernels/ref/ref_dot.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quantize.h"

namespace minfer::ref {

void vec_dot_q2_K_q8_K(int n, float* s, const void* x, const void* y) {
  const BlockQ2K* bx = static_cast<const BlockQ2K*>(x);
  const BlockQ8K* by = static_cast<const BlockQ8K*>(y);
  const int nb = n / kQKK;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    int summins = 0;
    for (int j = 0; j < kQKK / 16; ++j) summins += by[i].bsums[j] * (bx[i].scales[j] >> 4);
    int isum = 0;
    int is = 0;
    const int8_t* q8 = by[i].qs;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q2 = bx[i].qs + 32 * h;
      for (int shift = 0; shift < 8; shift += 2, q8 += 32) {
        for (int half = 0; half < 2; ++half, ++is) {
          int sub = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) sub += q8[l] * ((q2[l] >> shift) & 3);
          isum += (bx[i].scales[is] & 0xf) * sub;
        }
      }
    }
    const float dall = by[i].d * fp16_to_fp32(bx[i].d);
    const float dmin = by[i].d * fp16_to_fp32(bx[i].dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summins);
  }
  *s = sum;
}

void vec_dot_q3_K_q8_K(int n, float* s, const void* x, const void* y) {
  const BlockQ3K* bx = static_cast<const BlockQ3K*>(x);
  const BlockQ8K* by = static_cast<const BlockQ8K*>(y);
  const int nb = n / kQKK;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    int isum = 0;
    int is = 0;
    int k = 0;  // hmask bit of element 32k + l
    const int8_t* q8 = by[i].qs;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q3 = bx[i].qs + 32 * h;
      for (int shift = 0; shift < 8; shift += 2, ++k, q8 += 32) {
        for (int half = 0; half < 2; ++half, ++is) {
          int sub = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int level = ((q3[l] >> shift) & 3) - (((bx[i].hmask[l] >> k) & 1) ? 0 : 4);
            sub += q8[l] * level;
          }
          isum += q3k_scale(is, bx[i].scales) * sub;
        }
      }
    }
    sum += fp16_to_fp32(bx[i].d) * by[i].d * static_cast<float>(isum);
  }
  *s = sum;
}

namespace {

// Q4_K and Q5_K share everything but the fifth bit; `qh` is null for Q4_K.
float dot_k4_superblock(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs,
                        const uint8_t* qh, const BlockQ8K& by) {
  int summins = 0;
  int isum = 0;
  for (int j = 0; j < kQKK / 32; ++j) {
    const ScaleMin sm = k4_scale_min(j, scales);
    // Sub-block j covers bsums 2j and 2j + 1.
    summins += sm.min * (by.bsums[2 * j] + by.bsums[2 * j + 1]);
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    const int8_t* q8 = by.qs + 32 * j;
    int sub = 0;
    for (int l = 0; l < 32; ++l) {
      int level = (q[l] >> shift) & 0xf;
      if (qh != nullptr) level |= ((qh[l] >> j) & 1) << 4;
      sub += q8[l] * level;
    }
    isum += sm.scale * sub;
  }
  return fp16_to_fp32(d) * by.d * static_cast<float>(isum) -
         fp16_to_fp32(dmin) * by.d * static_cast<float>(summins);
}

}  // namespace

void vec_dot_q4_K_q8_K(int n, float* s, const void* x, const void* y) {
  const BlockQ4K* bx = static_cast<const BlockQ4K*>(x);
  const BlockQ8K* by = static_cast<const BlockQ8K*>(y);
  const int nb = n / kQKK;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    sum += dot_k4_superblock(bx[i].d, bx[i].dmin, bx[i].scales, bx[i].qs, nullptr, by[i]);
  }
  *s = sum;
}

void vec_dot_q5_K_q8_K(int n, float* s, const void* x, const void* y) {
  const BlockQ5K* bx = static_cast<const BlockQ5K*>(x);
  const BlockQ8K* by = static_cast<const BlockQ8K*>(y);
  const int nb = n / kQKK;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    sum += dot_k4_superblock(bx[i].d, bx[i].dmin, bx[i].scales, bx[i].qs, bx[i].qh, by[i]);
  }
  *s = sum;
}

// llama.cpp's x86 order for Q6_K (arch/x86/quants.c ggml_vec_dot_q6_K_q8_K, its AVX2 path as
// rewritten in April 2026, "ggml-cpu: optimize avx2 q6_k", which the goldens' b10587 runs on any
// AVX2 or AVX-512 host): per super-block 8 integer lanes, lane l the sum over the block's eight
// 32-element groups of sc · Σ q · x over the group's elements 4l..4l+3 (q the stored 6-bit level
// 0..63; sc the scale of the group's first sub-block of 16 for l < 4, of its second for l >= 4),
// less 32 · (sc_2l bsums_2l + sc_2l+1 bsums_2l+1): the -32 of sub-blocks 2l and 2l + 1, taken
// from Q8_K's bsums. Each lane is fma'd into its own float lane by d_y d_x, and the result is
// hsum_float_8 of the lanes. The integers are exact in any order; the float steps are what a
// golden sees (a last-bit difference can flip an activation quant downstream).
void vec_dot_q6_K_q8_K(int n, float* s, const void* x, const void* y) {
  const BlockQ6K* bx = static_cast<const BlockQ6K*>(x);
  const BlockQ8K* by = static_cast<const BlockQ8K*>(y);
  const int nb = n / kQKK;
  float acc[8] = {};  // [lane]
  for (int i = 0; i < nb; ++i) {
    int lane[8] = {};
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = bx[i].ql + 64 * h;
      const uint8_t* qh = bx[i].qh + 32 * h;
      const int8_t* q8 = by[i].qs + 128 * h;
      // Element 128h + 32k + l: low nibble of ql[l + 32 (k & 1)] (k < 2) or its high nibble
      // (k >= 2), top bits 2k..2k+1 of qh[l]; sub-block 8h + 2k + l / 16.
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t low_byte = ql[l + 32 * (k & 1)];
          const int low = k < 2 ? (low_byte & 0xf) : (low_byte >> 4);
          const int level = low | (((qh[l] >> (2 * k)) & 3) << 4);
          lane[l / 4] += bx[i].scales[8 * h + 2 * k + l / 16] * level * q8[32 * k + l];
        }
      }
    }
    for (int l = 0; l < 8; ++l) {
      lane[l] -= 32 * (bx[i].scales[2 * l] * by[i].bsums[2 * l] +
                       bx[i].scales[2 * l + 1] * by[i].bsums[2 * l + 1]);
    }
    const float d = by[i].d * fp16_to_fp32(bx[i].d);
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(lane[l]), acc[l]);
  }
  *s = hsum_float_8(acc);
}

}  // namespace minfer::ref
