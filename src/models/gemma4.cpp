// Gemma 4 (E2B, E4B, 26B-A4B, 31B; ../shared/docs/models/gemma4-gptoss.md, as llama.cpp's
// gemma4 graph computes it). Sliding and full layers each have their own head dims, KV head
// counts and rope (full layers: rope.freq_base and rope_freqs.weight as divisors, the
// "proportional" rope whose tail pairs do not turn; sliding ones: rope.freq_base_swa, no
// divisors), q and k RMS-normed per head with weights, v without, attention scale 1.
// The last attention.shared_kv_layers layers compute only q and read the cells of an earlier
// layer of their kind (ModelConfig::kv_source), keeping none. Per-layer embeddings (PLE: E2B /
// E4B) add to each block's output a GELU-gated projection of an input of its own, made from the
// token and the embeddings. The 26B-A4B MoE runs a dense GEGLU FFN and a mixture of GEGLU
// experts side by side. Every block's output is multiplied by layer_output_scale; the logits are
// softcapped. Norm weights are used as stored (the converter adds nothing, unlike Gemma 3's).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/architectures.h"
#include "models/decoder.h"

namespace minfer {

namespace {

constexpr const char* kGemma4OwnKeys[] = {
    "attention.key_length_swa",   "attention.value_length_swa",
    "rope.dimension_count_swa",   "rope.freq_base_swa",
    "attention.sliding_window",   "attention.sliding_window_pattern",
    "attention.shared_kv_layers", "embedding_length_per_layer_input",
    "final_logit_softcapping",    "expert_count",
    "expert_used_count",          "expert_feed_forward_length",
};

Status corrupt(const GgufFile& file, const std::string& key, const std::string& what) {
  return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' {}", file.name(), key, what);
}

// A per-layer integer key: one positive integer for every layer, or an array of n_layer of them.
Result<std::vector<int64_t>> read_per_layer(const GgufFile& file, const std::string& key,
                                            int64_t n_layer) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) return corrupt(file, key, "is missing");
  std::vector<int64_t> out;
  if (!v->is_array()) {
    MINFER_ASSIGN_OR_RETURN(const int64_t n, file.get_integer(key));
    out.assign(static_cast<size_t>(n_layer), n);
  } else if (auto u = v->array_as<uint32_t>()) {
    out.assign(u->begin(), u->end());
  } else if (auto i = v->array_as<int32_t>()) {
    out.assign(i->begin(), i->end());
  } else {
    return corrupt(file, key,
                   fmt::format("is {}, expected an array of 32-bit integers", v->describe()));
  }
  if (static_cast<int64_t>(out.size()) != n_layer) {
    return corrupt(file, key,
                   fmt::format("has {} entries, expected one per layer ({})", out.size(), n_layer));
  }
  for (const int64_t n : out) {
    if (n <= 0) return corrupt(file, key, fmt::format("holds {}, expected > 0", n));
  }
  return out;
}

// The one value `values` holds over the layers of a kind (sliding or not), or an error: the KV
// cache keeps one shape per kind.
Result<int64_t> one_per_kind(const GgufFile& file, const std::string& key, const ModelConfig& c,
                             const std::vector<int64_t>& values, bool swa) {
  int64_t found = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (c.is_swa(il) != swa) continue;
    const int64_t v = values[static_cast<size_t>(il)];
    if (found != 0 && v != found) {
      return make_error(ErrorCode::kUnsupported,
                        "[model] '{}': key '{}' gives {} layers {} and {} heads: minfer needs one "
                        "count per layer kind",
                        file.name(), key, swa ? "sliding" : "full", found, v);
    }
    found = v;
  }
  return found;
}

