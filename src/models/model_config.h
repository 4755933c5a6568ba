// What a model is, read from GGUF metadata: hyperparameters and the per-architecture facts that
// shared code branches on as data (never `switch (arch)`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "kernels/kernel_table.h"
#include "kernels/rope.h"

namespace minfer {

// The gated FFN's activation: down(act(gate(x)) * up(x)).
enum class FfnActivation {
  kSilu,  // SwiGLU (Llama, Qwen)
  kGelu,  // GEGLU with the tanh-form GELU (Gemma), llama.cpp's f16-table numerics
};

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
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (linear and yarn scaling)
  float rms_eps = 1e-5f;
  // Rope scaling past linear, as llama.cpp reads and defaults it (llama-model.cpp hparams,
  // llama-context.cpp cparams); kernels/rope.h says what each does to the angles.
  float rope_ext_factor = 0.0f;   // YaRN's extrapolation mix: 1 for rope.scaling.type yarn
  float rope_attn_factor = 1.0f;  // magnitude on cos and sin (YaRN's, with llama.cpp's cancel)
  float rope_yarn_beta_fast = 32.0f;
  float rope_yarn_beta_slow = 1.0f;
  int64_t rope_n_ctx_orig = 0;     // rope.scaling.original_context_length, else n_ctx_train
  bool rope_freq_factors = false;  // the file has rope_freqs.weight (Llama 3: [n_rot / 2])
  // <arch>.pooling_type as llama.cpp numbers it (0 none, 1 mean, 2 cls, 3 last, 4 rank); -1: the
  // file has no such key. Set (embedding models such as Qwen3-Embedding): how the embeddings
  // pool the last hidden state (engine/embedder.h). Generation ignores it.
  int32_t pooling_type = -1;

  // Per-architecture facts (set by the architecture's file, models/architectures.h).
  bool qkv_bias = false;  // Qwen2: Wq, Wk, Wv have biases
  bool qk_norm = false;   // Qwen3: per-head RMSNorm of q and k before RoPE
  kernels::RopeStyle rope_style = kernels::RopeStyle::kNeox;
  bool tied_output = false;  // no output.weight: logits use token_embd.weight

  // Gemma-style blocks (set by an architecture's read_keys; the defaults are the plain decoder).
  float embd_scale = 0.0f;  // > 0: the token embeddings are multiplied by it (Gemma: √n_embd)
  bool post_norms = false;  // RMSNorm of attention's and the FFN's output before each residual add
  FfnActivation ffn_act = FfnActivation::kSilu;
  // > 0: q is multiplied by it before attention, whose own score scale is then 1 (Gemma, in
  // llama.cpp's order); 0: attention scales the scores by 1/√head_dim.
  float attn_q_scale = 0.0f;
  float final_logit_softcap = 0.0f;  // > 0: logits = cap · tanh(logits / cap)

  // Sliding-window attention: a layer with swa_layers[il] set sees, at position p, only the
  // positions > p - n_swa, and uses rope_freq_base_swa. Empty: every layer is global.
  int64_t n_swa = 0;
  std::vector<bool> swa_layers;  // [n_layer] or empty
  float rope_freq_base_swa = 10000.0f;
  bool swa_rope_freqs = true;  // sliding layers divide by rope_freqs too (Gemma 4: global only)

  bool is_swa(int64_t il) const {
    return !swa_layers.empty() && swa_layers[static_cast<size_t>(il)];
  }

  // Sliding layers with a shape of their own (Gemma 4; read by the architecture's read_keys): KV
  // heads, key / value head dims and rotated dims; 0: the global layers' value. The layer_*
  // accessors give layer il's.
  int64_t n_head_kv_swa = 0;
  int64_t head_dim_swa = 0;
  int64_t head_dim_v_swa = 0;
  int64_t n_rot_swa = 0;
  int64_t layer_n_head_kv(int64_t il) const {
    return is_swa(il) && n_head_kv_swa > 0 ? n_head_kv_swa : n_head_kv;
  }
  int64_t layer_head_dim(int64_t il) const {
    return is_swa(il) && head_dim_swa > 0 ? head_dim_swa : head_dim;
  }
  int64_t layer_head_dim_v(int64_t il) const {
    return is_swa(il) && head_dim_v_swa > 0 ? head_dim_v_swa : head_dim_v;
  }
  int64_t layer_n_rot(int64_t il) const { return is_swa(il) && n_rot_swa > 0 ? n_rot_swa : n_rot; }
  // Per-layer FFN widths (Gemma 4's feed_forward_length array); empty: n_ff everywhere.
  std::vector<int64_t> layer_n_ff;  // [n_layer] or empty
  int64_t ffn_width(int64_t il) const {
    return layer_n_ff.empty() ? n_ff : layer_n_ff[static_cast<size_t>(il)];
  }

  // KV sharing (Gemma 4's attention.shared_kv_layers): layers il >= n_layer_kv compute only
  // their queries and attend to the cells of an earlier layer (kv_source), keeping none of their
  // own; 0: every layer keeps its cells.
  int64_t n_layer_kv = 0;
  // Layers that keep KV cells (or recurrent state): the first n_layer_kv, else all.
  int64_t n_cache_layers() const { return n_layer_kv > 0 ? n_layer_kv : n_layer; }
  // The layer whose cells layer il reads: il itself, or for a sharing layer n_layer_kv - 2 if it
  // slides, n_layer_kv - 1 if not (llama.cpp's gemma4 create_memory; the architecture checks
  // that those layers are of the same kind).
  int64_t kv_source(int64_t il) const;

