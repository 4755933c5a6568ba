// ARMv8.0 NEON vector ops (every ARM64 CPU runs them). Tails go through the same vector
// arithmetic as the body (zero-padded lanes, only the real ones stored). add, mul, scale, rope,
// axpy_f32 and the conversions are the reference's arithmetic bit for bit; the exponentials use
// exp_ps (neon_math.h) and dot_f32 four fused lanes, as the x86 tables do.

// Separate multiplies and adds where the reference has them.
#pragma GCC optimize("fp-contract=off")

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/arm64/neon_math.h"
#include "kernels/gelu_table.h"

namespace minfer::kernels::neon {
namespace {

using arm64::exp_ps;
using arm64::load_partial;
using arm64::store_partial;

template <typename Op>
void map1(const float* x, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, op(vld1q_f32(x + i)));
  if (i < n) store_partial(y + i, op(load_partial(x + i, n - i)), n - i);
}

template <typename Op>
void map2(const float* a, const float* b, int64_t n, float* y, Op op) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, op(vld1q_f32(a + i), vld1q_f32(b + i)));
  if (i < n) {
    store_partial(y + i, op(load_partial(a + i, n - i), load_partial(b + i, n - i)), n - i);
  }
}

float32x4_t silu_ps(float32x4_t x) {
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp_ps(vnegq_f32(x))));
}

// Adds 4 floats to two double accumulators.
void add_values(float32x4_t v, float64x2_t& acc0, float64x2_t& acc1) {
  acc0 = vaddq_f64(acc0, vcvt_f64_f32(vget_low_f32(v)));
  acc1 = vaddq_f64(acc1, vcvt_high_f64_f32(v));
}

}  // namespace

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  // Each square rounded to float, as ggml, then summed in double.
  float64x2_t acc0 = vdupq_n_f64(0.0), acc1 = vdupq_n_f64(0.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    add_values(vmulq_f32(v, v), acc0, acc1);
  }
  if (i < n) {
    const float32x4_t v = load_partial(x + i, n - i);
    add_values(vmulq_f32(v, v), acc0, acc1);
  }
  const double sum = vaddvq_f64(vaddq_f64(acc0, acc1));
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float32x4_t scale = vdupq_n_f32(1.0f / __builtin_sqrtf(mean + eps));
  map2(x, w, n, y,
       [scale](float32x4_t xv, float32x4_t wv) { return vmulq_f32(vmulq_f32(xv, scale), wv); });
}

double exp_sum(const float* x, float shift, int64_t n, float* y) {
  const float32x4_t vs = vdupq_n_f32(shift);
  float64x2_t acc0 = vdupq_n_f64(0.0), acc1 = vdupq_n_f64(0.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = exp_ps(vsubq_f32(vld1q_f32(x + i), vs));
    vst1q_f32(y + i, e);
    add_values(e, acc0, acc1);
  }
  if (i < n) {
    // The padding lanes give exp(0 - shift): only the real lanes are stored and summed.
    float e[4];
    vst1q_f32(e, exp_ps(vsubq_f32(load_partial(x + i, n - i), vs)));
    for (int64_t k = n - i; k < 4; ++k) e[k] = 0.0f;
    const float32x4_t ev = vld1q_f32(e);
    store_partial(y + i, ev, n - i);
    add_values(ev, acc0, acc1);
  }
  return vaddvq_f64(vaddq_f64(acc0, acc1));
}

void softmax(const float* x, int64_t n, float* y) {
  float32x4_t vmax = vdupq_n_f32(-__builtin_inff());
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
  float max = vmaxvq_f32(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const float32x4_t inv = vdupq_n_f32(static_cast<float>(1.0 / exp_sum(x, max, n, y)));
  map1(y, n, y, [inv](float32x4_t v) { return vmulq_f32(v, inv); });
}

void silu(const float* x, int64_t n, float* y) {
  map1(x, n, y, silu_ps);
}

void swiglu(const float* gate, const float* up, int64_t n, float* y) {
  map2(gate, up, n, y, [](float32x4_t g, float32x4_t u) { return vmulq_f32(silu_ps(g), u); });
}

void geglu(const float* gate, const float* up, int64_t n, float* y) {
  const float* table = gelu_f16_table();
  const float32x4_t low = vdupq_n_f32(kGeluTableLow);
  const float32x4_t high = vdupq_n_f32(kGeluTableHigh);
  map2(gate, up, n, y, [=](float32x4_t g, float32x4_t u) {
    // The f16 bits of g (round to nearest even, as fp32_to_fp16) index the table.
    uint16_t h[4];
    vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(g)));
    const float looked_up[4] = {table[h[0]], table[h[1]], table[h[2]], table[h[3]]};
    float32x4_t v = vld1q_f32(looked_up);
    v = vbslq_f32(vcgeq_f32(g, high), g, v);
    v = vbslq_f32(vcleq_f32(g, low), vdupq_n_f32(0.0f), v);
    return vmulq_f32(v, u);
  });
}

