// The K-quant reference quantizers (Q2_K … Q6_K) and Q8_K, following llama.cpp's
// quantize_row_{q2,q3,q4,q5,q6,q8}_K_ref: search per-sub-block scales (k_quant_search.h),
// quantize those scales to 4, 6 or 8 bits against one f16 super-block scale, then requantize
// every element with the scales as stored, so the quants fit the decoded scales.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_stats.h"
#include "quant/fp16.h"
#include "quant/k_quant_search.h"
#include "quant/quantize.h"

namespace minfer {

using kquant::nearest_int;
using quant_util::clamp_int;
using quant_util::signed_absmax;

namespace {

// Packs 2-bit levels L[256] the Q2_K/Q3_K way: qs[32h + l] holds L[128h + 32k + l] in bits 2k.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < kQKK; h += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[h / 4 + l] = static_cast<uint8_t>(L[h + l] | (L[h + l + 32] << 2) | (L[h + l + 64] << 4) |
                                           (L[h + l + 96] << 6));
    }
  }
}

// Packs 6-bit (scale, min) pairs of 8 sub-blocks the Q4_K/Q5_K way (inverse of k4_scale_min).
void pack_k4_scales(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  for (int j = 0; j < kQKK / 32; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xf) | ((lm[j] & 0xf) << 4));
      scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
      scales[j] = static_cast<uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
    }
  }
}

