// What a model is, read from GGUF metadata: hyperparameters and the per-architecture facts that
// shared code branches on as data (never `switch (arch)`).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "kernels/kernel_table.h"

namespace minfer {

struct ModelConfig {
  std::string arch;  // general.architecture
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;    // key length per head; attention.key_length, else n_embd / n_head
  int64_t head_dim_v = 0;  // value length per head; attention.value_length, else head_dim
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;
  int64_t n_vocab = 0;
  int64_t n_rot = 0;  // rotated dims per head; rope.dimension_count, else head_dim
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
  float rms_eps = 1e-5f;

  // Per-architecture facts (set by the architecture's file, models/architectures.h).
  bool qkv_bias = false;  // Qwen2: Wq, Wk, Wv have biases
  bool qk_norm = false;   // Qwen3: per-head RMSNorm of q and k before RoPE
  kernels::RopeStyle rope_style = kernels::RopeStyle::kNeox;
  bool tied_output = false;  // no output.weight: logits use token_embd.weight

  // Mixture of experts (Qwen3-MoE; read by the architecture's read_keys). n_expert 0: a dense
  // FFN of n_ff. Otherwise each token's FFN is the weighted sum of n_expert_used of n_expert
  // SwiGLU experts of width n_ff_exp, chosen and weighted by a router (graph/moe.h).
  int64_t n_expert = 0;       // expert_count
  int64_t n_expert_used = 0;  // expert_used_count
  int64_t n_ff_exp = 0;       // expert_feed_forward_length

  int64_t q_width() const { return n_head * head_dim; }       // [n_tokens, q_width] after Wq
  int64_t k_width() const { return n_head_kv * head_dim; }    // after Wk
  int64_t v_width() const { return n_head_kv * head_dim_v; }  // after Wv
};

// Reads and checks the hyperparameters (`<arch>.embedding_length`, …) of a model file.
Result<ModelConfig> read_model_config(const GgufFile& file);

}  // namespace minfer
