// Converting a model file to another weight type ("minfer quantize"), and the per-tensor type
// choices that make-model shares with it.
//
// The rules are llama.cpp's (src/llama-quant.cpp, llama_tensor_get_type), so that a file from
// `minfer quantize` has the tensor types of the same file from `llama-quantize`:
//
//  * Only the matrices of the architecture's tensor list (models/tensor_spec.h) are converted;
//    its vectors (norms, biases) are copied in their own type (f32), as the loader wants them.
//    Tensors the list does not name follow llama.cpp's rule: those with ≥ 2 dimensions whose
//    name ends in "weight" and not "_norm.weight" are converted (the same set for every
//    architecture minfer knows).
//  * f32 / f16 / bf16 targets: every convertible tensor becomes that type, nothing else applies.
//  * Quantized targets start from the mix's default type (q4_0 → q4_0, q4_k_m → q4_K,
//    q5_k_m → q5_K, q6_k → q6_K, …), then:
//    - output.weight, and token_embd.weight when the model has no output.weight (tied output),
//      become q6_K, except that a q8_0 target stays q8_0 and a row length that is not a multiple
//      of the default type's block becomes q8_0. Note this applies to q4_0…q5_1 too: a q4_0 file
//      has a q6_K output matrix, as llama.cpp writes it.
//    - q4_k_m and q5_k_m: attn_v.weight and ffn_down.weight get q6_K in the layers where
//      use_more_bits(i, n) holds: i < n/8, or i >= 7n/8, or (i - n/8) % 3 == 2 (integer
//      division), i counting attn_v (resp. ffn_down) tensors in file order and n their number
//      (resp. the block count). E.g. with 24 layers: layers 0-2, 5, 8, 11, 14, 17, 20-23.
//    - llama with 80 layers and grouped KV heads (the 70B shape): attn_v q3_K/q4_K → q5_K.
//    - 8 experts (Mixtral's shape, and qwen3moe-tiny's): attn_v and attn_k become q8_0, and for
//      q4_k_m attn_output q5_K. ffn_down_exps counts as ffn_down (its block number is i).
//  * mxfp4_moe (gpt-oss as released): the experts (3-D tensors, ne[2] > 1) become mxfp4, every
//    other matrix q8_0, with none of the rules above; a row not a multiple of 32 stays f16.
//  * The router (ffn_gate_inp.weight) is never converted, whatever the target.
//  * Fallback (after the rules above): when a tensor's row length is not a multiple of its
//    chosen type's block (256 for K-quants), q4_K → q5_0, q5_K → q5_1, q6_K → q8_0, q2_K/q3_K →
//    q4_0; if even that block (32) does not divide the row, f16. Qwen2.5-0.5B (n_embd 896 =
//    3.5 × 256) is the common case: its q4_k_m file is mostly q5_0 and q8_0.
//  * Tensors are written in llama.cpp's order: by block number (tensors outside blocks first),
//    then by name; the counters above follow this order.
//  * Metadata is copied; general.file_type is set to llama.cpp's llama_ftype number of the mix
//    and general.quantization_version to 2.
//
// A quantized source is dequantized to f32 first (llama.cpp asks for --allow-requantize; we
// allow it — quality is lost twice, which the caller chose).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/progress.h"
#include "core/status.h"
#include "kernels/thread_pool.h"
#include "models/tensor_spec.h"
#include "quant/ggml_type.h"
#include "tools/offline_tools.h"

namespace minfer {

// A target of `minfer quantize` / `make-model --type`.
struct QuantMix {
  const char* name;       // "q4_k_m"
  uint32_t file_type;     // llama.cpp's llama_ftype (general.file_type): 15 for Q4_K_M
  GgmlType default_type;  // the type most weight matrices get
  bool k_mix;             // q4_k_m / q5_k_m: q6_K on the more sensitive attn_v / ffn_down
};

// The mix for a name (case-insensitive), or an error listing the supported ones.
Result<QuantMix> find_quant_mix(std::string_view name);
struct TensorDesc {
  std::string name;
  GgmlType type;                // the type it has now (source)
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the row length
  // Its role in the architecture's tensor list (models/tensor_spec.h), which decides whether it
  // is converted (a matrix) or copied (an f32 vector); unset (a tensor the list does not name, or
  // an architecture minfer does not know): llama.cpp's name rule above decides.
  std::optional<TensorRole> role = std::nullopt;
};

// A permutation putting tensors in llama.cpp's order (block number, outside blocks first, then
// name): result[k] is the index of the k-th tensor.
std::vector<size_t> llama_tensor_order(std::span<const TensorDesc> tensors);

struct TypePlan {
  std::vector<GgmlType> types;  // per tensor, in the order given
  int64_t n_fallback = 0;       // tensors whose row length forced a fallback type
};

// The target type of every tensor (see the file comment). `tensors` must be in llama.cpp's order;
// arch / n_layer / n_head / n_head_kv / n_expert (expert_count, 0 for a dense model) are the
// model's.
TypePlan plan_tensor_types(const QuantMix& mix, std::span<const TensorDesc> tensors,
                           std::string_view arch, int64_t n_layer, int64_t n_head,
                           int64_t n_head_kv, int64_t n_expert = 0);

// Converts a [n_rows, n_per_row] tensor from src_type to dst_type, rows split over the pool.
// A non-f32 source is dequantized row by row first. `dst` is resized to the output bytes.
// Preconditions (checked): both types have traits and n_per_row is a multiple of both blocks.
void convert_tensor(GgmlType src_type, std::span<const uint8_t> src, GgmlType dst_type,
                    int64_t n_per_row, int64_t n_rows, kernels::ThreadPool& pool,
                    std::vector<uint8_t>& dst);

}  // namespace minfer