  // Per-layer input embeddings (Gemma 4's PLE; embedding_length_per_layer_input): > 0: each
  // layer gets an input of this width from per_layer_token_embd and a projection of the
  // embeddings (models/gemma4.cpp).
  int64_t n_embd_per_layer = 0;
  // V is RMS-normed per head without a weight before the KV store (Gemma 4).
  bool v_norm = false;
  // Gemma 4's KV-sharing layers that still hold attn_k / attn_v (unused, as llama.cpp leaves
  // them) and the layers without attn_v, whose V is the K projection: [n_layer] or empty.
  std::vector<bool> has_wk;
  std::vector<bool> has_wv;

  // Mixture of experts (Qwen3-MoE; read by the architecture's read_keys). n_expert 0: a dense
  // FFN of n_ff. Otherwise each token's FFN is the weighted sum of n_expert_used of n_expert
  // SwiGLU experts of width n_ff_exp, chosen and weighted by a router (graph/moe.h).
  int64_t n_expert = 0;       // expert_count
  int64_t n_expert_used = 0;  // expert_used_count
  int64_t n_ff_exp = 0;       // expert_feed_forward_length
  // gpt-oss's experts (graph/graph.h MoeVariant): routing by the softmax of the chosen logits,
  // and > 0: the clamped SwiGLU with this limit.
  bool moe_softmax_chosen = false;
  float moe_swiglu_limit = 0.0f;

  // Qwen3.5-MoE's shared expert (read by the architecture's read_keys): > 0: every token's FFN
  // adds sigmoid(ffn_gate_inp_shexp · x) · SwiGLU_shared(x) of this width to the experts' sum.
  int64_t n_ff_shexp = 0;

  // Attention with an output gate (Qwen3.5): Wq gives, per head, the query then a gate of
  // head_dim, and attention's output is multiplied by sigmoid(gate) before Wo.
  bool attn_output_gate = false;

  // Gated delta-net layers (Qwen3.5; models/qwen35.cpp): recurrent_layers[il] set means layer il
  // is a recurrent layer that keeps a fixed-size state per sequence instead of KV cells (a
  // conv state and a delta state, kv/recurrent_state.h). Empty: every layer is attention.
  std::vector<bool> recurrent_layers;  // [n_layer] or empty
  int64_t ssm_d_conv = 0;              // ssm.conv_kernel: taps of the causal depthwise conv
  int64_t ssm_d_state = 0;             // ssm.state_size: the head dim of q, k and v
  int64_t ssm_n_k_heads = 0;           // ssm.group_count: key (and query) heads
  int64_t ssm_n_v_heads = 0;  // ssm.time_step_rank: value heads (a multiple of the key heads)

  bool is_recurrent(int64_t il) const {
    return !recurrent_layers.empty() && recurrent_layers[static_cast<size_t>(il)];
  }
  int64_t n_recurrent_layers() const;
  int64_t ssm_k_width() const { return ssm_d_state * ssm_n_k_heads; }  // q and k, each
  int64_t ssm_v_width() const { return ssm_d_state * ssm_n_v_heads; }  // v, z and the output
  int64_t ssm_conv_channels() const { return 2 * ssm_k_width() + ssm_v_width(); }  // q|k|v
  // Floats of one recurrent layer's state per sequence: the conv's last d_conv - 1 inputs, and
  // a d_state × d_state matrix per value head.
  int64_t conv_state_floats() const { return (ssm_d_conv - 1) * ssm_conv_channels(); }
  int64_t delta_state_floats() const { return ssm_n_v_heads * ssm_d_state * ssm_d_state; }
  // Bytes of one sequence's recurrent state (every recurrent layer's); 0 without such layers.
  uint64_t recurrent_state_bytes() const;

  int64_t q_width() const { return n_head * head_dim; }       // [n_tokens, q_width] after Wq
  int64_t k_width() const { return n_head_kv * head_dim; }    // after Wk
  int64_t v_width() const { return n_head_kv * head_dim_v; }  // after Wv
};

// The layer pattern and state of a model with recurrent layers, in words: which layers are gated
// delta nets and which attention, and the recurrent state one sequence holds ("" without).
std::string describe_recurrent(const ModelConfig& c);
// Gemma 4's layer kinds in words: the sliding layers' own shape, the layers that share earlier
// layers' KV cells, the per-layer embeddings ("" for a model without them).
std::string describe_layer_kinds(const ModelConfig& c);

// Key readers for ArchSpec::read_keys: a missing key gives the fallback; a present one must be
// a positive integer (resp. a finite number), else the error names the key and the value.
Result<int64_t> read_positive_or(const GgufFile& file, const std::string& key, int64_t fallback);
Result<float> read_float_or(const GgufFile& file, const std::string& key, float fallback);

// Reads and checks the hyperparameters (`<arch>.embedding_length`, …) of a model file. Every
// `<arch>.` key must be one minfer reads (for every architecture, or the architecture's own) or
// one known not to change the arithmetic: any other is refused (kUnsupported, naming it), since
// minfer would compute something else than the model means.
Result<ModelConfig> read_model_config(const GgufFile& file);

// The rope of c's attention (kernels/rope.h) at base freq_base (c.rope_freq_base, or a
// sliding-window layer's c.rope_freq_base_swa), with YaRN's correction range worked out;
// freq_factors: rope_freqs.weight's values when c.rope_freq_factors, else nullptr.
kernels::RopeConfig rope_config(const ModelConfig& c, const float* freq_factors, float freq_base);

}  // namespace minfer
