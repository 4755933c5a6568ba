// make-model for Qwen3.5 (qwen35, qwen35moe; ../shared/docs/models/qwen35.md): the tiny presets
// write every hyperparameter key of ../shared/models/qwen35*-tiny with the same value, the files
// load and give finite logits with negative decay rates (ssm_a), the real presets have the spec's
// shapes, a shortened real one loads and runs, and --chat-template embeds a template.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "models/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tools/model_maker.h"
#include "tools/presets.h"
#include "tools_test_util.h"

namespace minfer::qwen35_test {
namespace {

using test::make_options;
using test::TempDir;

class Qwen35TinyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen35TinyTest, TinyMirrorsTheSharedFileAndRuns) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string arch = GetParam();
  TempDir dir;
  const MakeModelOptions o = make_options(arch, "tiny", "f32", dir.file("m.gguf"));
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto made = Model::load(o.output);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  auto shared = Model::load(test::test_data_path("models/" + arch + "-tiny-f32.gguf"));
  ASSERT_TRUE(shared.is_ok()) << shared.status().message();
  test::expect_same_hyperparameters((*shared)->file(), (*made)->file(), arch, 18);

  const ModelConfig& c = (*made)->config();
  const ModelConfig& s = (*shared)->config();
  EXPECT_EQ(c.recurrent_layers, s.recurrent_layers);
  EXPECT_EQ(c.recurrent_state_bytes(), s.recurrent_state_bytes());
  EXPECT_EQ(c.n_rot, s.n_rot);
  EXPECT_EQ(c.n_ff_shexp, s.n_ff_shexp);
  // The same tensors with the same shapes (the vocabulary's rows aside).
  std::map<std::string, std::vector<uint64_t>> shapes;
  for (const GgufTensorInfo& t : (*made)->file().tensors()) shapes[t.name] = t.shape;
  for (const GgufTensorInfo& t : (*shared)->file().tensors()) {
    if (t.name == "token_embd.weight" || t.name == "output.weight") continue;
    EXPECT_EQ(shapes[t.name], t.shape) << t.name;
  }
  // Every decay rate is negative (a positive one would grow the delta state without bound).
  int n_rates = 0;
  for (const GgufTensorInfo& t : (*made)->file().tensors()) {
    if (!t.name.ends_with(".ssm_a")) continue;
    const auto bytes = (*made)->file().tensor_data(t);
    const auto* a = reinterpret_cast<const float*>(bytes.data());
    for (size_t i = 0; i < bytes.size() / sizeof(float); ++i, ++n_rates) {
      EXPECT_LT(a[i], 0.0f) << t.name << "[" << i << "]";
    }
  }
  EXPECT_GT(n_rates, 0);

  int64_t n_vocab = 0;
  std::vector<int32_t> ids;
  for (int i = 0; i < 16; ++i) ids.push_back(static_cast<int32_t>((i * 97 + 13) % c.n_vocab));
  const std::vector<float> logits = test::model_logits(o.output, ids, &n_vocab);
  ASSERT_EQ(logits.size(), static_cast<size_t>(16 * n_vocab));
  double sum_sq = 0.0;
  for (float l : logits) {
    ASSERT_TRUE(std::isfinite(l));
    sum_sq += static_cast<double>(l) * l;
  }
  EXPECT_GT(std::sqrt(sum_sq / static_cast<double>(logits.size())), 0.01);
}

INSTANTIATE_TEST_SUITE_P(Archs, Qwen35TinyTest, ::testing::Values("qwen35", "qwen35moe"));

// The spec's "Real models" rows: layers, n_embd, heads (head_dim 256, its output gate doubling
// attn_q), experts, and the delta-net shape shared by all (d_conv 4, d_state 128).
struct RealShape {
  const char* arch;
  const char* preset;
  int64_t n_embd, n_layer, n_head, n_head_kv, n_k_heads, n_v_heads, n_expert, n_expert_used;
};

class Qwen35RealShapeTest : public ::testing::TestWithParam<RealShape> {};

