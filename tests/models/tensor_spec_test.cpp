// Each architecture's tensor list (models/tensor_spec.h) as a function of the config: the common
// decoder tensors, the architecture's own (Qwen2's QKV biases, Qwen3's q / k norms), the tied
// output, and attn_output's width from the value length.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "models/architectures.h"
#include "models/model_config.h"
#include "models/tensor_spec.h"

namespace minfer {
namespace {

// n_embd 64, 2 layers, 4 heads of 32 (keys) and 16 (values), 2 KV heads, n_ff 96, 100 tokens.
ModelConfig config_for(const std::string& arch) {
  ModelConfig c;
  apply_arch(*find_arch(arch), c);
  c.n_embd = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 32;
  c.head_dim_v = 16;
  c.n_rot = 32;
  c.n_ff = 96;
  c.n_vocab = 100;
  return c;
}

std::map<std::string, TensorSpec> by_name(const ModelConfig& c) {
  auto specs = model_tensors(c);
  EXPECT_TRUE(specs.is_ok()) << specs.status().message();
  std::map<std::string, TensorSpec> out;
  for (const TensorSpec& s : *specs) out.emplace(s.name, s);
  return out;
}

using Shape = std::vector<uint64_t>;

TEST(TensorSpec, CommonDecoderTensorsOfEveryArchitecture) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    const auto t = by_name(config_for(arch));
    EXPECT_EQ(t.at("token_embd.weight").shape(), (Shape{64, 100})) << arch;
    EXPECT_EQ(t.at("output.weight").shape(), (Shape{64, 100})) << arch;
    EXPECT_EQ(t.at("output_norm.weight").shape(), (Shape{64})) << arch;
    EXPECT_EQ(t.at("output_norm.weight").role, TensorRole::kNorm) << arch;
    for (const char* b : {"blk.0.", "blk.1."}) {
      const std::string p = b;
      EXPECT_EQ(t.at(p + "attn_norm.weight").shape(), (Shape{64})) << arch;
      EXPECT_EQ(t.at(p + "attn_q.weight").shape(), (Shape{64, 4 * 32})) << arch;
      EXPECT_EQ(t.at(p + "attn_k.weight").shape(), (Shape{64, 2 * 32})) << arch;
      EXPECT_EQ(t.at(p + "attn_v.weight").shape(), (Shape{64, 2 * 16})) << arch;
      // n_head heads of head_dim_v values in, n_embd out: not q_width (128).
      EXPECT_EQ(t.at(p + "attn_output.weight").shape(), (Shape{4 * 16, 64})) << arch;
      EXPECT_EQ(t.at(p + "ffn_norm.weight").shape(), (Shape{64})) << arch;
      EXPECT_EQ(t.at(p + "ffn_gate.weight").shape(), (Shape{64, 96})) << arch;
      EXPECT_EQ(t.at(p + "ffn_up.weight").shape(), (Shape{64, 96})) << arch;
      EXPECT_EQ(t.at(p + "ffn_down.weight").shape(), (Shape{96, 64})) << arch;
      EXPECT_EQ(t.at(p + "ffn_down.weight").role, TensorRole::kMatrix) << arch;
      EXPECT_EQ(t.at(p + "ffn_down.weight").il, p == "blk.0." ? 0 : 1) << arch;
    }
    EXPECT_EQ(t.at("token_embd.weight").il, -1) << arch;
  }
}

TEST(TensorSpec, EachArchitectureAddsItsOwnTensors) {
  const auto llama = by_name(config_for("llama"));
  EXPECT_EQ(llama.size(), 3u + 2u * 9u);
  const auto qwen2 = by_name(config_for("qwen2"));
  EXPECT_EQ(qwen2.size(), 3u + 2u * 12u);
  EXPECT_EQ(qwen2.at("blk.1.attn_q.bias").shape(), (Shape{4 * 32}));
  EXPECT_EQ(qwen2.at("blk.1.attn_k.bias").shape(), (Shape{2 * 32}));
  EXPECT_EQ(qwen2.at("blk.1.attn_v.bias").shape(), (Shape{2 * 16}));
  EXPECT_EQ(qwen2.at("blk.1.attn_v.bias").role, TensorRole::kBias);
  const auto qwen3 = by_name(config_for("qwen3"));
  EXPECT_EQ(qwen3.size(), 3u + 2u * 11u);
  EXPECT_EQ(qwen3.at("blk.1.attn_q_norm.weight").shape(), (Shape{32}));
  EXPECT_EQ(qwen3.at("blk.1.attn_k_norm.weight").shape(), (Shape{32}));
  EXPECT_EQ(qwen3.at("blk.1.attn_k_norm.weight").role, TensorRole::kNorm);
  // The flags the graph reads say the same.
  EXPECT_TRUE(config_for("qwen2").qkv_bias);
  EXPECT_TRUE(config_for("qwen3").qk_norm);
  EXPECT_FALSE(config_for("llama").qkv_bias || config_for("llama").qk_norm);
}

