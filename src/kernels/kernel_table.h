// The per-ISA kernel tables. Every ISA (ref = plain C++, avx2, avxvnni, avx512) fills the same
// table of function pointers with the same signatures; ref defines the meaning and the SIMD tables
// are tested against it. One table is chosen at start-up (dispatch.h).
//
// Preconditions shared by every kernel: pointers are valid for the stated element counts,
// n >= 0, and outputs may alias inputs only where a comment says so. Kernels never allocate,
// log or throw.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::kernels {

enum class Isa {
  kRef = 0,
  kAvx2 = 1,
  kAvx512 = 2,
  kNeon = 3,
  kDotprod = 4,
  kI8mm = 5,
  kAvxVnni = 6,
  kAmx = 7
};

enum class RopeStyle {
  kNeox,      // pairs (i, i + n_rot/2): Qwen, GPT-NeoX
  kAdjacent,  // pairs (2i, 2i + 1): Llama (RoFormer §3.4.2 as written)
};

// The largest rotated dimension count rope supports (its angle table lives on the stack).
inline constexpr int64_t kMaxRopeDims = 1024;

// y[t * y_stride + r] = Σ_k W[r][k] · A[t][k] for r < n_rows, t < n_tok, where W is n_rows
// weight rows of w_row_bytes each (in the weight type) and A is n_tok activation rows of
// act_row_bytes each in the weight type's vec_dot_type (quant/quant_traits.h; as llama.cpp:
// F32 for F32, F16 for F16, BF16 for BF16, Q8_0 / Q8_1 / Q8_K blocks for the quantized types).
// n_in is a multiple of the weight type's block size. A Q8_0 activation row of n_blocks blocks
// is followed by (offsets below; q8_0_act_row_bytes in all):
//   int32 sums[n_blocks]       each block's quant sum, at the first 4-byte boundary after the
//                              blocks: the offsets of Q4_0 / Q5_0 / MXFP4's unsigned quants
//   int32 starts[n_blocks][8]  kQ8_0LaneMagic - 128 · Σ of the block's quants 4l..4l+3, l < 8:
//                              the AVX-512 Q8_0 tile's start for the dot of those 4 quants with
//                              4 weights + 128 (unsigned), whose result's bits are then the float
//                              12582912 + the exact dot (quant_tile_impl.h KindQ8_0)
//   float d[n_blocks]          each block's scale as f32 (its f16 exactly)
// which the SIMD kernels use; every table's quantize_act_q8_0_sums writes all of it.
// The reference is ref::vec_dot_for(type) (kernels/ref/ref_dot.h) applied to each (row, token).
// Every (r, t) result is computed by the same sequence of operations whatever n_rows and n_tok
// are, so splitting rows or tokens differently never changes a bit of the output. The SIMD
// tables' F32 / F16 / BF16 tiles sum in one order on every ISA, llama.cpp's AVX-512 one
// (float_tile_impl.h), and so give one another's bits; the reference sums those in double.
// MatmulTile is the function type: the kernel headers declare each tile with it
// (`MatmulTile matmul_tile_q4_0;`), so the signature is written once.
using MatmulTile = void(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                        const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                        int64_t y_stride);
using MatmulTileFn = MatmulTile*;

// Quantizes one f32 row of n elements (a multiple of the block size) into activation blocks.
// QuantizeRow is the function type the kernel headers declare such kernels with, as MatmulTile.
using QuantizeRow = void(const float* x, void* y, int64_t n);
using QuantizeRowFn = QuantizeRow*;

// Converts n elements of a row in some ggml type back to f32 (quant_traits.h's ToFloatFn shape).
using DequantizeRow = void(const void* x, float* y, int64_t n);
using DequantizeRowFn = DequantizeRow*;

// Byte offset of the int32 block sums in a Q8_0 activation row of n_blocks blocks (see
// MatmulTileFn): the first 4-byte boundary after the blocks (34 bytes each).
constexpr size_t q8_0_act_sums_offset(size_t n_blocks) {
  return (n_blocks * 34 + 3) / 4 * 4;
}
// ... of the int32 lane starts [n_blocks][8], of the f32 scales [n_blocks], and the row's size.
constexpr size_t q8_0_act_starts_offset(size_t n_blocks) {
  return q8_0_act_sums_offset(n_blocks) + n_blocks * 4;
}
constexpr size_t q8_0_act_scales_offset(size_t n_blocks) {
  return q8_0_act_starts_offset(n_blocks) + n_blocks * 32;
}
constexpr size_t q8_0_act_row_bytes(size_t n_blocks) {
  return q8_0_act_scales_offset(n_blocks) + n_blocks * 4;
}
// The bits of the float 12582912 (1.5 · 2^23): the lane starts' offset. For |k| < 2^22 the int32
// kQ8_0LaneMagic + k is the float 12582912 + k bit for bit, so subtracting 12582912.0f gives k.
inline constexpr int32_t kQ8_0LaneMagic = 0x4B400000;

