#include "tools/model_maker.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numbers>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf_file.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"
#include "models/architectures.h"
#include "models/model_config.h"
#include "models/tensor_spec.h"
#include "tokenizer/vocab.h"
#include "tools/bpe_trainer.h"
#include "tools/presets.h"
#include "tools/quantize_model.h"

namespace minfer {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

// One row of normal(0, std) values (Box-Muller on pairs of 24-bit uniforms in (0, 1]).
void fill_normal_row(uint64_t state, float stddev, float* out, int64_t n) {
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t bits = splitmix64(state);
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1p-24f;
    const float u2 = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-24f;
    const float r = stddev * std::sqrt(-2.0f * std::log(u1));
    out[i] = r * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = r * std::sin(kTwoPi * u2);
  }
}

// The text of --chat-template's file.
Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    return make_error(ErrorCode::kNotFound, "[make-model] cannot read the chat template '{}'",
                      path);
  }
  return text.str();
}

// The layers that keep their own KV cells in a Gemma 4 preset of n_layer layers (the real one's
// n_layer_real): the real share scaled, ending on a full layer after a sliding one (a multiple
// of the period), so that the sharing layers of both kinds find a source of theirs; 0: none.
int64_t gemma4_kv_layers(const Gemma4Preset& g, int64_t n_layer_real, int64_t n_layer) {
  if (g.shared_kv_layers == 0) return 0;
  const int64_t own = (n_layer_real - g.shared_kv_layers) * n_layer / n_layer_real;
  const int64_t s = own / g.period * g.period;
  return s >= g.period && s < n_layer ? s : 0;
}

// Gemma 4's layer kinds, sharing and per-layer inputs in c (models/gemma4.cpp reads them so);
// n_layer_kv from gemma4_kv_layers.
void apply_gemma4(const Gemma4Preset& g, int64_t n_layer_kv, ModelConfig& c) {
  c.n_swa = g.window;
  c.swa_layers.assign(static_cast<size_t>(c.n_layer), false);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    c.swa_layers[static_cast<size_t>(il)] = (il + 1) % g.period != 0;
  }
  c.rope_freq_base_swa = g.rope_freq_base_swa;
  c.swa_rope_freqs = false;
  c.rope_freq_factors = true;  // rope_freqs.weight: the proportional rope of the full layers
  c.head_dim_swa = c.head_dim_v_swa = c.n_rot_swa = g.head_dim_swa;
  c.n_head_kv_swa = g.n_head_kv_swa;
  c.n_layer_kv = n_layer_kv;
  c.layer_n_ff.assign(static_cast<size_t>(c.n_layer), c.n_ff);
  c.has_wk.assign(static_cast<size_t>(c.n_layer), true);
  c.has_wv.assign(static_cast<size_t>(c.n_layer), true);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const auto i = static_cast<size_t>(il);
    const bool sharing = il >= c.n_cache_layers();  // only q: no attn_k / attn_v
    if (g.double_wide_mlp && sharing) c.layer_n_ff[i] = 2 * c.n_ff;
    c.has_wk[i] = !sharing;
    c.has_wv[i] = !sharing && !(g.k_eq_v && !c.is_swa(il));
  }
  c.n_ff = *std::max_element(c.layer_n_ff.begin(), c.layer_n_ff.end());
  c.n_embd_per_layer = g.n_embd_per_layer;
  c.final_logit_softcap = g.final_logit_softcap;
}