// Sliding layers: attention.sliding_window (> 0) and the per-layer pattern (true = sliding).
Status read_layer_kinds(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(c.n_swa, file.get_integer(p + "attention.sliding_window"));
  if (c.n_swa <= 0) return corrupt(file, p + "attention.sliding_window", "must be > 0");
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  const GgufValue* pattern = file.find(pattern_key);
  if (pattern == nullptr || !pattern->is_array() || pattern->element_type() != GgufType::kBool ||
      static_cast<int64_t>(pattern->array_bytes().size()) != c.n_layer) {
    return corrupt(file, pattern_key,
                   fmt::format("is {}, expected an array of one bool per layer ({})",
                               pattern == nullptr ? "missing" : pattern->describe(), c.n_layer));
  }
  c.swa_layers.clear();
  for (const uint8_t b : pattern->array_bytes()) c.swa_layers.push_back(b != 0);
  MINFER_ASSIGN_OR_RETURN(c.rope_freq_base_swa,
                          read_float_or(file, p + "rope.freq_base_swa", 10000.0f));
  c.swa_rope_freqs = false;
  return Status::ok();
}

// The sliding layers' head dims and rotated dims, and both kinds' KV head counts.
Status read_layer_shapes(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(c.head_dim_swa, file.get_integer(p + "attention.key_length_swa"));
  MINFER_ASSIGN_OR_RETURN(c.head_dim_v_swa, file.get_integer(p + "attention.value_length_swa"));
  MINFER_ASSIGN_OR_RETURN(c.n_rot_swa,
                          read_positive_or(file, p + "rope.dimension_count_swa", c.head_dim_swa));
  if (c.head_dim_swa <= 0 || c.head_dim_swa != c.head_dim_v_swa || c.head_dim != c.head_dim_v) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': key and value head dims must be equal and > 0 (full {} / {}, "
                      "sliding {} / {})",
                      file.name(), c.head_dim, c.head_dim_v, c.head_dim_swa, c.head_dim_v_swa);
  }
  if (c.n_rot_swa > c.head_dim_swa || c.n_rot_swa % 2 != 0 || c.n_rot_swa > kernels::kMaxRopeDims) {
    return corrupt(file, p + "rope.dimension_count_swa",
                   fmt::format("is {}: must be even and at most the sliding head dim {}",
                               c.n_rot_swa, c.head_dim_swa));
  }
  const std::string kv_key = p + "attention.head_count_kv";
  std::vector<int64_t> n_kv(static_cast<size_t>(c.n_layer), c.n_head);
  if (file.has(kv_key)) {
    MINFER_ASSIGN_OR_RETURN(n_kv, read_per_layer(file, kv_key, c.n_layer));
  }
  MINFER_ASSIGN_OR_RETURN(c.n_head_kv_swa, one_per_kind(file, kv_key, c, n_kv, true));
  MINFER_ASSIGN_OR_RETURN(const int64_t n_kv_full, one_per_kind(file, kv_key, c, n_kv, false));
  if (n_kv_full > 0) c.n_head_kv = n_kv_full;
  if (c.n_head_kv_swa == 0) c.n_head_kv_swa = c.n_head_kv;
  for (const int64_t n : {c.n_head_kv, c.n_head_kv_swa}) {
    if (c.n_head % n != 0) {
      return corrupt(file, kv_key,
                     fmt::format("gives {} KV heads, which do not divide n_head {}", n, c.n_head));
    }
  }
  MINFER_ASSIGN_OR_RETURN(c.layer_n_ff, read_per_layer(file, p + "feed_forward_length", c.n_layer));
  c.n_ff = 0;
  for (const int64_t n : c.layer_n_ff) c.n_ff = std::max(c.n_ff, n);
  return Status::ok();
}

// KV sharing: the last shared_kv_layers layers read layer n_layer_kv - 2's cells if they slide,
// n_layer_kv - 1's if not, which must be of the same kind.
Status read_kv_sharing(const GgufFile& file, const std::string& p, ModelConfig& c) {
  const std::string key = p + "attention.shared_kv_layers";
  int64_t shared = 0;
  if (file.has(key)) {
    MINFER_ASSIGN_OR_RETURN(shared, file.get_integer(key));
  }
  // (No sharing is valid at any depth: a one-layer file has none.)
  const int64_t most = std::max<int64_t>(0, c.n_layer - 2);
  if (shared < 0 || shared > most) {
    return corrupt(file, key, fmt::format("is {}, expected 0 to n_layer - 2 ({})", shared, most));
  }
  c.n_layer_kv = shared > 0 ? c.n_layer - shared : 0;
  for (int64_t il = c.n_cache_layers(); il < c.n_layer; ++il) {
    const int64_t src = c.kv_source(il);
    if (c.is_swa(src) != c.is_swa(il)) {
      return make_error(ErrorCode::kUnsupported,
                        "[model] '{}': layer {} ({}) would share the cells of layer {}, which is "
                        "of the other kind",
                        file.name(), il, c.is_swa(il) ? "sliding" : "full", src);
    }
  }
  return Status::ok();
}