// Writes the sums' followers of a Q8_0 activation row whose blocks are written: the lane starts
// and the f32 scales (see MatmulTileFn). Plain C++, for the tables without their own.
void q8_0_act_lanes(void* row, int64_t n_blocks);

// Slots indexed by GgmlType id (kMXFP4 = 39 is the largest weight type).
inline constexpr int kMatmulSlots = 40;

// n rows of f32, row i at data + i · stride (attention's keys, values, queries or weights).
struct F32Rows {
  const float* data;
  int64_t n;
  int64_t stride;
  const float* row(int64_t i) const { return data + i * stride; }
};

// One chunk of n tokens of one head's gated delta rule (KernelTable::delta_rule_chunk), the
// operands of the chunked (WY / UT-transform) form: q, k rows already L2-normalised (q scaled),
// g the log decays (decay_t = exp(g_t)), beta the write strengths (after the sigmoid).
struct DeltaChunk {
  const float* q = nullptr;  // [n][dk]
  const float* k = nullptr;  // [n][dk]
  const float* v = nullptr;  // n rows of dv, v_stride apart
  int64_t v_stride = 0;
  const float* g = nullptr;     // [n]
  const float* beta = nullptr;  // [n]
  int64_t n = 0;
  int64_t dk = 0;
  int64_t dv = 0;
  float* out = nullptr;  // n rows of dv, out_stride apart
  int64_t out_stride = 0;
  float* work = nullptr;  // [delta_chunk_work_floats(n, dk, dv)]
};

// The scratch floats delta_rule_chunk uses for a chunk of n tokens.
constexpr int64_t delta_chunk_work_floats(int64_t n, int64_t dk, int64_t dv) {
  return n + 3 * n * n + 4 * n * dk + dk * dv + n * dv;
}

// Rows of f16 cells (IEEE half), `stride` cells apart. prefetch, when set: rows of the same shape
// that the caller reads next, asked of memory a row at a time while these are read (spread over
// the arithmetic, not asked all at once, which stalls on the full miss queue). Changes no result.
struct F16Rows {
  const uint16_t* data;
  int64_t n;
  int64_t stride;
  const uint16_t* prefetch = nullptr;
  const uint16_t* row(int64_t i) const { return data + i * stride; }
};

// Rows of bf16 cells (the top halves of f32s): F16Rows' shape, another format.
using BF16Rows = F16Rows;

// Rows of q8_0 cells: 34-byte blocks of 32 values (an f16 scale d, then 32 int8 quants q; the
// value is d · q), row i at data + i · stride bytes; as F16Rows, with the rows asked for while
// these are read.
struct Q8Rows {
  const uint8_t* data;
  int64_t n;
  int64_t stride;  // bytes
  const uint8_t* prefetch = nullptr;
  const uint8_t* row(int64_t i) const { return data + i * stride; }
};

struct KernelTable {
  Isa isa;
  const char* name;  // "ref", "avx2", "avxvnni", "avx512", "amx", "neon", "dotprod", "i8mm"

