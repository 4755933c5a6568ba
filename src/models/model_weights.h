// The weight tensors of a model, as views into the GGUF memory map (zero-copy), each checked for
// presence, type and shape at load.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "graph/weight_tensor.h"
#include "models/model_config.h"
#include "quant/ggml_type.h"

namespace minfer {

struct LayerWeights {
  WeightTensor attn_norm;                      // [n_embd]
  WeightTensor wq;                             // [n_embd → q_width]
  WeightTensor wk;                             // [n_embd → k_width]
  WeightTensor wv;                             // [n_embd → v_width]
  std::optional<WeightTensor> bq, bk, bv;      // [q_width], [k_width], [v_width] (qkv_bias)
  std::optional<WeightTensor> q_norm, k_norm;  // [head_dim] (qk_norm)
  std::optional<WeightTensor> rope_freqs;      // [n_rot / 2]: the model's, in every layer
  WeightTensor wo;                             // [n_head * head_dim_v → n_embd]
  std::optional<WeightTensor> bo;              // [n_embd] (gpt-oss)
  std::optional<WeightTensor> attn_sinks;      // [n_head] (gpt-oss: AttentionArgs::sinks)
  std::optional<WeightTensor> attn_post_norm;  // [n_embd] (post_norms)
  WeightTensor ffn_norm;                       // [n_embd]
  WeightTensor gate;                           // [n_embd → n_ff]
  WeightTensor up;                             // [n_embd → n_ff]
  WeightTensor down;                           // [n_ff → n_embd]
  std::optional<WeightTensor> ffn_post_norm;   // [n_embd] (post_norms)
  // Mixture of experts (n_expert > 0), in place of gate / up / down.
  std::optional<WeightTensor> ffn_gate_inp;  // the router [n_embd → n_expert]
  std::optional<WeightTensor> gate_exps;     // n_expert × [n_embd → n_ff_exp]
  std::optional<WeightTensor> up_exps;       // n_expert × [n_embd → n_ff_exp]
  std::optional<WeightTensor> down_exps;     // n_expert × [n_ff_exp → n_embd]
  // gpt-oss's biases of the router [n_expert] and the experts (n_expert × [n_ff_exp], × [n_embd]).
  std::optional<WeightTensor> ffn_gate_inp_b, gate_exps_b, up_exps_b, down_exps_b;
  // A shared expert beside them (n_ff_shexp > 0), gated per token.
  std::optional<WeightTensor> shexp_gate_inp;  // [n_embd → 1]
  std::optional<WeightTensor> gate_shexp;      // [n_embd → n_ff_shexp]
  std::optional<WeightTensor> up_shexp;        // [n_embd → n_ff_shexp]
  std::optional<WeightTensor> down_shexp;      // [n_ff_shexp → n_embd]
  // A gated delta-net layer (ModelConfig::is_recurrent), in place of wq .. wo; kd = ssm_k_width,
  // vd = ssm_v_width, cd = ssm_conv_channels.
  struct DeltaNet {
    WeightTensor qkv;      // [n_embd → cd]: q | k | v
    WeightTensor gate;     // [n_embd → vd]: z, the output gate
    WeightTensor conv;     // [cd rows of d_conv taps] (f32)
    WeightTensor dt_bias;  // [n_v_heads]
    WeightTensor a;        // [n_v_heads]: -exp(A_log)
    WeightTensor alpha;    // [n_embd → n_v_heads]
    WeightTensor beta;     // [n_embd → n_v_heads]
    WeightTensor norm;     // [d_state]
    WeightTensor out;      // [vd → n_embd]
  };
  std::optional<DeltaNet> delta_net;
  // Gemma 4 (models/gemma4.cpp).
  std::optional<WeightTensor> v_norm;              // [head_dim_v] all ones: V's weightless norm
  std::optional<WeightTensor> layer_output_scale;  // [1]: the block's output is multiplied by it
  std::optional<WeightTensor> ple_inp_gate;        // [n_embd → n_embd_per_layer]
  std::optional<WeightTensor> ple_proj;            // [n_embd_per_layer → n_embd]
  std::optional<WeightTensor> ple_post_norm;       // [n_embd]
  // Gemma 4's MoE beside the dense FFN: the router's input scale, the norms around both halves,
  // gate and up of each expert in one matrix (gate rows first), and a scale per expert's output.
  std::optional<WeightTensor> ffn_gate_inp_scale;  // [n_embd]
  std::optional<WeightTensor> pre_ffw_norm_2;      // [n_embd]
  std::optional<WeightTensor> post_ffw_norm_1;     // [n_embd]
  std::optional<WeightTensor> post_ffw_norm_2;     // [n_embd]
  std::optional<WeightTensor> gate_up_exps;        // n_expert × [n_embd → 2 n_ff_exp]
  std::optional<WeightTensor> down_exps_scale;     // [n_expert]
};

struct ModelWeights {
  WeightTensor token_embd;   // [n_vocab rows of n_embd]
  WeightTensor output_norm;  // [n_embd]
  WeightTensor output;       // [n_embd → n_vocab]; token_embd when the output is tied
  std::optional<WeightTensor> rope_freqs;  // [n_rot / 2] (rope_freq_factors, Llama 3)
  // Gemma 4's per-layer embeddings (n_embd_per_layer > 0; models/gemma4.cpp).
  std::optional<WeightTensor> per_layer_token_embd;  // [n_vocab rows of n_embd_per_layer · n_layer]
  std::optional<WeightTensor> per_layer_model_proj;  // [n_embd → n_embd_per_layer · n_layer]
  std::optional<WeightTensor> per_layer_proj_norm;   // [n_embd_per_layer]
  std::vector<LayerWeights> layers;
  // Ones for the norms that have no weight (ModelConfig::v_norm), which LayerWeights::v_norm
  // views.
  std::vector<float> ones;
};

// Finds and checks every tensor of the config's architecture (its list in models/tensor_spec.h).
// Errors name the tensor and say the expected vs actual shape or type; a file holding a tensor
// the list does not name is refused (kUnsupported): minfer would ignore it and compute something
// else than the model means.
Result<ModelWeights> load_model_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace minfer