// Which layers have attn_k / attn_v (ModelConfig::has_wk, has_wv).
void read_kv_tensors(const GgufFile& file, ModelConfig& c) {
  c.has_wk.assign(static_cast<size_t>(c.n_layer), true);
  c.has_wv.assign(static_cast<size_t>(c.n_layer), true);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const auto i = static_cast<size_t>(il);
    c.has_wk[i] = il < c.n_cache_layers() ||
                  file.find_tensor(fmt::format("blk.{}.attn_k.weight", il)) != nullptr;
    c.has_wv[i] = file.find_tensor(fmt::format("blk.{}.attn_v.weight", il)) != nullptr;
  }
}

Status gemma4_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_RETURN_IF_ERROR(read_layer_kinds(file, p, c));
  MINFER_RETURN_IF_ERROR(read_layer_shapes(file, p, c));
  MINFER_RETURN_IF_ERROR(read_kv_sharing(file, p, c));
  read_kv_tensors(file, c);
  MINFER_ASSIGN_OR_RETURN(c.n_embd_per_layer,
                          file.get_integer(p + "embedding_length_per_layer_input"));
  if (c.n_embd_per_layer < 0) {
    return corrupt(file, p + "embedding_length_per_layer_input", "must be >= 0");
  }
  MINFER_ASSIGN_OR_RETURN(c.final_logit_softcap,
                          read_float_or(file, p + "final_logit_softcapping", 30.0f));
  if (c.final_logit_softcap < 0.0f) {
    return corrupt(file, p + "final_logit_softcapping", "must be >= 0");
  }
  if (file.has(p + "expert_count")) MINFER_RETURN_IF_ERROR(read_moe_keys(file, p, c));
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = true;
  c.ffn_act = FfnActivation::kGelu;
  c.attn_q_scale = 1.0f;
  c.v_norm = true;
  return Status::ok();
}

// Whether per-layer flags (ModelConfig::has_wk, has_wv) hold for layer il; empty: every layer.
bool layer_flag(const std::vector<bool>& flags, int64_t il) {
  return flags.empty() || flags[static_cast<size_t>(il)];
}