// Gemma 4's own keys (after set_hparams' generic ones), as llama.cpp's converter writes them:
// per-layer arrays (int32; the pattern bool) where the layers differ.
void set_gemma4_hparams(GgufWriter& w, const ModelConfig& c, const Gemma4Preset& g) {
  const std::string a = c.arch + ".";
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  std::vector<int32_t> n_ff, n_kv;
  std::vector<uint8_t> pattern;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    n_ff.push_back(static_cast<int32_t>(c.ffn_width(il)));
    n_kv.push_back(static_cast<int32_t>(c.layer_n_head_kv(il)));
    pattern.push_back(c.is_swa(il) ? 1 : 0);
  }
  if (std::ranges::count(n_ff, n_ff.front()) != c.n_layer) {
    w.set(a + "feed_forward_length", GgufValue::array(n_ff));
  }
  if (g.n_head_kv_swa != c.n_head_kv) w.set(a + "attention.head_count_kv", GgufValue::array(n_kv));
  w.set_scalar<uint32_t>(a + "attention.key_length_swa", u32(c.head_dim_swa));
  w.set_scalar<uint32_t>(a + "attention.value_length_swa", u32(c.head_dim_v_swa));
  w.set_scalar<uint32_t>(a + "rope.dimension_count_swa", u32(c.n_rot_swa));
  w.set_scalar<float>(a + "rope.freq_base_swa", c.rope_freq_base_swa);
  w.set_scalar<float>(a + "final_logit_softcapping", c.final_logit_softcap);
  w.set_scalar<uint32_t>(a + "attention.sliding_window", u32(c.n_swa));
  w.set(a + "attention.sliding_window_pattern",
        GgufValue::scalar_array_from_bytes(GgufType::kBool, std::move(pattern)));
  w.set_scalar<uint32_t>(a + "attention.shared_kv_layers",
                         u32(c.n_layer_kv > 0 ? c.n_layer - c.n_layer_kv : 0));
  w.set_scalar<uint32_t>(a + "embedding_length_per_layer_input", u32(c.n_embd_per_layer));
}

// rope_freqs.weight of Gemma 4's "proportional" rope, as llama.cpp's converter writes it: 1 for
// the pairs that turn, 1e30 (a frequency divided away) for the rest. [n_rot / 2]
std::vector<float> gemma4_rope_freqs(const Gemma4Preset& g, int64_t n_rot) {
  std::vector<float> freqs(static_cast<size_t>(n_rot / 2), 1e30f);
  std::fill_n(freqs.begin(), std::min<int64_t>(g.rotated_pairs, n_rot / 2), 1.0f);
  return freqs;
}

// The config read_model_config will find in a file made from preset p (value length = key
// length, every dimension rotated), but n_vocab: the tokenizer decides it.
ModelConfig preset_config(const ArchSpec& arch, const ModelPreset& p) {
  ModelConfig c;
  apply_arch(arch, c);
  c.n_embd = p.n_embd;
  c.n_layer = p.n_layer;
  c.n_head = p.n_head;
  c.n_head_kv = p.n_head_kv;
  c.head_dim = p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head;
  c.head_dim_v = c.head_dim;
  c.n_rot = c.head_dim;
  c.n_ff = p.n_ff;
  c.n_ctx_train = p.n_ctx_train;
  c.rope_freq_base = p.rope_freq_base;
  c.rms_eps = p.rms_eps;
  c.tied_output = p.tied_output;
  c.rope_freq_factors = preset_llama3_rope(p).factor > 0.0f;
  c.n_expert = p.n_expert;
  c.n_expert_used = p.n_expert_used;
  c.n_ff_exp = p.n_ff_exp;
  if (const DeltaNetPreset dn = preset_delta_net(p); dn.n_rot > 0) {
    // Qwen3.5: partial rotary, the delta-net shape, and every interval-th layer attention with
    // an output gate (models/qwen35.cpp reads them so).
    c.n_rot = dn.n_rot;
    c.ssm_d_conv = dn.d_conv;
    c.ssm_d_state = dn.d_state;
    c.ssm_n_k_heads = dn.n_k_heads;
    c.ssm_n_v_heads = dn.n_v_heads;
    c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), false);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      c.recurrent_layers[static_cast<size_t>(il)] = (il + 1) % dn.full_attention_interval != 0;
    }
    c.attn_output_gate = true;
    c.n_ff_shexp = dn.n_ff_shexp;
  }
  return c;
}

