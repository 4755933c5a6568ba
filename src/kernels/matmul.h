// y[n_tokens, n_out] = x[n_tokens, n_in] · W[n_out, n_in]ᵀ for every weight type.
//
// The activations are first converted, once per token row, to the weight type's vec_dot_type
// (quant_traits.h: Q8_0 / Q8_1 / Q8_K for the quantized types, F16 / BF16 for those weights,
// as llama.cpp does, so logits can match llama.cpp's); then weight rows are split over the
// thread pool in contiguous ranges, and each thread walks its rows in tiles of tokens × rows
// so that each loaded weight block serves several tokens (one token: a GEMV). Each output
// element is computed by one thread with a fixed sequence of operations: bit-identical results
// at any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/interleave.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {

struct MatmulWeights {
  GgmlType type = GgmlType::kF32;
  const void* data = nullptr;  // [n_out][row bytes of n_in elements]
  int64_t n_out = 0;
  int64_t n_in = 0;  // a multiple of the type's block size
  // kRows16: data is in the x16 row-interleaved layout (interleave.h), of a type and shape that
  // can_interleave. Tables without matmul_tile_x16 for the type (matmul_supports_layout false)
  // still multiply it, bit-identically but slowly (each row group deinterleaved per call).
  WeightLayout layout = WeightLayout::kGguf;
};

// Whether matmul supports weights of this type (every DESIGN.md §4 weight type).
bool matmul_supports(GgmlType type);

// Whether `table` has a kernel for weights of this type in this layout (every supported type in
// the GGUF layout; x16 where the table has matmul_tile_x16 for it).
bool matmul_supports_layout(const KernelTable& table, GgmlType type, WeightLayout layout);

// Scratch bytes matmul needs for n_tokens rows of n_in activations against weights of `type`.
size_t matmul_scratch_bytes(GgmlType type, int64_t n_tokens, int64_t n_in);

// x: [n_tokens][n_in] f32, y: [n_tokens][n_out] f32 (no aliasing with x), scratch: at least
// matmul_scratch_bytes(...) bytes. Preconditions (checked; a violation is a caller bug):
// matmul_supports(w.type), n_in a multiple of the block size, scratch large enough. Types
// without a kernel in `table` run the reference tile.
void matmul(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w, const float* x,
            int64_t n_tokens, float* y, std::span<uint8_t> scratch);

// The same product in two steps, so that activations converted once serve several matrices
// (a mixture of experts' gate and up, and every expert a token is routed to): matmul_convert
// writes n_tokens rows of matmul_act_row_bytes(w.type, w.n_in) bytes each (the vec_dot_type
// rows; for F32 weights, the f32 rows copied), and matmul_converted multiplies such rows — e.g.
// a subset of them gathered — by w. Bit-identical to matmul (same conversion, same tiles).
// Rows of the same bytes serve any weights of the same vec_dot_type and n_in.
size_t matmul_act_row_bytes(GgmlType type, int64_t n_in);

// Products of one input x by several weights that read the same converted rows (a layer's q, k
// and v; an FFN's gate and up): x is converted once, and the rows of all the matrices are split
// over the pool in one dispatch, so a decode step pays one wake-up and one barrier for them
// instead of one per matrix. ys[i] = x · ws[i]ᵀ, bit-identical to matmul of each. Preconditions
// (checked): 1 <= ws.size() == ys.size() <= kMaxSharedInput, every weight of the same n_in and
// matmul_shares_act with ws[0], scratch of matmul_scratch_bytes(ws[0]...).
inline constexpr size_t kMaxSharedInput = 4;
void matmul_shared_input(const KernelTable& table, ThreadPool& pool,
                         std::span<const MatmulWeights> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, std::span<uint8_t> scratch);
// Whether weights of types a and b read the same converted rows (the same vec_dot_type).
bool matmul_shares_act(GgmlType a, GgmlType b);
void matmul_convert(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w,
                    const float* x, int64_t n_tokens, std::span<uint8_t> act);
void matmul_converted(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w,
                      const uint8_t* act, int64_t n_tokens, float* y);

}  // namespace minfer::kernels