// Block il's attention tensors, with its kind's head dims and KV heads.
void attention_tensors(const ModelConfig& c, int64_t il, TensorList& t) {
  const int64_t hd = c.layer_head_dim(il);
  const int64_t n_kv = c.layer_n_head_kv(il);
  t.norm("attn_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_norm>);
  t.matrix("attn_q.weight", c.n_embd, c.n_head * hd, layer_slot<&LayerWeights::wq>);
  if (layer_flag(c.has_wk, il)) {
    t.matrix("attn_k.weight", c.n_embd, n_kv * hd, layer_slot<&LayerWeights::wk>);
    t.norm("attn_k_norm.weight", hd, layer_slot<&LayerWeights::k_norm>);
  }
  if (layer_flag(c.has_wv, il)) {
    t.matrix("attn_v.weight", c.n_embd, n_kv * c.layer_head_dim_v(il),
             layer_slot<&LayerWeights::wv>);
  }
  t.matrix("attn_output.weight", c.n_head * c.layer_head_dim_v(il), c.n_embd,
           layer_slot<&LayerWeights::wo>);
  t.norm("attn_q_norm.weight", hd, layer_slot<&LayerWeights::q_norm>);
  t.norm("post_attention_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_post_norm>);
  t.norm("layer_output_scale.weight", 1, layer_slot<&LayerWeights::layer_output_scale>);
}

// Block il's FFN: the dense GEGLU of its width, and the experts beside it in a MoE model.
void ffn_tensors(const ModelConfig& c, int64_t il, TensorList& t) {
  const int64_t n_ff = c.ffn_width(il);
  t.norm("ffn_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_norm>);
  t.matrix("ffn_gate.weight", c.n_embd, n_ff, layer_slot<&LayerWeights::gate>);
  t.matrix("ffn_up.weight", c.n_embd, n_ff, layer_slot<&LayerWeights::up>);
  t.matrix("ffn_down.weight", n_ff, c.n_embd, layer_slot<&LayerWeights::down>);
  t.norm("post_ffw_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_post_norm>);
  if (c.n_expert == 0) return;
  t.matrix("ffn_gate_inp.weight", c.n_embd, c.n_expert, layer_slot<&LayerWeights::ffn_gate_inp>);
  t.norm("ffn_gate_inp.scale", c.n_embd, layer_slot<&LayerWeights::ffn_gate_inp_scale>);
  t.norm("pre_ffw_norm_2.weight", c.n_embd, layer_slot<&LayerWeights::pre_ffw_norm_2>);
  t.norm("post_ffw_norm_1.weight", c.n_embd, layer_slot<&LayerWeights::post_ffw_norm_1>);
  t.norm("post_ffw_norm_2.weight", c.n_embd, layer_slot<&LayerWeights::post_ffw_norm_2>);
  t.matrices("ffn_gate_up_exps.weight", c.n_embd, 2 * c.n_ff_exp, c.n_expert,
             layer_slot<&LayerWeights::gate_up_exps>);
  t.matrices("ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert,
             layer_slot<&LayerWeights::down_exps>);
  t.norm("ffn_down_exps.scale", c.n_expert, layer_slot<&LayerWeights::down_exps_scale>);
}

std::vector<TensorSpec> gemma4_tensors(const ModelConfig& c) {
  std::vector<TensorSpec> specs;
  TensorList t(specs);
  global_tensors(c, t);
  if (c.rope_freq_factors) {
    t.rope_freqs("rope_freqs.weight", c.n_rot / 2, optional_model_slot<&ModelWeights::rope_freqs>);
  }
  const int64_t n_pl = c.n_embd_per_layer;
  if (n_pl > 0) {
    t.matrix("per_layer_token_embd.weight", n_pl * c.n_layer, c.n_vocab,
             optional_model_slot<&ModelWeights::per_layer_token_embd>);
    t.matrix("per_layer_model_proj.weight", c.n_embd, n_pl * c.n_layer,
             optional_model_slot<&ModelWeights::per_layer_model_proj>);
    t.norm("per_layer_proj_norm.weight", n_pl,
           optional_model_slot<&ModelWeights::per_layer_proj_norm>);
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    t.begin_layer(il);
    attention_tensors(c, il, t);
    ffn_tensors(c, il, t);
    if (n_pl > 0) {
      t.matrix("inp_gate.weight", c.n_embd, n_pl, layer_slot<&LayerWeights::ple_inp_gate>);
      t.matrix("proj.weight", n_pl, c.n_embd, layer_slot<&LayerWeights::ple_proj>);
      t.norm("post_norm.weight", c.n_embd, layer_slot<&LayerWeights::ple_post_norm>);
    }
  }
  return specs;
}

// The names of block il's nodes: "blk.<il>.<what>".
struct Names {
  int64_t il;
  std::string operator()(const char* what) const { return fmt::format("blk.{}.{}", il, what); }
};

// The per-layer inputs of every layer, [n_tokens, n_embd_per_layer · n_layer]:
// (rms(P · x / √n_embd) ⊙ per_layer_proj_norm per layer + E_pl[token] · √n_pl) / √2.
NodeId per_layer_inputs(GraphBuilder& g, const ModelConfig& c, const ModelWeights& w, NodeId x) {
  const int64_t n_pl = c.n_embd_per_layer;
  NodeId tok = g.get_rows("per_layer_token_embd", *w.per_layer_token_embd);
  tok = g.scale("per_layer_token_embd_scale", tok, std::sqrt(static_cast<float>(n_pl)));
  NodeId proj = g.matmul("per_layer_model_proj", x, *w.per_layer_model_proj);
  proj =
      g.scale("per_layer_model_proj_scale", proj, 1.0f / std::sqrt(static_cast<float>(c.n_embd)));
  proj = g.rms_norm("per_layer_proj_norm", proj, *w.per_layer_proj_norm, c.rms_eps, n_pl);
  const NodeId sum = g.add("per_layer_inputs_sum", proj, tok);
  return g.scale("per_layer_inputs", sum, 1.0f / std::sqrt(2.0f));
}

// h → RMSNorm → q (and, unless the layer shares an earlier one's cells, k and v, normed, roped
// and stored) → attention → Wo → RMSNorm → + h. On the last layer only the output rows go on.
NodeId attention(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il, NodeId h,
                 bool select_outputs) {
  const Names name{il};
  const int64_t hd = c.layer_head_dim(il);
  const int64_t dv = c.layer_head_dim_v(il);
  const int64_t n_kv = c.layer_n_head_kv(il);
  const kernels::RopeConfig rope = layer_rope(c, w, il);
  const NodeId x = g.rms_norm(name("attn_norm"), h, w.attn_norm, c.rms_eps);
  NodeId q = g.matmul(name("attn_q"), x, w.wq);  // [n, n_head · hd]
  q = g.rms_norm(name("attn_q_norm"), q, *w.q_norm, c.rms_eps, hd);
  q = g.rope(name("attn_q_rope"), q, c.n_head, hd, rope);
  if (il < c.n_cache_layers()) {
    const NodeId k_proj = g.matmul(name("attn_k"), x, w.wk);  // [n, n_kv · hd]
    // Without attn_v, V is the K projection (before K's norm and rope).
    NodeId v = layer_flag(c.has_wv, il) ? g.matmul(name("attn_v"), x, w.wv) : k_proj;
    v = g.rms_norm(name("attn_v_norm"), v, *w.v_norm, c.rms_eps, dv);
    NodeId k = g.rms_norm(name("attn_k_norm"), k_proj, *w.k_norm, c.rms_eps, hd);
    k = g.rope(name("attn_k_rope"), k, n_kv, hd, rope);
    g.kv_store(name("kv_store"), k, v, il);
  }
  const NodeId a = g.attention(name("attn"), q, c.kv_source(il), c.n_head, hd, dv, 1.0f,
                               c.is_swa(il) ? c.n_swa : 0);
  NodeId o = g.matmul(name("attn_output"), a, w.wo);  // [n, n_embd]
  if (select_outputs) {
    o = g.select_rows(name("attn_output_rows"), o);
    h = g.select_rows(name("residual_rows"), h);
  }
  o = g.rms_norm(name("attn_post_norm"), o, *w.attn_post_norm, c.rms_eps);
  return g.add(name("attn_residual"), h, o);
}

// down(gelu(gate(x)) · up(x)) of the dense FFN.
NodeId dense_geglu(GraphBuilder& g, const LayerWeights& w, const Names& name, NodeId x) {
  const NodeId gate = g.matmul(name("ffn_gate"), x, w.gate);
  const NodeId up = g.matmul(name("ffn_up"), x, w.up);
  return g.matmul(name("ffn_down"), g.geglu(name("ffn_geglu"), gate, up), w.down);
}

// The MoE's two halves on r: RMSNorm(dense(x)) ⊙ post_ffw_norm_1 + RMSNorm(experts(RMSNorm(r) ⊙
// pre_ffw_norm_2)) ⊙ post_ffw_norm_2, routed by W_r (RMSNorm(r) ⊙ gate_inp.scale / √n_embd).
NodeId dense_and_experts(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w,
                         const Names& name, NodeId r, NodeId dense) {
  const NodeId f1 = g.rms_norm(name("ffn_post_norm_1"), dense, *w.post_ffw_norm_1, c.rms_eps);
  NodeId router_in = g.rms_norm(name("ffn_gate_inp_norm"), r, *w.ffn_gate_inp_scale, c.rms_eps);
  router_in = g.scale(name("ffn_gate_inp_scale"), router_in,
                      1.0f / std::sqrt(static_cast<float>(c.n_embd)));
  const NodeId logits = g.matmul(name("ffn_moe_logits"), router_in, *w.ffn_gate_inp);
  const NodeId x = g.rms_norm(name("ffn_pre_norm_2"), r, *w.pre_ffw_norm_2, c.rms_eps);
  const NodeId moe = g.moe_geglu(name("ffn_moe"), x, logits, *w.gate_up_exps, *w.down_exps,
                                 *w.down_exps_scale, c.n_expert_used);  // [n, n_embd]
  const NodeId f2 = g.rms_norm(name("ffn_post_norm_2"), moe, *w.post_ffw_norm_2, c.rms_eps);
  return g.add(name("ffn_dense_and_experts"), f1, f2);
}

// r → RMSNorm → FFN [and experts] → RMSNorm → + r.
NodeId ffn(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il, NodeId r) {
  const Names name{il};
  const NodeId x = g.rms_norm(name("ffn_norm"), r, w.ffn_norm, c.rms_eps);
  NodeId f = dense_geglu(g, w, name, x);
  if (c.n_expert > 0) f = dense_and_experts(g, c, w, name, r, f);
  const NodeId out = g.rms_norm(name("ffn_post_norm"), f, *w.ffn_post_norm, c.rms_eps);
  return g.add(name("ffn_residual"), r, out);
}

// cur + RMSNorm(proj(gelu(inp_gate · cur) ⊙ the layer's per-layer input)).
NodeId per_layer_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                       NodeId cur, NodeId inputs) {
  const Names name{il};
  const int64_t n_pl = c.n_embd_per_layer;
  const NodeId own = g.columns(name("ple_input"), inputs, 1, il * n_pl, n_pl);  // [n, n_pl]
  const NodeId gate = g.matmul(name("ple_inp_gate"), cur, *w.ple_inp_gate);     // [n, n_pl]
  NodeId p = g.matmul(name("ple_proj"), g.geglu(name("ple_geglu"), gate, own), *w.ple_proj);
  p = g.rms_norm(name("ple_post_norm"), p, *w.ple_post_norm, c.rms_eps);
  return g.add(name("ple_residual"), cur, p);
}

NodeId gemma4_build(GraphBuilder& g, const ModelConfig& c, const ModelWeights& w, bool hidden) {
  NodeId h = g.get_rows("token_embd", w.token_embd);  // [n_tokens, n_embd]
  h = g.scale("token_embd_scale", h, c.embd_scale);
  // [n_tokens, n_embd_per_layer · n_layer]
  NodeId inputs = c.n_embd_per_layer > 0 ? per_layer_inputs(g, c, w, h) : kNoNode;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& layer = w.layers[static_cast<size_t>(il)];
    const bool last = il == c.n_layer - 1;
    h = attention(g, c, layer, il, h, last);
    h = ffn(g, c, layer, il, h);
    if (inputs != kNoNode) {
      if (last) inputs = g.select_rows("per_layer_inputs_rows", inputs);
      h = per_layer_block(g, c, layer, il, h, inputs);
    }
    h = g.scale(Names{il}("layer_output_scale"), h, layer.layer_output_scale->f32()[0]);
  }
  const NodeId x = g.rms_norm("output_norm", h, w.output_norm, c.rms_eps);  // [n_outputs, n_embd]
  if (hidden) return x;
  const NodeId logits = g.matmul("output", x, w.output);  // [n_outputs, n_vocab]
  if (c.final_logit_softcap > 0.0f) {
    return g.softcap("output_softcap", logits, c.final_logit_softcap);
  }
  return logits;
}

}  // namespace

const ArchSpec kGemma4Arch = {
    .name = "gemma4",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = gemma4_tensors,
    .read_keys = gemma4_keys,
    .own_keys = kGemma4OwnKeys,
    .tested_models = "Gemma 4 (text; the E2B / E4B and 26B-A4B layouts)",
    .per_layer_widths = true,
    .build = gemma4_build,
};

}  // namespace minfer
