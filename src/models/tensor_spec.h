// The tensors a model of one architecture has: names, shapes as functions of the config, roles,
// and where the loader puts each one. One list per architecture (its file in src/models/ says
// which), read by the loader (model_weights.cpp), make-model and quantize (src/tools/), so what
// is written and what is loaded cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/weight_tensor.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace minfer {

// What a tensor is, which decides the types it may have and how make-model fills it.
enum class TensorRole {
  kMatrix,     // a weight matrix: any type minfer computes with; quantize converts it
  kNorm,       // an RMSNorm weight: f32 (llama.cpp writes every vector in f32); made as all ones
  kBias,       // a bias vector: f32; made like a matrix (normal, std 0.02)
  kRopeFreqs,  // rope_freqs.weight, Llama 3's per-pair frequency divisors: f32; make-model
               // computes them from the preset's rope scaling
  kConv,       // a depthwise convolution's taps [d_conv, channels]: f32 (as llama.cpp writes
               // them); made like a bias; never quantized
};

// Where the loader stores a tensor: a field of the model, or of its layer `il`.
using WeightSlot = WeightTensor& (*)(ModelWeights& m, int64_t il);

template <auto Field>
WeightTensor& model_slot(ModelWeights& m, int64_t /*il*/) {
  return m.*Field;
}

// An optional field of the model (rope_freqs), engaged on load.
template <auto Field>
WeightTensor& optional_model_slot(ModelWeights& m, int64_t /*il*/) {
  return (m.*Field).emplace();
}

// A field of LayerWeights; an optional one (a bias, a QK-norm weight) is engaged on load.
template <auto Field>
WeightTensor& layer_slot(ModelWeights& m, int64_t il) {
  auto& field = m.layers[static_cast<size_t>(il)].*Field;
  if constexpr (std::is_same_v<std::remove_reference_t<decltype(field)>, WeightTensor>) {
    return field;
  } else {
    return field.emplace();
  }
}

struct TensorSpec {
  std::string name;  // GGUF tensor name: "blk.3.attn_q.weight"
  TensorRole role;
  int64_t n_cols;  // the row length (ggml shape[0]): n_in of a matrix
  int64_t n_rows;  // n_out of a matrix; 1 for a vector
  WeightSlot slot;
  int64_t il = -1;     // the layer, -1 outside the blocks
  int64_t n_mats = 1;  // > 1: a 3-D tensor of n_mats matrices (one per expert)

  bool is_vector() const { return role != TensorRole::kMatrix && role != TensorRole::kConv; }
  // Whether the tensor must be f32 (vectors and convolution taps).
  bool f32_only() const { return role != TensorRole::kMatrix; }
  // ggml order: [n_cols] for a vector, [n_cols, n_rows] for a matrix, [n_cols, n_rows, n_mats]
  // for a stack of matrices.
  std::vector<uint64_t> shape() const;
  // Rows of n_cols over the whole tensor (n_rows · n_mats).
  int64_t total_rows() const { return n_rows * n_mats; }
};

// Builds a tensor list; `layer` names are relative to the current block ("attn_q.weight").
class TensorList {
 public:
  explicit TensorList(std::vector<TensorSpec>& out) : out_(out) {}

  void matrix(const std::string& name, int64_t n_cols, int64_t n_rows, WeightSlot slot) {
    add(name, TensorRole::kMatrix, n_cols, n_rows, slot);
  }
  void norm(const std::string& name, int64_t n, WeightSlot slot) {
    add(name, TensorRole::kNorm, n, 1, slot);
  }
  void bias(const std::string& name, int64_t n, WeightSlot slot) {
    add(name, TensorRole::kBias, n, 1, slot);
  }
  // n_mats bias vectors of n in one 2-D tensor [n, n_mats] (a mixture of experts' biases).
  void biases(const std::string& name, int64_t n, int64_t n_mats, WeightSlot slot) {
    add(name, TensorRole::kBias, n, 1, slot, n_mats);
  }
  void rope_freqs(const std::string& name, int64_t n, WeightSlot slot) {
    add(name, TensorRole::kRopeFreqs, n, 1, slot);
  }
  void conv(const std::string& name, int64_t n_taps, int64_t n_channels, WeightSlot slot) {
    add(name, TensorRole::kConv, n_taps, n_channels, slot);
  }
  // n_mats matrices of [n_cols → n_rows] in one 3-D tensor (a mixture of experts' weights).
  void matrices(const std::string& name, int64_t n_cols, int64_t n_rows, int64_t n_mats,
                WeightSlot slot) {
    add(name, TensorRole::kMatrix, n_cols, n_rows, slot, n_mats);
  }
  // Later names are relative to block il (-1: outside the blocks).
  void begin_layer(int64_t il);

 private:
  void add(const std::string& name, TensorRole role, int64_t n_cols, int64_t n_rows,
           WeightSlot slot, int64_t n_mats = 1);

  std::vector<TensorSpec>& out_;
  int64_t il_ = -1;
  std::string prefix_;
};

// The tensors an architecture adds to each block's attention (after Wq, Wk, Wv): Qwen2's QKV
// biases, Qwen3's q / k norms. nullptr: none.
using AttentionExtras = void (*)(const ModelConfig& c, TensorList& t);

// The tensors of each block's FFN after ffn_norm, when they are not the dense ffn_gate, ffn_up,
// ffn_down (e.g. Qwen3-MoE's router and experts).
using FfnTensors = void (*)(const ModelConfig& c, TensorList& t);

// token_embd, output_norm and (unless c.tied_output) output.
void global_tensors(const ModelConfig& c, TensorList& t);
// A block's dense FFN: ffn_gate, ffn_up [n_embd → n_ff], ffn_down [n_ff → n_embd].
void dense_ffn_tensors(const ModelConfig& c, TensorList& t);

// The decoder's tensors (DESIGN.md §1), shared by every architecture, in load order:
// token_embd, output_norm, output (absent when c.tied_output), then per block attn_norm,
// attn_q/k/v, the architecture's extras, attn_output [n_head * head_dim_v → n_embd], ffn_norm,
// then `ffn`'s tensors, or (nullptr) ffn_gate, ffn_up, ffn_down.
std::vector<TensorSpec> decoder_tensors(const ModelConfig& c, AttentionExtras extras,
                                        FfnTensors ffn = nullptr);

// A field of a gated delta-net layer's weights (LayerWeights::DeltaNet), engaged on load.
template <auto Field>
WeightTensor& delta_net_slot(ModelWeights& m, int64_t il) {
  std::optional<LayerWeights::DeltaNet>& d = m.layers[static_cast<size_t>(il)].delta_net;
  if (!d) d.emplace();
  return (*d).*Field;
}

// Per-head RMSNorm weights of q and k (attn_q_norm, attn_k_norm: [head_dim], shared by every
// head), for architectures with qk_norm.
void qk_norm_tensors(const ModelConfig& c, TensorList& t);

// The tensor list of c's architecture (c.arch), or the unknown-architecture error.
Result<std::vector<TensorSpec>> model_tensors(const ModelConfig& c);

}  // namespace minfer