// Qwen3-MoE: Qwen3's q / k norms, and in place of the dense FFN a router [n_embd → n_expert]
// and three 3-D expert tensors (ggml order [n_embd, n_ff_exp, n_expert] for gate and up).
TEST(TensorSpec, Qwen3MoeHasRouterAndExpertStacks) {
  ModelConfig c = config_for("qwen3moe");
  c.n_expert = 4;
  c.n_expert_used = 2;
  c.n_ff_exp = 48;
  const auto t = by_name(c);
  EXPECT_EQ(t.size(), 3u + 2u * 12u);
  EXPECT_EQ(t.count("blk.0.ffn_gate.weight"), 0u);
  EXPECT_EQ(t.at("blk.1.attn_q_norm.weight").shape(), (Shape{32}));
  EXPECT_EQ(t.at("blk.1.ffn_gate_inp.weight").shape(), (Shape{64, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_gate_exps.weight").shape(), (Shape{64, 48, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_up_exps.weight").shape(), (Shape{64, 48, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.weight").shape(), (Shape{48, 64, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.weight").role, TensorRole::kMatrix);
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.weight").total_rows(), 64 * 4);
  EXPECT_TRUE(c.qk_norm);
}

// Gemma 4: sliding layers (0, 2) with head dim 16 and 2 KV heads, full layers (1, 3) with 32 and
// 1; layers 2 and 3 share earlier layers' KV (no attn_k), layer 1 has no attn_v; per-layer
// embeddings of 8 and a MoE beside the dense FFN of per-layer widths.
TEST(TensorSpec, Gemma4LayerKindsSharedKvPleAndExperts) {
  ModelConfig c = config_for("gemma4");
  c.n_layer = 4;
  c.head_dim = c.head_dim_v = 32;
  c.n_head_kv = 1;
  c.head_dim_swa = c.head_dim_v_swa = 16;
  c.n_head_kv_swa = 2;
  c.n_swa = 8;
  c.swa_layers = {true, false, true, false};
  c.n_layer_kv = 2;
  c.has_wk = {true, true, false, false};
  c.has_wv = {true, false, false, false};
  c.layer_n_ff = {96, 96, 192, 192};
  c.n_embd_per_layer = 8;
  c.n_expert = 4;
  c.n_expert_used = 2;
  c.n_ff_exp = 48;
  c.tied_output = true;
  const auto t = by_name(c);
  EXPECT_EQ(t.at("blk.0.attn_q.weight").shape(), (Shape{64, 4 * 16}));
  EXPECT_EQ(t.at("blk.0.attn_k.weight").shape(), (Shape{64, 2 * 16}));
  EXPECT_EQ(t.at("blk.0.attn_v.weight").shape(), (Shape{64, 2 * 16}));
  EXPECT_EQ(t.at("blk.0.attn_q_norm.weight").shape(), (Shape{16}));
  EXPECT_EQ(t.at("blk.1.attn_q.weight").shape(), (Shape{64, 4 * 32}));
  EXPECT_EQ(t.at("blk.1.attn_k.weight").shape(), (Shape{64, 1 * 32}));
  EXPECT_EQ(t.at("blk.1.attn_output.weight").shape(), (Shape{4 * 32, 64}));
  EXPECT_EQ(t.count("blk.1.attn_v.weight"), 0u);
  for (const char* shared : {"blk.2.", "blk.3."}) {
    const std::string p = shared;
    EXPECT_EQ(t.count(p + "attn_k.weight"), 0u) << p;
    EXPECT_EQ(t.count(p + "attn_k_norm.weight"), 0u) << p;
    EXPECT_EQ(t.at(p + "ffn_gate.weight").shape(), (Shape{64, 192})) << p;
  }
  EXPECT_EQ(t.at("blk.3.layer_output_scale.weight").shape(), (Shape{1}));
  EXPECT_EQ(t.at("per_layer_token_embd.weight").shape(), (Shape{8 * 4, 100}));
  EXPECT_EQ(t.at("per_layer_model_proj.weight").shape(), (Shape{64, 8 * 4}));
  EXPECT_EQ(t.at("per_layer_proj_norm.weight").shape(), (Shape{8}));
  EXPECT_EQ(t.at("blk.2.inp_gate.weight").shape(), (Shape{64, 8}));
  EXPECT_EQ(t.at("blk.2.proj.weight").shape(), (Shape{8, 64}));
  EXPECT_EQ(t.at("blk.1.ffn_gate_up_exps.weight").shape(), (Shape{64, 2 * 48, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.weight").shape(), (Shape{48, 64, 4}));
  EXPECT_EQ(t.at("blk.1.ffn_down_exps.scale").shape(), (Shape{4}));
  EXPECT_EQ(t.at("blk.1.ffn_gate_inp.scale").role, TensorRole::kNorm);
  EXPECT_EQ(t.count("output.weight"), 0u);
  // The cells: layers 2 and 3 read layers 0 and 1's.
  EXPECT_EQ(c.n_cache_layers(), 2);
  EXPECT_EQ(c.kv_source(2), 0);
  EXPECT_EQ(c.kv_source(3), 1);
  EXPECT_EQ(c.kv_source(1), 1);
}

TEST(TensorSpec, TiedOutputHasNoOutputMatrix) {
  ModelConfig c = config_for("qwen2");
  c.tied_output = true;
  const auto t = by_name(c);
  EXPECT_EQ(t.count("output.weight"), 0u);
  EXPECT_EQ(t.count("token_embd.weight"), 1u);
}

TEST(TensorSpec, UnknownArchitectureIsAnError) {
  ModelConfig c = config_for("llama");
  c.arch = "gpt9";
  auto specs = model_tensors(c);
  ASSERT_FALSE(specs.is_ok());
  EXPECT_EQ(specs.status().message(),
            "[model] unknown architecture 'gpt9' (supported: llama, qwen2, qwen3, qwen3moe, "
            "gemma3, qwen35, qwen35moe, gpt-oss, gemma4)");
}

}  // namespace
}  // namespace minfer