// The shared body of Q4_K and Q5_K: per 32-element sub-block (scale, min) search with weights
// rms(sub-block) + |x|, 6-bit scales and mins relative to the largest of each, then the levels
// L[256] in [0, nmax] requantized with the stored values. Writes d, dmin and scales.
void quantize_k4_superblock(const float* x, int nmax, float rmin, float rdelta, int nstep,
                            uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales_out, uint8_t* L) {
  float weights[32];        // [32]
  uint8_t aux[32];          // [32]
  float mins[kQKK / 32];    // [8]
  float scales[kQKK / 32];  // [8]
  float max_scale = 0.0f;   // scales are >= 0 because the minimum is subtracted
  float max_min = 0.0f;
  for (int j = 0; j < kQKK / 32; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = kquant::make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], aux, rmin,
                                         rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[kQKK / 32];  // [8]
  uint8_t lm[kQKK / 32];  // [8]
  for (int j = 0; j < kQKK / 32; ++j) {
    // Narrow to 8 bits before clamping, as the reference does (matters only for a negative
    // scale from a degenerate least-squares fit, which then saturates to 63).
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  std::memset(scales_out, 0, kKScaleBytes);
  pack_k4_scales(ls, lm, scales_out);
  *d_out = fp32_to_fp16(max_scale / 63.0f);
  *dmin_out = fp32_to_fp16(max_min / 63.0f);
  const float d_all = fp16_to_fp32(*d_out);
  const float dmin_all = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < kQKK / 32; ++j) {
    const ScaleMin sm = k4_scale_min(j, scales_out);
    const float d = d_all * static_cast<float>(sm.scale);
    if (d == 0.0f) continue;  // keep the search's levels (they decode to -dm anyway)
    const float dm = dmin_all * static_cast<float>(sm.min);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_row_q2_K(const float* x, BlockQ2K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  constexpr float kScaleLevels = 15.0f;  // 4-bit scales and mins
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    uint8_t L[kQKK];          // [256] levels in [0, 3]
    uint8_t aux[16];          // [16]
    float weights[16];        // [16]
    float mins[kQKK / 16];    // [16]
    float scales[kQKK / 16];  // [16]
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < kQKK / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = kquant::make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], aux,
                                           -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0.0f) {
      const float iscale = kScaleLevels / max_scale;
      for (int j = 0; j < kQKK / 16; ++j) {
        y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      }
      y[i].d = fp32_to_fp16(max_scale / kScaleLevels);
    } else {
      std::memset(y[i].scales, 0, sizeof(y[i].scales));
      y[i].d = fp32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kScaleLevels / max_min;
      for (int j = 0; j < kQKK / 16; ++j) {
        y[i].scales[j] =
            static_cast<uint8_t>(y[i].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      y[i].dmin = fp32_to_fp16(max_min / kScaleLevels);
    } else {
      y[i].dmin = fp32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_fp32(y[i].d);
    const float dmin_all = fp16_to_fp32(y[i].dmin);
    for (int j = 0; j < kQKK / 16; ++j) {
      const float d = d_all * static_cast<float>(y[i].scales[j] & 0xf);
      if (d == 0.0f) continue;
      const float dm = dmin_all * static_cast<float>(y[i].scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

void quantize_row_q3_K(const float* x, BlockQ3K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    int8_t L[kQKK];           // [256] levels in [0, 7]
    float scales[kQKK / 16];  // [16] signed sub-block scales
    for (int j = 0; j < kQKK / 16; ++j) {
      scales[j] = kquant::make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
    }
    // The scale of largest magnitude, with its sign.
    const float max_scale = signed_absmax(scales, kQKK / 16).value;
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    if (max_scale != 0.0f) {
      // 6-bit signed scales in [-32, 31]; the largest maps to -32.
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kQKK / 16; ++j) {
        const int l = clamp_int(nearest_int(iscale * scales[j]), -32, 31) + 32;
        if (j < 8) {
          y[i].scales[j] = static_cast<uint8_t>(l & 0xf);
        } else {
          y[i].scales[j - 8] = static_cast<uint8_t>(y[i].scales[j - 8] | ((l & 0xf) << 4));
        }
        y[i].scales[8 + j % 4] =
            static_cast<uint8_t>(y[i].scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      y[i].d = fp32_to_fp16(1.0f / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_fp32(y[i].d);
    for (int j = 0; j < kQKK / 16; ++j) {
      const float d = d_all * static_cast<float>(q3k_scale(j, y[i].scales));
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    // Bit 2 of element 32k + l goes to bit k of hmask[l]; the low 2 bits are packed like Q2_K.
    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    uint8_t low[kQKK];  // [256]
    for (int j = 0; j < kQKK; ++j) {
      int level = L[j];
      if (level > 3) {
        y[i].hmask[j % 32] = static_cast<uint8_t>(y[i].hmask[j % 32] | (1u << (j / 32)));
        level -= 4;
      }
      low[j] = static_cast<uint8_t>(level);
    }
    pack_2bit(low, y[i].qs);
  }
}

void quantize_row_q4_K(const float* x, BlockQ4K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    uint8_t L[kQKK];  // [256] levels in [0, 15]
    quantize_k4_superblock(x, 15, -1.0f, 0.1f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
      }
    }
  }
}

void quantize_row_q5_K(const float* x, BlockQ5K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    uint8_t L[kQKK];  // [256] levels in [0, 31]
    quantize_k4_superblock(x, 31, -0.5f, 0.1f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l];
        const int hi = L[64 * c + 32 + l];
        // Fifth bits: element 32k + l in bit k of qh[l], k = 2c (lo) and 2c + 1 (hi).
        y[i].qh[l] =
            static_cast<uint8_t>(y[i].qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        y[i].qs[32 * c + l] = static_cast<uint8_t>((lo & 0xf) | ((hi & 0xf) << 4));
      }
    }
  }
}

void quantize_row_q6_K(const float* x, BlockQ6K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    int8_t L[kQKK];           // [256] levels in [0, 63]
    float scales[kQKK / 16];  // [16]
    for (int j = 0; j < kQKK / 16; ++j) {
      scales[j] = kquant::make_qx_quants(16, 32, x + 16 * j, L + 16 * j);
    }
    const auto [max_scale, max_abs_scale] = signed_absmax(scales, kQKK / 16);
    if (max_abs_scale < kquant::kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof(BlockQ6K));
      continue;
    }
    // 8-bit signed scales; the largest maps to -128.
    const float iscale = -128.0f / max_scale;
    y[i].d = fp32_to_fp16(1.0f / iscale);
    for (int j = 0; j < kQKK / 16; ++j) {
      y[i].scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    const float d_all = fp16_to_fp32(y[i].d);
    for (int j = 0; j < kQKK / 16; ++j) {
      const float d = d_all * static_cast<float>(y[i].scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      uint8_t* ql = y[i].ql + 64 * h;
      uint8_t* qh = y[i].qh + 32 * h;
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((Lh[l] & 0xf) | ((Lh[l + 64] & 0xf) << 4));
        ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xf) | ((Lh[l + 96] & 0xf) << 4));
        qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                     ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_row_q8_K(const float* x, BlockQ8K* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    const auto [max, amax] = signed_absmax(x, kQKK);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8K));
      continue;
    }
    // -127 (not -128) so that the extreme is exactly +-127 and q never needs 8-bit negation.
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQKK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    }
    for (int j = 0; j < kQKK / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace minfer
