#include "models/decoder.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace minfer {

namespace {

// The names of block il's nodes: "blk.<il>.<what>".
struct BlockNames {
  int64_t il;
  std::string operator()(const char* what) const { return fmt::format("blk.{}.{}", il, what); }
};

// The dense FFN on the normed x: down(act(gate(x)) * up(x)), [n, n_embd] → [n, n_embd].
NodeId dense_ffn(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w,
                 const BlockNames& name, NodeId x) {
  const NodeId gate = g.matmul(name("ffn_gate"), x, w.gate);  // [n, n_ff]
  const NodeId up = g.matmul(name("ffn_up"), x, w.up);        // [n, n_ff]
  const NodeId act = c.ffn_act == FfnActivation::kGelu
                         ? g.geglu(name("ffn_geglu"), gate, up)
                         : g.mul(name("ffn_swiglu"), g.silu(name("ffn_silu"), gate), up);
  return g.matmul(name("ffn_down"), act, w.down);  // [n, n_embd]
}

// The mixture of experts on the normed x: the router's logits, then the chosen experts.
NodeId moe_ffn(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, const BlockNames& name,
               NodeId x) {
  NodeId logits = g.matmul(name("ffn_moe_logits"), x, *w.ffn_gate_inp);  // [n, n_expert]
  if (w.ffn_gate_inp_b) logits = g.add_row(name("ffn_moe_logits_bias"), logits, *w.ffn_gate_inp_b);
  MoeVariant variant;
  variant.softmax_chosen = c.moe_softmax_chosen;
  variant.swiglu_limit = c.moe_swiglu_limit;
  auto bias = [](const std::optional<WeightTensor>& b) { return b ? &*b : nullptr; };
  variant.biases = {bias(w.gate_exps_b), bias(w.up_exps_b), bias(w.down_exps_b)};
  return g.moe_ffn(name("ffn_moe"), x, logits, *w.gate_exps, *w.up_exps, *w.down_exps,
                   c.n_expert_used, variant);  // [n, n_embd]
}

}  // namespace

kernels::RopeConfig layer_rope(const ModelConfig& c, const LayerWeights& w, int64_t il) {
  const bool swa = c.is_swa(il);
  const bool factors = w.rope_freqs && (!swa || c.swa_rope_freqs);
  kernels::RopeConfig rope = rope_config(c, factors ? w.rope_freqs->f32() : nullptr,
                                         swa ? c.rope_freq_base_swa : c.rope_freq_base);
  rope.n_rot = c.layer_n_rot(il);
  return rope;
}

namespace {

// Only the rows whose logits are wanted go on from the last block's mixer: the rest of the model
// works on those alone. Returns the residual sum.
NodeId mixer_residual(GraphBuilder& g, const BlockNames& name, NodeId h, NodeId o,
                      bool select_outputs) {
  if (select_outputs) {
    o = g.select_rows(name("attn_output_rows"), o);
    h = g.select_rows(name("residual_rows"), h);
  }
  return g.add(name("attn_residual"), h, o);
}

}  // namespace

NodeId delta_net_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                       NodeId h, bool select_outputs) {
  const BlockNames name{il};
  const LayerWeights::DeltaNet& d = *w.delta_net;
  const NodeId x = g.rms_norm(name("attn_norm"), h, w.attn_norm, c.rms_eps);
  const NodeId qkv = g.matmul(name("attn_qkv"), x, d.qkv);            // [n, 2 kd + vd]
  const NodeId z = g.matmul(name("attn_gate"), x, d.gate);            // [n, vd]
  const NodeId beta = g.matmul(name("ssm_beta"), x, d.beta);          // [n, n_v_heads]
  const NodeId alpha = g.matmul(name("ssm_alpha"), x, d.alpha);       // [n, n_v_heads]
  const NodeId conv = g.ssm_conv(name("ssm_conv"), qkv, d.conv, il);  // [n, 2 kd + vd]
  NodeId o = g.delta_net(name("ssm_delta"), conv, alpha, beta, d.dt_bias, d.a, il, c.ssm_n_k_heads,
                         c.ssm_n_v_heads, c.ssm_d_state, c.rms_eps);  // [n, vd]
  o = g.rms_norm(name("ssm_norm"), o, d.norm, c.rms_eps, c.ssm_d_state);
  o = g.mul(name("ssm_gated"), g.silu(name("ssm_gate_silu"), z), o);
  o = g.matmul(name("ssm_out"), o, d.out);  // [n, n_embd]
  return mixer_residual(g, name, h, o, select_outputs);
}

