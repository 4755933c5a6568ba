#include "models/tensor_spec.h"

#include <fmt/format.h>

#include "models/architectures.h"

namespace minfer {

std::vector<uint64_t> TensorSpec::shape() const {
  if (is_vector() && n_mats > 1) {
    return {static_cast<uint64_t>(n_cols), static_cast<uint64_t>(n_mats)};
  }
  if (is_vector()) return {static_cast<uint64_t>(n_cols)};
  if (n_mats > 1) {
    return {static_cast<uint64_t>(n_cols), static_cast<uint64_t>(n_rows),
            static_cast<uint64_t>(n_mats)};
  }
  return {static_cast<uint64_t>(n_cols), static_cast<uint64_t>(n_rows)};
}

void TensorList::begin_layer(int64_t il) {
  il_ = il;
  prefix_ = il < 0 ? std::string() : fmt::format("blk.{}.", il);
}

void TensorList::add(const std::string& name, TensorRole role, int64_t n_cols, int64_t n_rows,
                     WeightSlot slot, int64_t n_mats) {
  out_.push_back({prefix_ + name, role, n_cols, n_rows, slot, il_, n_mats});
}

void global_tensors(const ModelConfig& c, TensorList& t) {
  t.matrix("token_embd.weight", c.n_embd, c.n_vocab, model_slot<&ModelWeights::token_embd>);
  t.norm("output_norm.weight", c.n_embd, model_slot<&ModelWeights::output_norm>);
  if (!c.tied_output) {
    t.matrix("output.weight", c.n_embd, c.n_vocab, model_slot<&ModelWeights::output>);
  }
}

void dense_ffn_tensors(const ModelConfig& c, TensorList& t) {
  t.matrix("ffn_gate.weight", c.n_embd, c.n_ff, layer_slot<&LayerWeights::gate>);
  t.matrix("ffn_up.weight", c.n_embd, c.n_ff, layer_slot<&LayerWeights::up>);
  t.matrix("ffn_down.weight", c.n_ff, c.n_embd, layer_slot<&LayerWeights::down>);
}

std::vector<TensorSpec> decoder_tensors(const ModelConfig& c, AttentionExtras extras,
                                        FfnTensors ffn) {
  std::vector<TensorSpec> specs;
  TensorList t(specs);
  global_tensors(c, t);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    t.begin_layer(il);
    t.norm("attn_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_norm>);
    t.matrix("attn_q.weight", c.n_embd, c.q_width(), layer_slot<&LayerWeights::wq>);
    t.matrix("attn_k.weight", c.n_embd, c.k_width(), layer_slot<&LayerWeights::wk>);
    t.matrix("attn_v.weight", c.n_embd, c.v_width(), layer_slot<&LayerWeights::wv>);
    if (extras != nullptr) extras(c, t);
    // Attention's output is n_head heads of head_dim_v values (not q_width: the value length
    // may differ from the key length).
    t.matrix("attn_output.weight", c.n_head * c.head_dim_v, c.n_embd,
             layer_slot<&LayerWeights::wo>);
    t.norm("ffn_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_norm>);
    (ffn != nullptr ? ffn : dense_ffn_tensors)(c, t);
  }
  return specs;
}

void qk_norm_tensors(const ModelConfig& c, TensorList& t) {
  t.norm("attn_q_norm.weight", c.head_dim, layer_slot<&LayerWeights::q_norm>);
  t.norm("attn_k_norm.weight", c.head_dim, layer_slot<&LayerWeights::k_norm>);
}

Result<std::vector<TensorSpec>> model_tensors(const ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(ArchSpec arch, find_arch(c.arch));
  return arch.tensors(c);
}

}  // namespace minfer