void add(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](float32x4_t u, float32x4_t v) { return vaddq_f32(u, v); });
}

void mul(const float* a, const float* b, int64_t n, float* y) {
  map2(a, b, n, y, [](float32x4_t u, float32x4_t v) { return vmulq_f32(u, v); });
}

void scale(const float* x, float s, int64_t n, float* y) {
  const float32x4_t vs = vdupq_n_f32(s);
  map1(x, n, y, [vs](float32x4_t v) { return vmulq_f32(v, vs); });
}

namespace {

// The reference's rotation of 4 pairs: x0 c - x1 s and x0 s + x1 c, unfused.
void rotate(float32x4_t& x0, float32x4_t& x1, float32x4_t c, float32x4_t s) {
  const float32x4_t r0 = vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, s));
  const float32x4_t r1 = vaddq_f32(vmulq_f32(x0, s), vmulq_f32(x1, c));
  x0 = r0;
  x1 = r1;
}

void rope_head(float* head, int64_t half, const float* cosv, const float* sinv, RopeStyle style) {
  const bool neox = style == RopeStyle::kNeox;
  int64_t i = 0;
  for (; i + 4 <= half; i += 4) {
    const float32x4_t c = vld1q_f32(cosv + i), s = vld1q_f32(sinv + i);
    if (neox) {
      float32x4_t x0 = vld1q_f32(head + i), x1 = vld1q_f32(head + half + i);
      rotate(x0, x1, c, s);
      vst1q_f32(head + i, x0);
      vst1q_f32(head + half + i, x1);
    } else {
      float32x4x2_t v = vld2q_f32(head + 2 * i);  // even and odd elements
      rotate(v.val[0], v.val[1], c, s);
      vst2q_f32(head + 2 * i, v);
    }
  }
  const int64_t stride = neox ? 1 : 2;
  const int64_t partner = neox ? half : 1;
  for (; i < half; ++i) {
    float* p = head + i * stride;
    const float x0 = p[0], x1 = p[partner];
    p[0] = x0 * cosv[i] - x1 * sinv[i];
    p[partner] = x0 * sinv[i] + x1 * cosv[i];
  }
}

}  // namespace

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    rope_head(x + h * head_dim, half, cos_sin, cos_sin + half, style);
  }
}

float max_f32(const float* x, int64_t n, float init) {
  // x > m ? x : m, lane by lane (vmaxq_f32 would let a NaN through).
  float32x4_t m = vdupq_n_f32(init);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    m = vbslq_f32(vcgtq_f32(v, m), v, m);
  }
  float result = init;
  for (int l = 0; l < 4; ++l) {
    const float lane = vgetq_lane_f32(m, 0);
    result = lane > result ? lane : result;
    m = vextq_f32(m, m, 1);
  }
  for (; i < n; ++i) result = x[i] > result ? x[i] : result;
  return result;
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
    acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
  }
  for (; i < n; i += 4) {
    const int64_t left = n - i < 4 ? n - i : 4;
    acc0 = vfmaq_f32(acc0, load_partial(a + i, left), load_partial(b + i, left));
  }
  return vaddvq_f32(vaddq_f32(acc0, acc1));
}

void axpy_f32(float a, const float* x, int64_t n, float* y) {
  const float32x4_t va = vdupq_n_f32(a);
  map2(x, y, n, y,
       [va](float32x4_t xv, float32x4_t yv) { return vaddq_f32(yv, vmulq_f32(va, xv)); });
}

void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t j = 0; j < rows.n; ++j) {
      out[i * out_stride + j] = dot_f32(rows.row(j), x.row(i), n) * scale;
    }
  }
}

void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {
  for (int64_t i = 0; i < w.n; ++i) {
    for (int64_t j = 0; j < rows.n; ++j) axpy_f32(w.row(i)[j], rows.row(j), n, y + i * y_stride);
  }
}

}  // namespace minfer::kernels::neon