NodeId attention_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                       NodeId h, bool select_outputs) {
  const BlockNames name{il};
  const NodeId x = g.rms_norm(name("attn_norm"), h, w.attn_norm, c.rms_eps);
  NodeId q = g.matmul(name("attn_q"), x, w.wq);  // [n_tokens, n_head * head_dim]
  NodeId k = g.matmul(name("attn_k"), x, w.wk);  // [n_tokens, n_head_kv * head_dim]
  NodeId v = g.matmul(name("attn_v"), x, w.wv);  // [n_tokens, n_head_kv * head_dim_v]
  if (c.qkv_bias) {
    q = g.add_row(name("attn_q_bias"), q, *w.bq);
    k = g.add_row(name("attn_k_bias"), k, *w.bk);
    v = g.add_row(name("attn_v_bias"), v, *w.bv);
  }
  NodeId gate = kNoNode;  // [n_tokens, n_head * head_dim] (attn_output_gate)
  if (c.attn_output_gate) {
    // Wq gave each head's query then its gate.
    gate = g.columns(name("attn_gate"), q, c.n_head, c.head_dim, c.head_dim);
    q = g.columns(name("attn_q_heads"), q, c.n_head, 0, c.head_dim);
  }
  if (c.qk_norm) {
    q = g.rms_norm(name("attn_q_norm"), q, *w.q_norm, c.rms_eps, c.head_dim);
    k = g.rms_norm(name("attn_k_norm"), k, *w.k_norm, c.rms_eps, c.head_dim);
  }
  // A sliding-window layer has its own rope base and sees only its window.
  const bool swa = c.is_swa(il);
  const kernels::RopeConfig rope = layer_rope(c, w, il);
  q = g.rope(name("attn_q_rope"), q, c.n_head, c.head_dim, rope);
  k = g.rope(name("attn_k_rope"), k, c.n_head_kv, c.head_dim, rope);
  g.kv_store(name("kv_store"), k, v, il);
  float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.attn_q_scale > 0.0f) {
    q = g.scale(name("attn_q_scale"), q, c.attn_q_scale);
    scale = 1.0f;
  }
  NodeId a = g.attention(name("attn"), q, il, c.n_head, c.head_dim, c.head_dim_v, scale,
                         swa ? c.n_swa : 0, w.attn_sinks ? &*w.attn_sinks : nullptr);
  if (gate != kNoNode) a = g.sigmoid_gate(name("attn_gated"), a, gate);
  NodeId o = g.matmul(name("attn_output"), a, w.wo);  // [n_tokens, n_embd]
  if (w.bo) o = g.add_row(name("attn_output_bias"), o, *w.bo);
  if (c.post_norms) {
    if (select_outputs) {
      o = g.select_rows(name("attn_output_rows"), o);
      h = g.select_rows(name("residual_rows"), h);
    }
    o = g.rms_norm(name("attn_post_norm"), o, *w.attn_post_norm, c.rms_eps);
    return g.add(name("attn_residual"), h, o);
  }
  return mixer_residual(g, name, h, o, select_outputs);
}

NodeId ffn_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                 NodeId h) {
  const BlockNames name{il};
  const NodeId x = g.rms_norm(name("ffn_norm"), h, w.ffn_norm, c.rms_eps);
  NodeId out = c.n_expert > 0 ? moe_ffn(g, c, w, name, x) : dense_ffn(g, c, w, name, x);
  if (w.gate_shexp) {
    // The shared expert, gated per token by sigmoid(ffn_gate_inp_shexp · x).
    const NodeId gate = g.matmul(name("ffn_shexp_gate"), x, *w.shexp_gate_inp);  // [n, 1]
    const NodeId sg = g.matmul(name("ffn_shexp_gate_proj"), x, *w.gate_shexp);   // [n, n_ff_sh]
    const NodeId su = g.matmul(name("ffn_shexp_up"), x, *w.up_shexp);            // [n, n_ff_sh]
    NodeId shared = g.mul(name("ffn_shexp_swiglu"), g.silu(name("ffn_shexp_silu"), sg), su);
    shared = g.matmul(name("ffn_shexp_down"), shared, *w.down_shexp);  // [n, n_embd]
    shared = g.sigmoid_gate(name("ffn_shexp_gated"), shared, gate);
    out = g.add(name("ffn_moe_shared"), out, shared);
  }
  if (c.post_norms) out = g.rms_norm(name("ffn_post_norm"), out, *w.ffn_post_norm, c.rms_eps);
  return g.add(name("ffn_residual"), h, out);
}

NodeId build_decoder(GraphBuilder& g, const ModelConfig& c, const ModelWeights& w, bool hidden) {
  NodeId h = g.get_rows("token_embd", w.token_embd);  // [n_tokens, n_embd]
  if (c.embd_scale > 0.0f) h = g.scale("token_embd_scale", h, c.embd_scale);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& layer = w.layers[static_cast<size_t>(il)];
    const bool last = il == c.n_layer - 1;
    h = c.is_recurrent(il) ? delta_net_block(g, c, layer, il, h, last)
                           : attention_block(g, c, layer, il, h, last);
    h = ffn_block(g, c, layer, il, h);
  }
  const NodeId x = g.rms_norm("output_norm", h, w.output_norm, c.rms_eps);  // [n_outputs, n_embd]
  if (hidden) return x;
  const NodeId logits = g.matmul("output", x, w.output);  // [n_outputs, n_vocab]
  if (c.final_logit_softcap > 0.0f)
    return g.softcap("output_softcap", logits, c.final_logit_softcap);
  return logits;
}

}  // namespace minfer