// The Qwen3.5 keys of a delta-net preset (after set_hparams' generic ones).
void set_delta_net_hparams(GgufWriter& w, const std::string& a, const DeltaNetPreset& dn) {
  w.set(a + ".rope.dimension_sections",
        GgufValue::array(std::vector<int32_t>(dn.rope_sections.begin(), dn.rope_sections.end())));
  w.set_scalar<uint32_t>(a + ".ssm.conv_kernel", static_cast<uint32_t>(dn.d_conv));
  w.set_scalar<uint32_t>(a + ".ssm.state_size", static_cast<uint32_t>(dn.d_state));
  w.set_scalar<uint32_t>(a + ".ssm.group_count", static_cast<uint32_t>(dn.n_k_heads));
  w.set_scalar<uint32_t>(a + ".ssm.time_step_rank", static_cast<uint32_t>(dn.n_v_heads));
  w.set_scalar<uint32_t>(a + ".ssm.inner_size", static_cast<uint32_t>(dn.d_state * dn.n_v_heads));
  w.set_scalar<uint32_t>(a + ".full_attention_interval",
                         static_cast<uint32_t>(dn.full_attention_interval));
  if (dn.n_ff_shexp > 0) {
    w.set_scalar<uint32_t>(a + ".expert_shared_feed_forward_length",
                           static_cast<uint32_t>(dn.n_ff_shexp));
  }
}

// ssm_a holds −exp(A_log), the per-head decay rate of the delta state, which must be negative
// (a positive one grows the state without bound): −exp(x) of the row's normal values scaled to
// std 0.5, so rates spread around −1 as a trained model's do.
void make_decay_rates(float* row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] = -std::exp(25.0f * row[i]);
}

// rope_freqs.weight of Llama 3's "llama3" rope scaling, as llama.cpp's converter computes it
// (convert_hf_to_gguf.py, LlamaModel; in float, as its float32 tensors): a pair whose wavelength
// 2π / base^(-2i / n_rot) is under original_context / high_freq_factor keeps its frequency (1),
// one over original_context / low_freq_factor turns `factor` times slower, and one between
// mixes the two smoothly. [n_rot / 2]
std::vector<float> llama3_rope_freqs(const Llama3RopePreset& s, int64_t n_rot, float base) {
  const float context = static_cast<float>(s.original_context);
  const float short_wavelen = context / s.high_freq_factor;
  const float long_wavelen = context / s.low_freq_factor;
  std::vector<float> freqs;
  for (int64_t i = 0; i < n_rot; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(n_rot));
    const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
    if (wavelen < short_wavelen) {
      freqs.push_back(1.0f);
    } else if (wavelen > long_wavelen) {
      freqs.push_back(s.factor);
    } else {
      const float smooth =
          (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      freqs.push_back(1.0f / ((1.0f - smooth) / s.factor + smooth));
    }
  }
  return freqs;
}

