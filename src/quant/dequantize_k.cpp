// K-quant and Q8_K dequantizers: x = (scale of the sub-block) * q - (min of the sub-block),
// evaluated in the same float operation order as llama.cpp's dequantize_row_*_K so the floats
// are identical.
#include "quant/fp16.h"
#include "quant/quantize.h"

namespace minfer {

void dequantize_row_q2_K(const BlockQ2K* x, float* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    int is = 0;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = x[i].qs + 32 * h;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half, ++is) {
          const uint8_t sc = x[i].scales[is];
          const float dl = d * static_cast<float>(sc & 0xf);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[16 * half + l] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

void dequantize_row_q3_K(const BlockQ3K* x, float* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    int is = 0;
    int k = 0;  // index of the hmask bit: element 32k + l
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = x[i].qs + 32 * h;
      for (int shift = 0; shift < 8; shift += 2, ++k) {
        for (int half = 0; half < 2; ++half, ++is) {
          const float dl = d_all * static_cast<float>(q3k_scale(is, x[i].scales));
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int high = (x[i].hmask[l] >> k) & 1;
            const int level = ((q[l] >> shift) & 3) - (high ? 0 : 4);
            *y++ = dl * static_cast<float>(level);
          }
        }
      }
    }
  }
}

namespace {

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit (scale, min) pairs; chunk c holds sub-block 2c in
// the low nibbles of qs[32c..32c+31] and 2c + 1 in the high ones. Q5_K adds each element's fifth
// bit from qh (element 32k + l in bit k of qh[l]); `fifth_bit(block, l, k)` returns it as 0 or 16.
template <typename Block, typename FifthBit>
void dequantize_row_k4(const Block* x, float* y, int64_t n, FifthBit fifth_bit) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    for (int c = 0; c < kQKK / 64; ++c) {
      const uint8_t* q = x[i].qs + 32 * c;
      const ScaleMin lo = k4_scale_min(2 * c, x[i].scales);
      const ScaleMin hi = k4_scale_min(2 * c + 1, x[i].scales);
      const float d1 = d * static_cast<float>(lo.scale);
      const float m1 = dmin * static_cast<float>(lo.min);
      const float d2 = d * static_cast<float>(hi.scale);
      const float m2 = dmin * static_cast<float>(hi.min);
      for (int l = 0; l < 32; ++l) {
        const int level = (q[l] & 0xf) | fifth_bit(x[i], l, 2 * c);
        *y++ = d1 * static_cast<float>(level) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int level = (q[l] >> 4) | fifth_bit(x[i], l, 2 * c + 1);
        *y++ = d2 * static_cast<float>(level) - m2;
      }
    }
  }
}

}  // namespace

void dequantize_row_q4_K(const BlockQ4K* x, float* y, int64_t n) {
  dequantize_row_k4(x, y, n, [](const BlockQ4K&, int, int) { return 0; });
}

void dequantize_row_q5_K(const BlockQ5K* x, float* y, int64_t n) {
  dequantize_row_k4(
      x, y, n, [](const BlockQ5K& block, int l, int k) { return ((block.qh[l] >> k) & 1) << 4; });
}

void dequantize_row_q6_K(const BlockQ6K* x, float* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[i].ql + 64 * h;
      const uint8_t* qh = x[i].qh + 32 * h;
      const int8_t* sc = x[i].scales + 8 * h;
      float* yh = y + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        yh[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        yh[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        yh[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        yh[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
    y += kQKK;
  }
}

void dequantize_row_q8_K(const BlockQ8K* x, float* y, int64_t n) {
  const int64_t nb = n / kQKK;
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    for (int j = 0; j < kQKK; ++j) y[j] = x[i].d * static_cast<float>(x[i].qs[j]);
  }
}

}  // namespace minfer
