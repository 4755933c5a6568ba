// The element-wise, attention-helper and conversion kernels every table has (ref, avx2, avx512),
// declared once. Not a header of its own: ref/ref_kernels.h and simd_kernels_decl.h define
// MINFER_KERNEL_NAMESPACE and include this, so each ISA gets the same declarations, and the same
// table filler, in its own namespace. Semantics: kernel_table.h.

#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels::MINFER_KERNEL_NAMESPACE {

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y);
void softmax(const float* x, int64_t n, float* y);
double exp_sum(const float* x, float shift, int64_t n, float* y);
float max_f32(const float* x, int64_t n, float init);
void silu(const float* x, int64_t n, float* y);
void swiglu(const float* gate, const float* up, int64_t n, float* y);
void geglu(const float* gate, const float* up, int64_t n, float* y);
void add(const float* a, const float* b, int64_t n, float* y);
void mul(const float* a, const float* b, int64_t n, float* y);
void scale(const float* x, float s, int64_t n, float* y);
void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, int64_t n, float* y);
// Each pair's dot_f32 times scale (AVX-512 and AVX2 reduce 16 / 8 rows' lanes at once, in
// dot_f32's order), and each y row's axpy_f32s in order of j.
void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride);
void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride);
void ssm_conv(const float* const* rows, const float* taps, int64_t d_conv, int64_t n, float* y);
void l2_norm(const float* x, float eps, int64_t n, float* y);
void delta_rule_step(float* state, const float* q, const float* k, const float* v, float decay,
                     float beta, int64_t dk, int64_t dv, float* out);
void delta_rule_chunk(float* state, const DeltaChunk& c);
void f16_to_f32(const uint16_t* x, int64_t n, float* y);
void f32_to_f16(const float* x, int64_t n, uint16_t* y);
void bf16_to_f32(const uint16_t* x, int64_t n, float* y);
void f32_to_bf16(const float* x, int64_t n, uint16_t* y);

// Points the table's entries for the functions above at this ISA's.
constexpr void set_ops(KernelTable& t) {
  t.rms_norm = rms_norm;
  t.softmax = softmax;
  t.exp_sum = exp_sum;
  t.max_f32 = max_f32;
  t.silu = silu;
  t.swiglu = swiglu;
  t.geglu = geglu;
  t.add = add;
  t.mul = mul;
  t.scale = scale;
  t.rope = rope;
  t.dot_f32 = dot_f32;
  t.axpy_f32 = axpy_f32;
  t.dot_rows_f32 = dot_rows_f32;
  t.weighted_sum_f32 = weighted_sum_f32;
  t.ssm_conv = ssm_conv;
  t.l2_norm = l2_norm;
  t.delta_rule_step = delta_rule_step;
  t.delta_rule_chunk = delta_rule_chunk;
  t.f16_to_f32 = f16_to_f32;
  t.f32_to_f16 = f32_to_f16;
  t.bf16_to_f32 = bf16_to_f32;
  t.f32_to_bf16 = f32_to_bf16;
}

}  // namespace minfer::kernels::MINFER_KERNEL_NAMESPACE