TEST_P(Qwen35RealShapeTest, TensorsHaveTheSpecShapes) {
  const RealShape s = GetParam();
  auto layout = make_model_layout(make_options(s.arch, s.preset, "q8_0", ""));
  ASSERT_TRUE(layout.is_ok()) << layout.status().message();
  std::map<std::string, std::vector<uint64_t>> shapes;
  for (const auto& t : layout->tensors) shapes[t.name] = t.shape;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t e = u(s.n_embd);
  const uint64_t kd = 128 * u(s.n_k_heads);
  const uint64_t vd = 128 * u(s.n_v_heads);
  // Layer 0 is a gated delta net, layer 3 (every 4th) attention.
  EXPECT_EQ(shapes["blk.0.attn_qkv.weight"], (std::vector<uint64_t>{e, 2 * kd + vd}));
  EXPECT_EQ(shapes["blk.0.attn_gate.weight"], (std::vector<uint64_t>{e, vd}));
  EXPECT_EQ(shapes["blk.0.ssm_conv1d.weight"], (std::vector<uint64_t>{4, 2 * kd + vd}));
  EXPECT_EQ(shapes["blk.0.ssm_a"], (std::vector<uint64_t>{u(s.n_v_heads)}));
  EXPECT_EQ(shapes["blk.0.ssm_alpha.weight"], (std::vector<uint64_t>{e, u(s.n_v_heads)}));
  EXPECT_EQ(shapes["blk.0.ssm_norm.weight"], (std::vector<uint64_t>{128}));
  EXPECT_EQ(shapes["blk.0.ssm_out.weight"], (std::vector<uint64_t>{vd, e}));
  EXPECT_EQ(shapes.count("blk.0.attn_q.weight"), 0u);
  EXPECT_EQ(shapes["blk.3.attn_q.weight"], (std::vector<uint64_t>{e, 2 * 256 * u(s.n_head)}));
  EXPECT_EQ(shapes["blk.3.attn_k.weight"], (std::vector<uint64_t>{e, 256 * u(s.n_head_kv)}));
  EXPECT_EQ(shapes["blk.3.attn_output.weight"], (std::vector<uint64_t>{256 * u(s.n_head), e}));
  EXPECT_EQ(shapes.count("blk.3.attn_qkv.weight"), 0u);
  const std::string last = "blk." + std::to_string(s.n_layer - 1) + ".";
  EXPECT_EQ(shapes.count(last + "attn_q.weight"), 1u) << "the last layer is attention";
  EXPECT_EQ(shapes.count("blk." + std::to_string(s.n_layer) + ".attn_norm.weight"), 0u);
  if (s.n_expert > 0) {
    EXPECT_EQ(shapes["blk.0.ffn_gate_inp.weight"], (std::vector<uint64_t>{e, u(s.n_expert)}));
    EXPECT_EQ(shapes["blk.0.ffn_up_exps.weight"], (std::vector<uint64_t>{e, 512, u(s.n_expert)}));
    EXPECT_EQ(shapes["blk.0.ffn_up_shexp.weight"], (std::vector<uint64_t>{e, 512}));
  }
  const ModelPreset p = *find_preset(s.arch, s.preset);
  EXPECT_EQ(p.n_vocab_real, 248320);
  EXPECT_EQ(p.n_expert_used, s.n_expert_used);
  const DeltaNetPreset dn = preset_delta_net(p);
  EXPECT_EQ(dn.n_rot, 64);
  EXPECT_EQ(dn.rope_sections, (std::array<int32_t, 4>{11, 11, 10, 0}));
  EXPECT_EQ(dn.full_attention_interval, 4);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, Qwen35RealShapeTest,
    ::testing::Values(RealShape{"qwen35", "qwen3.5-0.8b", 1024, 24, 8, 2, 16, 16, 0, 0},
                      RealShape{"qwen35", "qwen3.5-4b", 2560, 32, 16, 4, 16, 32, 0, 0},
                      RealShape{"qwen35moe", "qwen3.5-35b-a3b", 2048, 40, 16, 2, 16, 32, 256, 8}),
    [](const ::testing::TestParamInfo<RealShape>& param_info) {
      std::string name;
      for (const char ch : std::string(param_info.param.preset))
        name += std::isalnum(ch) ? ch : '_';
      return name;
    });

// A real preset cut to its first attention layer, with the real vocabulary and Qwen3.5's
// template: it loads, describes its layers, and runs.
TEST(Qwen35MakeModel, ShortenedRealPresetWithTemplateLoadsAndRuns) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  MakeModelOptions o = make_options("qwen35", "qwen3.5-0.8b", "q8_0", dir.file("m.gguf"));
  o.n_layer = 4;
  o.tokenizer_from = test::test_data_path("models/qwen3-vocab.gguf");
  o.chat_template = test::test_data_path("templates/Qwen3.5-4B.jinja");
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  // Qwen3's 151,936 tokens padded with unused ones to Qwen3.5's 248,320 rows.
  EXPECT_EQ(report->n_vocab, 248320);
  auto model = Model::load(o.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_vocab, 248320);
  auto tok = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  EXPECT_EQ((*tok)->encode("Hello, world", false, false), (std::vector<int32_t>{9707, 11, 1879}));
  auto tokens = (*model)->file().get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.is_ok());
  EXPECT_EQ((**tokens)[151935], "[PAD151935]") << "qwen3-vocab's own last padding token";
  EXPECT_EQ((**tokens)[248319], "[PAD248319]");
  const GgufValue* types = (*model)->file().find("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  const std::vector<int32_t> type_of = types->array_as<int32_t>().value();
  ASSERT_EQ(type_of.size(), 248320u);
  EXPECT_EQ(type_of[248319], 5) << "unused";
  EXPECT_EQ(type_of[9707], 1) << "normal";
  EXPECT_EQ(c.recurrent_layers, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(c.ssm_d_state, 128);
  EXPECT_EQ(c.n_rot, 64);
  auto source = (*model)->file().get_string("tokenizer.chat_template");
  ASSERT_TRUE(source.is_ok());
  EXPECT_NE(source->find("<parameter="), std::string::npos);
  int64_t n_vocab = 0;
  const std::vector<float> logits = test::model_logits(o.output, {9707, 11, 1879}, &n_vocab);
  ASSERT_EQ(logits.size(), static_cast<size_t>(3 * n_vocab));
  for (float l : logits) ASSERT_TRUE(std::isfinite(l));

  o.chat_template = dir.file("missing.jinja");
  auto missing = make_model(o);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("missing.jinja"), std::string::npos);
}

}  // namespace
}  // namespace minfer::qwen35_test