// The hyperparameter keys of c (as llama.cpp's converter writes them); key and value lengths
// only when the preset sets head_dim (Qwen3), as the real files do.
void set_hparams(GgufWriter& w, const ModelConfig& c, bool explicit_head_dim,
                 const std::string& name, uint32_t file_type) {
  const std::string a = c.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", name);
  w.set_scalar<uint32_t>(a + ".vocab_size", static_cast<uint32_t>(c.n_vocab));
  w.set_scalar<uint32_t>(a + ".context_length", static_cast<uint32_t>(c.n_ctx_train));
  w.set_scalar<uint32_t>(a + ".embedding_length", static_cast<uint32_t>(c.n_embd));
  w.set_scalar<uint32_t>(a + ".block_count", static_cast<uint32_t>(c.n_layer));
  w.set_scalar<uint32_t>(a + ".feed_forward_length", static_cast<uint32_t>(c.n_ff));
  w.set_scalar<uint32_t>(a + ".attention.head_count", static_cast<uint32_t>(c.n_head));
  w.set_scalar<uint32_t>(a + ".attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
  if (explicit_head_dim) {
    w.set_scalar<uint32_t>(a + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.set_scalar<uint32_t>(a + ".attention.value_length", static_cast<uint32_t>(c.head_dim_v));
  }
  w.set_scalar<uint32_t>(a + ".rope.dimension_count", static_cast<uint32_t>(c.n_rot));
  w.set_scalar<float>(a + ".rope.freq_base", c.rope_freq_base);
  w.set_scalar<float>(a + ".attention.layer_norm_rms_epsilon", c.rms_eps);
  if (c.n_expert > 0) {
    w.set_scalar<uint32_t>(a + ".expert_count", static_cast<uint32_t>(c.n_expert));
    w.set_scalar<uint32_t>(a + ".expert_used_count", static_cast<uint32_t>(c.n_expert_used));
    w.set_scalar<uint32_t>(a + ".expert_feed_forward_length", static_cast<uint32_t>(c.n_ff_exp));
  }
  w.set_scalar<uint32_t>("general.file_type", file_type);
  w.set_scalar<uint32_t>("general.quantization_version", 2);
}

// --reranker: the head's tensors (after the model's) and keys (MakeModelOptions::reranker).
Status add_reranker_head(const MakeModelOptions& o, const ModelConfig& c, GgufWriter& meta,
                         std::vector<TensorSpec>& specs) {
  if (o.reranker.empty()) return Status::ok();
  const int64_t n_embd = c.n_embd;
  if (o.reranker == "cls") {
    specs.push_back({"cls.weight", TensorRole::kMatrix, n_embd, n_embd, nullptr});
    specs.push_back({"cls.bias", TensorRole::kBias, n_embd, 1, nullptr});
    specs.push_back({"cls.output.weight", TensorRole::kMatrix, n_embd, 1, nullptr});
    specs.push_back({"cls.output.bias", TensorRole::kBias, 1, 1, nullptr});
  } else if (o.reranker == "qwen3") {
    specs.push_back({"cls.output.weight", TensorRole::kMatrix, n_embd, 2, nullptr});
    meta.set(c.arch + ".classifier.output_labels", GgufValue::string_array({"yes", "no"}));
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "[make-model] unknown reranker head '{}': expected cls or qwen3", o.reranker);
  }
  meta.set_scalar<uint32_t>(c.arch + ".pooling_type", 4);  // llama.cpp's rank pooling
  return Status::ok();
}

// A per-token array of n_real entries (kv) written to meta grown to n with `fill`.
template <typename T>
Status pad_token_array(const GgufKeyValue& kv, size_t n_real, size_t n, T fill, GgufWriter& meta) {
  std::vector<T> values = kv.value.array_as<T>().value_or(std::vector<T>{});
  if (values.size() != n_real) {
    return make_error(ErrorCode::kInvalidArgument, "[make-model] {} has {} entries for {} tokens",
                      kv.key, values.size(), n_real);
  }
  values.resize(n, fill);
  meta.set(kv.key, GgufValue::array(values));
  return Status::ok();
}

// The tokenizer.* keys of `other`, its vocabulary padded to `n_rows` with unused "[PADn]"
// tokens when it has fewer (as Hugging Face conversions pad Qwen's 151,643 tokens to the
// model's 151,936 rows), so a preset keeps its real embedding and output rows (Qwen3.5's
// 248,320 with Qwen3's tokenizer). Returns the vocabulary size.
Result<int64_t> copy_tokenizer(const GgufFile& other, int64_t n_rows, GgufWriter& meta) {
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                          other.get_string_array("tokenizer.ggml.tokens"));
  const size_t n_real = tokens->size();
  const size_t n = std::max(n_real, static_cast<size_t>(n_rows));
  for (const GgufKeyValue& kv : other.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) meta.set(kv.key, kv.value);
  }
  if (n == n_real) return static_cast<int64_t>(n);
  std::vector<std::string> padded = *tokens;
  for (size_t id = n_real; id < n; ++id) padded.push_back(fmt::format("[PAD{}]", id));
  meta.set("tokenizer.ggml.tokens", GgufValue::string_array(std::move(padded)));
  // The per-token arrays grow with it: unused tokens (type 5), score 0.
  for (const GgufKeyValue& kv : other.metadata()) {
    if (kv.key == "tokenizer.ggml.token_type") {
      MINFER_RETURN_IF_ERROR(pad_token_array(
          kv, n_real, n, static_cast<int32_t>(tokenizer::TokenType::kUnused), meta));
    } else if (kv.key == "tokenizer.ggml.scores") {
      MINFER_RETURN_IF_ERROR(pad_token_array(kv, n_real, n, 0.0f, meta));
    }
  }
  return static_cast<int64_t>(n);
}

