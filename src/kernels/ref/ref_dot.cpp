// Reference dot products of the float types and the 32-element block types, with llama.cpp's
// scalar semantics (ggml-cpu vec.cpp ggml_vec_dot_{f32,f16,bf16}, quants.c
// ggml_vec_dot_q*_q8_*_generic): an exact integer sum per block, then one float multiply-add
// by the block scales; float products summed in double for the float types.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/ref/ref_dot.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace minfer::ref {

void vec_dot_f32(int n, float* s, const void* x, const void* y) {
  const float* a = static_cast<const float*>(x);
  const float* b = static_cast<const float*>(y);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(a[i] * b[i]);
  *s = static_cast<float>(sum);
}

void vec_dot_f16(int n, float* s, const void* x, const void* y) {
  const uint16_t* a = static_cast<const uint16_t*>(x);
  const uint16_t* b = static_cast<const uint16_t*>(y);
  double sum = 0.0;
  // The float product of two f16 values is exact (11 + 11 significant bits).
  for (int i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
  *s = static_cast<float>(sum);
}

void vec_dot_bf16(int n, float* s, const void* x, const void* y) {
  const uint16_t* a = static_cast<const uint16_t*>(x);
  const uint16_t* b = static_cast<const uint16_t*>(y);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]));
  *s = static_cast<float>(sum);
}

namespace {

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

void vec_dot_q4_0_q8_0(int n, float* s, const void* x, const void* y) {
  const BlockQ4_0* bx = static_cast<const BlockQ4_0*>(x);
  const BlockQ8_0* by = static_cast<const BlockQ8_0*>(y);
  const int nb = n / kQK8_0;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      sumi += ((bx[i].qs[j] & 0xf) - 8) * by[i].qs[j];
      sumi += ((bx[i].qs[j] >> 4) - 8) * by[i].qs[j + kQK8_0 / 2];
    }
    sum += static_cast<float>(sumi) * fp16_to_fp32(bx[i].d) * fp16_to_fp32(by[i].d);
  }
  *s = sum;
}

namespace {

// llama.cpp's x86 order for the Q4_1 / Q5_1 dots (arch/x86/quants.c ggml_vec_dot_q4_1_q8_1,
// ggml_vec_dot_q5_1_q8_1): per block, the integer sums of elements 4l..4l+3 (l = 0..7) feed 8
// float lanes by fma(d_x d_y, sum, lane); the m_x s_y terms are summed apart; the result is
// hsum_float_8 of the lanes (((0+4)+(2+6))+((1+5)+(3+7))) plus that sum. Matching this order
// (not the generic one) is what makes the Q4_1 golden agree with llama.cpp to 1e-13.
struct MinDotState {
  float lane[8] = {};
  float summs = 0.0f;
  float result() const { return hsum_float_8(lane) + summs; }
};

}  // namespace

void vec_dot_q4_1_q8_1(int n, float* s, const void* x, const void* y) {
  const BlockQ4_1* bx = static_cast<const BlockQ4_1*>(x);
  const BlockQ8_1* by = static_cast<const BlockQ8_1*>(y);
  const int nb = n / kQK8_1;
  MinDotState st;
  for (int i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(bx[i].d) * fp16_to_fp32(by[i].d);
    // sum_j (d_x q_j + m_x) d_y p_j = d_x d_y sum(q p) + m_x * (d_y sum p), the latter is s_y.
    st.summs += fp16_to_fp32(bx[i].m) * fp16_to_fp32(by[i].s);
    for (int l = 0; l < 8; ++l) {
      int p = 0;
      for (int e = 4 * l; e < 4 * l + 4; ++e) {
        const int q = e < 16 ? (bx[i].qs[e] & 0xf) : (bx[i].qs[e - 16] >> 4);
        p += q * by[i].qs[e];
      }
      st.lane[l] = std::fma(d, static_cast<float>(p), st.lane[l]);
    }
  }
  *s = st.result();
}

void vec_dot_q5_0_q8_0(int n, float* s, const void* x, const void* y) {
  const BlockQ5_0* bx = static_cast<const BlockQ5_0*>(x);
  const BlockQ8_0* by = static_cast<const BlockQ8_0*>(y);
  const int nb = n / kQK8_0;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    const uint32_t qh = load_u32(bx[i].qh);
    int sumi = 0;
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + kQK8_0 / 2)) & 1u) << 4;
      sumi += (((bx[i].qs[j] & 0xf) | h0) - 16) * by[i].qs[j];
      sumi += (((bx[i].qs[j] >> 4) | h1) - 16) * by[i].qs[j + kQK8_0 / 2];
    }
    sum += fp16_to_fp32(bx[i].d) * fp16_to_fp32(by[i].d) * static_cast<float>(sumi);
  }
  *s = sum;
}

