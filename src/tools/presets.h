// Hyperparameters of the models make-model imitates. The real ones are copied from each model's
// published config.json (Hugging Face): hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, vocab_size, rope_theta, rms_norm_eps,
// max_position_embeddings, tie_word_embeddings.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tools/offline_tools.h"

namespace minfer {

struct ModelPreset {
  const char* name;  // "qwen2.5-0.5b"
  const char* arch;  // general.architecture: "qwen2", "qwen3", "llama"
  int64_t n_embd;
  int64_t n_layer;
  int64_t n_head;
  int64_t n_head_kv;
  int64_t head_dim;  // 0: n_embd / n_head (no attention.key_length key written)
  int64_t n_ff;
  int64_t n_ctx_train;
  int64_t n_vocab_real;  // the real tokenizer's size (used with --tokenizer-from)
  float rope_freq_base;
  float rms_eps;
  bool tied_output;  // no output.weight
  // Mixture of experts (qwen3moe; config.json num_experts, num_experts_per_tok,
  // moe_intermediate_size); 0 for a dense model.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
};

// Llama 3.1+'s "llama3" rope scaling (config.json's rope_scaling: factor, low_freq_factor,
// high_freq_factor, original_max_position_embeddings), which a preset's files carry as
// rope_freqs.weight. factor 0: none.
struct Llama3RopePreset {
  float factor = 0.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_context = 8192;
};
Llama3RopePreset preset_llama3_rope(const ModelPreset& p);

// The sliding-window attention a preset's files declare (Gemma 3's config.json: sliding_window,
// sliding_window_pattern, rope_local_base_freq → attention.sliding_window,
// attention.sliding_window_pattern, rope.freq_base_swa). window 0: none. pattern 0 and
// rope_freq_base_swa 0 write no key (gpt-oss's files carry only the window: its layers alternate,
// llama.cpp's default for the architecture).
struct SlidingWindowPreset {
  int64_t window = 0;
  int64_t pattern = 0;  // every pattern-th layer is global, the others slide
  float rope_freq_base_swa = 0.0f;
};
SlidingWindowPreset preset_sliding_window(const ModelPreset& p);

// YaRN rope scaling (gpt-oss's config.json rope_scaling: factor, original_max_position_embeddings,
// beta_fast, beta_slow → rope.scaling.type "yarn", rope.scaling.factor,
// rope.scaling.original_context_length, rope.scaling.yarn_beta_fast / yarn_beta_slow, as
// llama.cpp's converter writes them). factor 0: none.
struct YarnPreset {
  float factor = 0.0f;
  int64_t original_context = 0;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
};
YarnPreset preset_yarn(const ModelPreset& p);

// The gated delta-net shape and layer pattern of a Qwen3.5 preset (qwen35, qwen35moe;
// ../shared/docs/models/qwen35.md): partial rotary (rope.dimension_count) with its IMROPE
// sections, ssm.conv_kernel, ssm.state_size, ssm.group_count (key heads), ssm.time_step_rank
// (value heads; ssm.inner_size is state_size · time_step_rank), full_attention_interval, and the
// MoE's shared-expert width. n_rot 0: not a Qwen3.5 preset.
struct DeltaNetPreset {
  int64_t n_rot = 0;
  std::array<int32_t, 4> rope_sections = {0, 0, 0, 0};
  int64_t d_conv = 0;
  int64_t d_state = 0;
  int64_t n_k_heads = 0;
  int64_t n_v_heads = 0;
  int64_t full_attention_interval = 0;
  int64_t n_ff_shexp = 0;  // qwen35moe: expert_shared_feed_forward_length
};
DeltaNetPreset preset_delta_net(const ModelPreset& p);

// Gemma 4's layer kinds, KV sharing and per-layer inputs (../shared/docs/models/gemma4-gptoss.md;
// config.json's sliding_window, layer_types, head_dim, num_key_value_heads, rope_parameters,
// num_kv_shared_layers, hidden_size_per_layer_input, use_double_wide_mlp, attention_k_eq_v,
// final_logit_softcapping). The full layers' head dim, KV heads and rope base are the
// ModelPreset's (global_head_dim, num_global_key_value_heads). period 0: not Gemma 4.
struct Gemma4Preset {
  int64_t window = 0;
  int64_t period = 0;  // every period-th layer is full, the others slide
  int64_t head_dim_swa = 0;
  int64_t n_head_kv_swa = 0;
  float rope_freq_base_swa = 10000.0f;
  int64_t rotated_pairs = 0;  // full layers' pairs that turn: head_dim · partial_rotary_factor / 2
  int64_t shared_kv_layers = 0;
  int64_t n_embd_per_layer = 0;
  bool double_wide_mlp = false;  // the KV-sharing layers' FFN twice as wide
  bool k_eq_v = false;           // full layers without attn_v (V from the K projection)
  float final_logit_softcap = 30.0f;
};
Gemma4Preset preset_gemma4(const ModelPreset& p);

// The preset `name` for architecture `arch`. "tiny" exists for every architecture; a real preset
// must belong to `arch` (qwen2.5-* → qwen2, qwen3-* → qwen3, qwen3-30b-a3b → qwen3moe,
// llama-3.2-1b → llama, gemma-3-* → gemma3, qwen3.5-0.8b / qwen3.5-4b → qwen35,
// qwen3.5-35b-a3b → qwen35moe, gpt-oss-20b → gpt-oss, gemma-4-* → gemma4).
Result<ModelPreset> find_preset(std::string_view arch, std::string_view name);

}  // namespace minfer