  // y = x / sqrt(mean(x²) + eps) * w; the mean of squares accumulates in double. y may be x.
  void (*rms_norm)(const float* x, const float* w, float eps, int64_t n, float* y);
  // y = exp(x - max x) / Σ exp(x - max x); the sum accumulates in double. An x of -inf gives a
  // y of exactly 0. y may be x.
  void (*softmax)(const float* x, int64_t n, float* y);
  // y = e^(x - shift); returns Σ y in double (softmax's exponentials and sum, for a caller that
  // keeps its own running max, as attention's online softmax does). x - shift = -inf gives 0;
  // y may be x.
  double (*exp_sum)(const float* x, float shift, int64_t n, float* y);
  // max(init, x[0..n)) with the NaNs of x passed over, init not NaN: a running
  // m = x[i] > m ? x[i] : m (a tie of +0 and -0 may come out as either).
  float (*max_f32)(const float* x, int64_t n, float init);
  // y = x / (1 + exp(-x)). y may be x.
  void (*silu)(const float* x, int64_t n, float* y);
  // y = silu(gate) * up. y may be gate or up.
  void (*swiglu)(const float* gate, const float* up, int64_t n, float* y);
  // y = gelu(gate) * up with llama.cpp's f16-table GELU (kernels/gelu_table.h): gelu(gate) is 0
  // at gate <= -10, gate at gate >= 10, else gelu_f16_table()[f16(gate)]. y may be gate or up.
  void (*geglu)(const float* gate, const float* up, int64_t n, float* y);
  // Elementwise y = a + b, y = a * b, y = x * s. y may be a, b or x.
  void (*add)(const float* a, const float* b, int64_t n, float* y);
  void (*mul)(const float* a, const float* b, int64_t n, float* y);
  void (*scale)(const float* x, float s, int64_t n, float* y);
  // Rotates the first n_rot dims of each of n_head heads (head_dim floats apart) of one token,
  // in place. cos_sin: [2][n_rot / 2], the cosines then the sines, from rope_angles() (rope.h);
  // n_rot even, <= head_dim.
  void (*rope)(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
               RopeStyle style);
  // Σ a[i] b[i] (float accumulation).
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  // y += a * x.
  void (*axpy_f32)(float a, const float* x, int64_t n, float* y);
  // Attention's per-block loops for several query rows at once, with dot_f32's / axpy_f32's
  // arithmetic for every pair (a row's result never depends on the others in the call):
  //   out[i · out_stride + j] = dot_f32(rows_j, x_i, n) · scale for i < x.n, j < rows.n; and
  //   y_i += Σ_j w_i[j] · rows_j (y_i = y + i · y_stride, i < w.n), one axpy_f32 per row in
  //   order of j.
  void (*dot_rows_f32)(F32Rows rows, F32Rows x, int64_t n, float scale, float* out,
                       int64_t out_stride);
  void (*weighted_sum_f32)(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride);
  // The same two over rows of f16 cells, read where they lie: bit for bit what the f32 entries
  // give on the rows converted (f16_to_f32 is exact). nullptr: this table has none, and the
  // caller converts the rows and calls the f32 entries (ref and the ARM tables).
  void (*dot_rows_f16)(F16Rows rows, F32Rows x, int64_t n, float scale, float* out,
                       int64_t out_stride);
  void (*weighted_sum_f16)(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride);
  // weighted_sum_f32 over rows of q8_0 cells read in place (n a multiple of 32): bit for bit what
  // it gives on the rows converted (d · q is exact in f32). nullptr as for f16. (Attention scores
  // q8_0 keys with int8 dots instead: the Q8_0 matmul tile against the quantized queries,
  // kernels/attention_rows.h.)
  void (*weighted_sum_q8_0)(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride);
  // The same two over rows of bf16 cells read in place, in every table (llama.cpp's -ctk bf16):
  // dot_rows_bf16 scores rows x of the queries already converted to bf16 (f32_to_bf16, once per
  // row: K's vec_dot_type) as ggml_vec_dot_bf16 on an AVX512-BF16 host does, each score
  // ref::dot_bf16_cells(rows_j, x_i, n) · scale (kernels/ref/ref_kernels.h: VDPBF16PS steps into
  // two 16-lane accumulators, reduced in double); weighted_sum_bf16 is weighted_sum_f32 on the
  // rows converted (bf16 → f32 is exact), bit for bit. Tables without AVX512-BF16 emulate the
  // instruction's operations (its flushing of subnormals included) and give the same bits.
  void (*dot_rows_bf16)(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                        int64_t out_stride);
  void (*weighted_sum_bf16)(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride);
  // The gated delta net's kernels (graph/delta_net.h). Their sums are kLaneSums-lane sums:
  // lane l accumulates, by fused multiply-adds in order, the products of the elements i with
  // i mod 16 = l, and the 16 lanes are folded in halves (l + 8, then + 4, + 2, + 1), so every
  // table gives the reference's bits (tested bit for bit, tails included).
  //   ssm_conv: y[c] = Σ_k taps[k][c] · rows[k][c] over k = 0 .. d_conv - 1 in order, by fused
  //     multiply-adds from 0: one token of the causal depthwise conv, rows oldest first.
  //   l2_norm: y = x · (1 / max(sqrt(Σ x²), eps)), Σ x² a lane sum. y may be x.
  //   delta_rule_step: one token of one head's gated delta rule on state [dv][dk] (row j is
  //     value j's keys): S ← decay · S; δ_j = β (v_j − S_j · k); S_j ← S_j + δ_j k (fused);
  //     out_j = S_j · q; the dots lane sums.
  //   delta_rule_chunk: c.n ≥ 1 tokens at once (prefill), the same rule in the chunked form of
  //     Yang et al., "Gated Delta Networks" §3 (flash-linear-attention's chunk_gated_delta_rule).
  //     With G_t = g_0 + … + g_t (plain adds in order), D_ts = exp(G_t − G_s) for s ≤ t and
  //     γ_t = exp(G_t):
  //       Δ_s = β_s v_s − β_s γ_s S₀ k_s − Σ_{r<s} β_s D_sr (k_s · k_r) Δ_r  (by substitution)
  //       out_t = γ_t S₀ q_t + Σ_{s≤t} D_ts (q_t · k_s) Δ_s
  //       S ← γ_{n−1} S₀ + Σ_s Δ_s (D_{n−1,s} k_s)ᵀ
  //     Every product is a sum of fused multiply-adds in order of its inner index (each matrix
  //     product C += A B runs over B's rows in order; the out sums run, per band of 16 rows, to
  //     the band's last row), so every table gives ref's bits; the scaled operands are single
  //     float products (delta_chunk_impl.h). state as for delta_rule_step; c.out must not alias
  //     c.q, c.k or c.v.
  void (*ssm_conv)(const float* const* rows, const float* taps, int64_t d_conv, int64_t n,
                   float* y);
  void (*l2_norm)(const float* x, float eps, int64_t n, float* y);
  void (*delta_rule_step)(float* state, const float* q, const float* k, const float* v, float decay,
                          float beta, int64_t dk, int64_t dv, float* out);
  void (*delta_rule_chunk)(float* state, const DeltaChunk& c);
  // IEEE half / bfloat16 <-> f32, round to nearest even; bf16 NaNs stay NaN (quiet).
  void (*f16_to_f32)(const uint16_t* x, int64_t n, float* y);
  void (*f32_to_f16)(const float* x, int64_t n, uint16_t* y);
  void (*bf16_to_f32)(const uint16_t* x, int64_t n, float* y);
  void (*f32_to_bf16)(const float* x, int64_t n, uint16_t* y);

