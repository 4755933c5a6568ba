// llama.cpp's CPU flash attention over f16 KV cells, one query row, operation for operation
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk on an AVX-512 machine): q rounded to f16,
// an f16 output accumulator, expf, cells walked one at a time. What llama-perplexity runs by
// default; attention (graph/attention.h) takes it with AttentionOptions::flash_attn_numerics.
// Plain C++ (a scalar replica of ggml's vector order), the same on every ISA.
#pragma once

#include <cstdint>

namespace minfer::kernels::ref {

// ggml_vec_dot_f16 on AVX-512 (f16 · f16): steps of 64 in 4 accumulators of 16 f32 lanes,
// reduced (0+2)+(1+3) then across lanes into a double; the tail adds each exact f32 product in
// double. One rounding to float at the end.
float dot_f16_ggml(const uint16_t* x, const uint16_t* y, int64_t n);

// One query row's walk: its f16 query, its f16 output accumulator and its online softmax (the
// running sum S and max M).
struct FlashRowF16 {
  uint16_t* q16;    // [head_dim]
  uint16_t* vkq16;  // [head_dim_v]
  int64_t head_dim;
  int64_t head_dim_v;
  float scale;  // of q · k
  float sum;
  float max;
};

// Starts a row: q ([head_dim]) rounded to f16, the accumulator zeroed, S = 0, M = -inf.
void flash_f16_start(FlashRowF16& row, const float* q);

// Walks n cells in order: keys [n, head_dim] and values [n, head_dim_v], rows consecutive. The
// online softmax rescales the f16 accumulator by ggml_vec_scale_f16 when the max grows and adds
// each value by ggml_vec_mad_f16 (one fused multiply-add in f32, rounded to f16); S = S·ms + vs
// fused in float.
void flash_f16_cells(FlashRowF16& row, const uint16_t* keys, const uint16_t* values, int64_t n);

// Adds an attention sink (a logit without a value) to the row's softmax as llama.cpp's flash
// attention does: the accumulator rescaled by e^(M - s) if s > M (M becomes s), and S = S·ms + vs.
void flash_f16_sink(FlashRowF16& row, float sink);

// out ([head_dim_v]) = the accumulator (as f32) times 1 / S (0 where no cell was walked).
void flash_f16_finish(const FlashRowF16& row, float* out);

}  // namespace minfer::kernels::ref