// Everything about the file but the weights: metadata, tensors in file order, their types.
struct Prepared {
  GgufWriter meta;
  std::vector<TensorSpec> specs;  // in file order
  ModelLayout layout;
  std::vector<float> rope_freqs;  // [n_rot / 2]: rope_freqs.weight's values (Llama 3 presets)
};

Result<Prepared> prepare(const MakeModelOptions& o) {
  MINFER_ASSIGN_OR_RETURN(const ArchSpec arch, find_arch(o.arch));
  MINFER_ASSIGN_OR_RETURN(ModelPreset preset, find_preset(o.arch, o.preset));
  if (o.n_layer < 0 || o.n_layer > preset.n_layer) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[make-model] n_layer {} is not in 1..{} (preset '{}' has {} blocks)",
                      o.n_layer, preset.n_layer, o.preset, preset.n_layer);
  }
  const int64_t n_layer_real = preset.n_layer;
  if (o.n_layer > 0) preset.n_layer = o.n_layer;
  MINFER_ASSIGN_OR_RETURN(QuantMix mix, find_quant_mix(o.type));

  // Hyperparameters first, then the tokenizer keys, as in files from llama.cpp's converter;
  // vocab_size is filled in (in place) once the tokenizer is known.
  Prepared p;
  GgufWriter& meta = p.meta;
  const std::string name = fmt::format("random-{}-{}", o.arch, o.preset);
  ModelConfig config = preset_config(arch, preset);  // n_vocab: 0 until the tokenizer is known
  if (config.rope_freq_factors) {
    p.rope_freqs =
        llama3_rope_freqs(preset_llama3_rope(preset), config.n_rot, config.rope_freq_base);
  }
  const Gemma4Preset gemma4 = preset_gemma4(preset);
  if (gemma4.period > 0) {
    apply_gemma4(gemma4, gemma4_kv_layers(gemma4, n_layer_real, preset.n_layer), config);
    p.rope_freqs = gemma4_rope_freqs(gemma4, config.n_rot);
  }
  set_hparams(meta, config, preset.head_dim > 0, name, mix.file_type);
  if (gemma4.period > 0) set_gemma4_hparams(meta, config, gemma4);
  if (const DeltaNetPreset dn = preset_delta_net(preset); dn.n_rot > 0) {
    set_delta_net_hparams(meta, config.arch, dn);
  }
  if (const SlidingWindowPreset swa = preset_sliding_window(preset); swa.window > 0) {
    meta.set_scalar<uint32_t>(config.arch + ".attention.sliding_window",
                              static_cast<uint32_t>(swa.window));
    if (swa.pattern > 0) {
      meta.set_scalar<uint32_t>(config.arch + ".attention.sliding_window_pattern",
                                static_cast<uint32_t>(swa.pattern));
    }
    if (swa.rope_freq_base_swa > 0.0f) {
      meta.set_scalar<float>(config.arch + ".rope.freq_base_swa", swa.rope_freq_base_swa);
    }
  }
  if (const YarnPreset yarn = preset_yarn(preset); yarn.factor > 0.0f) {
    const std::string a = config.arch + ".rope.scaling.";
    meta.set_string(a + "type", "yarn");
    meta.set_scalar<float>(a + "factor", yarn.factor);
    meta.set_scalar<uint32_t>(a + "original_context_length",
                              static_cast<uint32_t>(yarn.original_context));
    meta.set_scalar<float>(a + "yarn_beta_fast", yarn.beta_fast);
    meta.set_scalar<float>(a + "yarn_beta_slow", yarn.beta_slow);
  }
  int64_t n_vocab = 0;
  if (o.tokenizer_from.empty()) {
    n_vocab = add_builtin_tokenizer(meta, o.arch);
  } else {
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> other, GgufFile::open(o.tokenizer_from));
    MINFER_ASSIGN_OR_RETURN(n_vocab, copy_tokenizer(*other, preset.n_vocab_real, meta));
  }
  if (!o.chat_template.empty()) {
    MINFER_ASSIGN_OR_RETURN(std::string source, read_text_file(o.chat_template));
    meta.set_string("tokenizer.chat_template", std::move(source));
  }
  config.n_vocab = n_vocab;
  meta.set_scalar<uint32_t>(config.arch + ".vocab_size", static_cast<uint32_t>(n_vocab));

  std::vector<TensorSpec> specs = arch.tensors(config);
  MINFER_RETURN_IF_ERROR(add_reranker_head(o, config, meta, specs));
  std::vector<TensorDesc> descs;
  for (const TensorSpec& s : specs) descs.push_back({s.name, GgmlType::kF32, s.shape(), s.role});
  const std::vector<size_t> order = llama_tensor_order(descs);
  std::vector<TensorDesc> ordered;
  for (size_t i : order) ordered.push_back(descs[i]);
  const TypePlan plan = plan_tensor_types(mix, ordered, o.arch, preset.n_layer, preset.n_head,
                                          preset.n_head_kv, preset.n_expert);
  for (size_t k = 0; k < ordered.size(); ++k) {
    p.specs.push_back(specs[order[k]]);
    p.layout.tensors.push_back({ordered[k].name, plan.types[k], ordered[k].shape});
  }
  p.layout.n_vocab = n_vocab;
  return p;
}

}  // namespace