  // Matmul tiles per weight type (nullptr: the type has no kernel in this table).
  MatmulTileFn matmul_tile[kMatmulSlots];
  // Activation converters per vec_dot_type id (F16, BF16, Q8_0, Q8_1, Q8_K). ref_table's Q8_0 /
  // Q8_1 converters have llama.cpp's x86 semantics (quant/act_quant.h); the others are
  // quant_traits(type)->from_float. Every table's converter is bit-identical to that; nullptr:
  // use ref_table's, or from_float where ref_table has none.
  QuantizeRowFn quantize_act[kMatmulSlots];
  // The whole Q8_0 activation row of the matmul tiles: the blocks of quantize_act's Q8_0
  // converter, then each block's int32 quant sum, lane starts and f32 scale (MatmulTileFn; y
  // must hold q8_0_act_row_bytes).
  // nullptr: ref_table's.
  QuantizeRowFn quantize_act_q8_0_sums;

  // KV cache cells (kv/kv_cache.h) per cell type id: F32, F16, BF16 and Q8_0 are set in every
  // table, every other slot is nullptr. cells_from_f32 writes one row of n floats as cells,
  // cells_to_f32 reads n cells back (a Q8_0 n is a multiple of 32). The reference is
  // quant/quantize.h, bit for bit: F32 copied; F16 fp32_to_fp16 / fp16_to_fp32 (exact round to
  // nearest even, exact back); BF16 fp32_to_bf16 / bf16_to_fp32 (ggml's GGML_FP32_TO_BF16: round
  // to nearest even, NaN kept quiet, subnormals kept; exact back); Q8_0 quantize_row_q8_0 (d = amax
  // / 127, q = roundf(x · (1 / d)), halfway cases away from zero — unlike quantize_act's Q8_0) and
  // dequantize_row_q8_0 (q · d).
  QuantizeRowFn cells_from_f32[kMatmulSlots];
  DequantizeRowFn cells_to_f32[kMatmulSlots];

  // Matmul tiles per weight type for weights in the x16 row-interleaved layout
  // (kernels/interleave.h): matmul_tile's contract, with w at the start of a 16-row group and
  // n_rows a multiple of 16 (w_row_bytes is still the GGUF row's size). nullptr: this table has
  // no kernel for the layout, and weights stay in the GGUF layout under it (matmul refuses x16
  // weights without a kernel).
  MatmulTileFn matmul_tile_x16[kMatmulSlots];
};

// The tables themselves. Constant-initialized data: touching them runs no ISA-specific code,
// but calling through avx2_table / avxvnni_table / avx512_table / amx_table needs a CPU that has
// that ISA (CpuFeatures::can_run_avx2 / can_run_avxvnni / can_run_avx512 / can_run_amx).
// neon_table, dotprod_table and i8mm_table exist only in ARM64 builds (the x86 tables only in
// x86-64 builds); dotprod_table needs asimddp, i8mm_table asimddp and i8mm.
extern const KernelTable ref_table;
extern const KernelTable avx2_table;
extern const KernelTable avxvnni_table;
extern const KernelTable avx512_table;
extern const KernelTable amx_table;  // avx512_table with AMX-INT8 tiles (kernels/amx)
extern const KernelTable neon_table;
extern const KernelTable dotprod_table;
extern const KernelTable i8mm_table;

}  // namespace minfer::kernels