void vec_dot_q5_1_q8_1(int n, float* s, const void* x, const void* y) {
  const BlockQ5_1* bx = static_cast<const BlockQ5_1*>(x);
  const BlockQ8_1* by = static_cast<const BlockQ8_1*>(y);
  const int nb = n / kQK8_1;
  MinDotState st;
  for (int i = 0; i < nb; ++i) {
    const uint32_t qh = load_u32(bx[i].qh);
    const float d = fp16_to_fp32(bx[i].d) * fp16_to_fp32(by[i].d);
    st.summs += fp16_to_fp32(bx[i].m) * fp16_to_fp32(by[i].s);
    for (int l = 0; l < 8; ++l) {
      int p = 0;
      for (int e = 4 * l; e < 4 * l + 4; ++e) {
        const int low = e < 16 ? (bx[i].qs[e] & 0xf) : (bx[i].qs[e - 16] >> 4);
        p += (low | static_cast<int>(((qh >> e) & 1u) << 4)) * by[i].qs[e];
      }
      st.lane[l] = std::fma(d, static_cast<float>(p), st.lane[l]);
    }
  }
  *s = st.result();
}

// llama.cpp's x86 order (arch/x86/quants.c ggml_vec_dot_q8_0_q8_0, and llamafile's tinyBLAS_Q0
// for GEMMs): the integer sums of elements 4l..4l+3 feed 8 float lanes by fma(d_x d_y, sum,
// lane), summed at the end in hsum_float_8's order.
void vec_dot_q8_0_q8_0(int n, float* s, const void* x, const void* y) {
  const BlockQ8_0* bx = static_cast<const BlockQ8_0*>(x);
  const BlockQ8_0* by = static_cast<const BlockQ8_0*>(y);
  const int nb = n / kQK8_0;
  float lane[8] = {};
  for (int i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(bx[i].d) * fp16_to_fp32(by[i].d);
    for (int l = 0; l < 8; ++l) {
      int p = 0;
      for (int e = 4 * l; e < 4 * l + 4; ++e) p += bx[i].qs[e] * by[i].qs[e];
      lane[l] = std::fma(d, static_cast<float>(p), lane[l]);
    }
  }
  *s = hsum_float_8(lane);
}

// llama.cpp's MXFP4 dot as its x86 CPU backend runs the experts (their rows repacked 8x8 at
// load, arch/x86/repack.cpp gemv_q4_b32_8x8_q8_0_lut_avx): per block the exact integer sum of
// table value times quant, then sum = fma(sumi, 2^(e - 128) · d_y, sum).
void vec_dot_mxfp4_q8_0(int n, float* s, const void* x, const void* y) {
  const BlockMxfp4* bx = static_cast<const BlockMxfp4*>(x);
  const BlockQ8_0* by = static_cast<const BlockQ8_0*>(y);
  const int nb = n / kQKMxfp4;
  float sum = 0.0f;
  for (int i = 0; i < nb; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQKMxfp4 / 2; ++j) {
      sumi += kMxfp4Values[bx[i].qs[j] & 0xf] * by[i].qs[j];
      sumi += kMxfp4Values[bx[i].qs[j] >> 4] * by[i].qs[j + kQKMxfp4 / 2];
    }
    const float d = e8m0_to_fp32_half(bx[i].e) * fp16_to_fp32(by[i].d);
    sum = std::fma(static_cast<float>(sumi), d, sum);
  }
  *s = sum;
}

VecDotFn vec_dot_for(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::kF32:
      return vec_dot_f32;
    case GgmlType::kF16:
      return vec_dot_f16;
    case GgmlType::kBF16:
      return vec_dot_bf16;
    case GgmlType::kQ4_0:
      return vec_dot_q4_0_q8_0;
    case GgmlType::kQ4_1:
      return vec_dot_q4_1_q8_1;
    case GgmlType::kQ5_0:
      return vec_dot_q5_0_q8_0;
    case GgmlType::kQ5_1:
      return vec_dot_q5_1_q8_1;
    case GgmlType::kQ8_0:
      return vec_dot_q8_0_q8_0;
    case GgmlType::kMXFP4:
      return vec_dot_mxfp4_q8_0;
    case GgmlType::kQ2_K:
      return vec_dot_q2_K_q8_K;
    case GgmlType::kQ3_K:
      return vec_dot_q3_K_q8_K;
    case GgmlType::kQ4_K:
      return vec_dot_q4_K_q8_K;
    case GgmlType::kQ5_K:
      return vec_dot_q5_K_q8_K;
    case GgmlType::kQ6_K:
      return vec_dot_q6_K_q8_K;
    default:
      return nullptr;
  }
}

}  // namespace minfer::ref