Result<ModelLayout> make_model_layout(const MakeModelOptions& o) {
  MINFER_ASSIGN_OR_RETURN(Prepared p, prepare(o));
  return std::move(p.layout);
}

Result<MakeModelReport> make_model(const MakeModelOptions& o) {
  MINFER_RETURN_IF_ERROR(kernels::init_kernels());  // a bad MINFER_FORCE_ISA is an error
  MINFER_ASSIGN_OR_RETURN(Prepared p, prepare(o));
  const std::vector<TensorSpec>& specs = p.specs;
  const std::vector<GgufStreamWriter::TensorLayout> layout = p.layout.tensors;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<kernels::ThreadPool> pool,
                          kernels::ThreadPool::create(std::max(o.n_threads, 0)));
  MINFER_ASSIGN_OR_RETURN(GgufStreamWriter out, GgufStreamWriter::create(o.output, p.meta, layout));

  MakeModelReport report;
  report.n_vocab = p.layout.n_vocab;
  report.n_tensors = static_cast<int64_t>(specs.size());
  for (const TensorSpec& spec : specs) report.n_params += spec.n_cols * spec.total_rows();
  Progress progress("make-model", report.n_params, o.progress);
  int64_t done = 0;
  std::vector<float> values;       // [n_rows, n_per_row] of the tensor being made
  std::vector<uint8_t> converted;  // the same in its target type
  for (size_t k = 0; k < specs.size(); ++k) {
    const TensorSpec& spec = specs[k];
    const int64_t n_per_row = spec.n_cols;
    const int64_t n_rows = spec.total_rows();  // every expert's rows of a 3-D tensor
    values.resize(static_cast<size_t>(n_per_row * n_rows));
    const uint64_t tensor_seed = o.seed ^ fnv1a(spec.name);
    pool->parallel_for(n_rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* row = values.data() + r * n_per_row;
        if (spec.role == TensorRole::kNorm) {
          std::fill(row, row + n_per_row, 1.0f);
        } else if (spec.role == TensorRole::kRopeFreqs) {
          std::copy(p.rope_freqs.begin(), p.rope_freqs.end(), row);
        } else {
          // Distinct, well-mixed generator states per (seed, tensor, row).
          uint64_t state = tensor_seed + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(r + 1);
          fill_normal_row(splitmix64(state), 0.02f, row, n_per_row);
          if (spec.name.ends_with(".ssm_a")) make_decay_rates(row, n_per_row);
        }
      }
    });
    const std::span<const uint8_t> f32_bytes(reinterpret_cast<const uint8_t*>(values.data()),
                                             values.size() * sizeof(float));
    convert_tensor(GgmlType::kF32, f32_bytes, layout[k].type, n_per_row, n_rows, *pool, converted);
    MINFER_RETURN_IF_ERROR(out.write_next(converted));
    report.n_tensor_bytes += converted.size();
    done += n_per_row * n_rows;
    progress.update(done, spec.name);
  }
  MINFER_RETURN_IF_ERROR(out.close());
  progress.finish();
  return report;
}

}  // namespace minfer
