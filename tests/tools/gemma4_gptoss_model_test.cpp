// make-model for gpt-oss and Gemma 4 (../shared/docs/models/gemma4-gptoss.md): the tiny presets
// write every hyperparameter key of ../shared/models/gptoss-tiny-mxfp4 / gemma4-tiny-f32 with the
// same value and the same tensors, and run; the real presets (gpt-oss-20b, gemma-4-e4b,
// gemma-4-26b-a4b) have the real shapes, types and layer structure; shortened, they load and run.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "models/model.h"
#include "quant/ggml_type.h"
#include "test_util.h"
#include "tools/model_maker.h"
#include "tools/presets.h"
#include "tools_test_util.h"

namespace minfer::gemma4_gptoss_test {
namespace {

using test::make_options;
using test::TempDir;
using Shape = std::vector<uint64_t>;

// The logits of 12 ids of a made file: finite, and not all the same.
void expect_runs(const std::string& path, int64_t n_vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(static_cast<int32_t>((i * 97 + 13) % n_vocab));
  int64_t got_vocab = 0;
  const std::vector<float> logits = test::model_logits(path, ids, &got_vocab);
  ASSERT_EQ(got_vocab, n_vocab);
  ASSERT_EQ(logits.size(), static_cast<size_t>(12 * n_vocab));
  double sum_sq = 0.0;
  for (float l : logits) {
    ASSERT_TRUE(std::isfinite(l));
    sum_sq += static_cast<double>(l) * l;
  }
  EXPECT_GT(std::sqrt(sum_sq / static_cast<double>(logits.size())), 0.01);
}

// A test name from a preset or architecture name ("gpt-oss-20b" → "gpt_oss_20b").
std::string test_name(const char* s) {
  std::string name;
  for (; *s != '\0'; ++s) name += std::isalnum(static_cast<unsigned char>(*s)) ? *s : '_';
  return name;
}

struct Tiny {
  const char* arch;
  const char* shared;  // ../shared/models/<shared>.gguf
  int min_keys;        // "<arch>." keys of the shared file at least
};

class TinyMirrorTest : public ::testing::TestWithParam<Tiny> {};

TEST_P(TinyMirrorTest, TinyMirrorsTheSharedFileAndRuns) {
  MINFER_REQUIRE_TEST_DATA();
  const Tiny t = GetParam();
  TempDir dir;
  const MakeModelOptions o = make_options(t.arch, "tiny", "f32", dir.file("m.gguf"));
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto made = Model::load(o.output);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  auto shared = Model::load(test::test_data_path(std::string("models/") + t.shared + ".gguf"));
  ASSERT_TRUE(shared.is_ok()) << shared.status().message();
  test::expect_same_hyperparameters((*shared)->file(), (*made)->file(), t.arch, t.min_keys);
  // The same tensors with the same shapes (the vocabulary's rows aside).
  std::map<std::string, Shape> made_shapes;
  for (const GgufTensorInfo& i : (*made)->file().tensors()) made_shapes[i.name] = i.shape;
  int64_t n_shared = 0;
  for (const GgufTensorInfo& i : (*shared)->file().tensors()) {
    if (i.name.find("token_embd") != std::string::npos || i.name == "output.weight") continue;
    ++n_shared;
    EXPECT_EQ(made_shapes[i.name], i.shape) << i.name;
  }
  const int64_t n_vocab_rows = (*shared)->file().find_tensor("output.weight") != nullptr ? 1 : 0;
  const int64_t n_ple = (*shared)->file().find_tensor("per_layer_token_embd.weight") ? 1 : 0;
  EXPECT_EQ(static_cast<int64_t>(made_shapes.size()), n_shared + 1 + n_vocab_rows + n_ple);
  const ModelConfig& c = (*made)->config();
  const ModelConfig& s = (*shared)->config();
  EXPECT_EQ(c.swa_layers, s.swa_layers);
  EXPECT_EQ(c.n_cache_layers(), s.n_cache_layers());
  expect_runs(o.output, c.n_vocab);
}

INSTANTIATE_TEST_SUITE_P(Archs, TinyMirrorTest,
                         ::testing::Values(Tiny{"gpt-oss", "gptoss-tiny-mxfp4", 18},
                                           Tiny{"gemma4", "gemma4-tiny-f32", 20}),
                         [](const auto& param_info) { return test_name(param_info.param.arch); });

// Cut to fewer layers, a Gemma 4 preset keeps a share of KV-sharing layers that finds sources
// of both kinds, and none where too few layers are left: one layer loads (no sharing) and runs.
TEST(Gemma4MakeModel, ShortenedTinySharesWhatItCan) {
  TempDir dir;
  for (const int64_t n_layer : {1, 4}) {
    MakeModelOptions o = make_options("gemma4", "tiny", "f32", dir.file("m.gguf"));
    o.n_layer = n_layer;
    auto report = make_model(o);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    auto model = Model::load(o.output);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ((*model)->config().n_cache_layers(), n_layer == 1 ? 1 : 2) << n_layer;
    expect_runs(o.output, (*model)->config().n_vocab);
  }
}

// The layout of a real preset: name → (shape, type).
std::map<std::string, std::pair<Shape, GgmlType>> layout_of(const std::string& arch,
                                                            const std::string& preset,
                                                            const std::string& type) {
  auto layout = make_model_layout(make_options(arch, preset, type, ""));
  EXPECT_TRUE(layout.is_ok()) << layout.status().message();
  std::map<std::string, std::pair<Shape, GgmlType>> out;
  if (!layout.is_ok()) return out;
  for (const auto& t : layout->tensors) out[t.name] = {t.shape, t.type};
  return out;
}

// openai/gpt-oss-20b as released: 24 layers of 64 heads of 64 over n_embd 2880, 8 KV heads, 32
// experts of 2880 in MXFP4 (the mxfp4_moe mix: every other matrix Q8_0), biases and sinks.
TEST(GptOssMakeModel, Gpt20bHasTheReleasedShapesAndMxfp4Experts) {
  auto t = layout_of("gpt-oss", "gpt-oss-20b", "mxfp4_moe");
  EXPECT_EQ(t["blk.0.attn_q.weight"], std::make_pair(Shape{2880, 4096}, GgmlType::kQ8_0));
  EXPECT_EQ(t["blk.0.attn_k.weight"].first, (Shape{2880, 512}));
  EXPECT_EQ(t["blk.0.attn_v.bias"].first, (Shape{512}));
  EXPECT_EQ(t["blk.0.attn_output.weight"].first, (Shape{4096, 2880}));
  EXPECT_EQ(t["blk.0.attn_sinks.weight"].first, (Shape{64}));
  EXPECT_EQ(t["blk.23.ffn_gate_inp.weight"].first, (Shape{2880, 32}));
  for (const char* name : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
    EXPECT_EQ(t[std::string("blk.23.") + name + ".weight"],
              std::make_pair(Shape{2880, 2880, 32}, GgmlType::kMXFP4))
        << name;
  }
  EXPECT_EQ(t.count("blk.24.attn_norm.weight"), 0u);
  EXPECT_EQ(t.count("output.weight"), 1u);
  const ModelPreset p = *find_preset("gpt-oss", "gpt-oss-20b");
  EXPECT_EQ(p.n_vocab_real, 201088);
  EXPECT_EQ(p.n_expert_used, 4);
  EXPECT_EQ(preset_sliding_window(p).window, 128);
  EXPECT_EQ(preset_yarn(p).factor, 32.0f);
  EXPECT_EQ(preset_yarn(p).original_context, 4096);
}

// google/gemma-4-E4B: 42 layers over n_embd 2560, every 6th full (head dim 512, a quarter of it
// turning) and the others sliding (256), 2 KV heads, the last 18 layers reading earlier cells
// (no attn_k / attn_v), per-layer inputs of 256.
TEST(Gemma4MakeModel, E4bHasTheRealShapes) {
  auto t = layout_of("gemma4", "gemma-4-e4b", "q8_0");
  EXPECT_EQ(t["blk.0.attn_q.weight"].first, (Shape{2560, 8 * 256}));
  EXPECT_EQ(t["blk.0.attn_k.weight"].first, (Shape{2560, 2 * 256}));
  EXPECT_EQ(t["blk.5.attn_q.weight"].first, (Shape{2560, 8 * 512}));
  EXPECT_EQ(t["blk.5.attn_v.weight"].first, (Shape{2560, 2 * 512}));
  EXPECT_EQ(t["blk.23.attn_k.weight"].first, (Shape{2560, 2 * 512}));
  EXPECT_EQ(t.count("blk.24.attn_k.weight"), 0u);
  EXPECT_EQ(t.count("blk.41.attn_v.weight"), 0u);
  EXPECT_EQ(t["blk.41.ffn_up.weight"].first, (Shape{2560, 10240}));
  EXPECT_EQ(t["rope_freqs.weight"].first, (Shape{256}));
  EXPECT_EQ(t["per_layer_model_proj.weight"].first, (Shape{2560, 256 * 42}));
  EXPECT_EQ(t["blk.0.inp_gate.weight"].first, (Shape{2560, 256}));
  EXPECT_EQ(t.count("output.weight"), 0u);  // tied
  EXPECT_EQ(t.count("blk.42.attn_norm.weight"), 0u);
  EXPECT_EQ(find_preset("gemma4", "gemma-4-e4b")->n_vocab_real, 262144);
}

// google/gemma-4-26B-A4B: 30 layers over n_embd 2816, 16 heads, sliding layers with 8 KV heads of
// 256, full ones with 2 of 512 and no attn_v, a dense FFN of 2112 beside 128 experts of 704.
TEST(Gemma4MakeModel, MoE26bHasTheRealShapes) {
  auto t = layout_of("gemma4", "gemma-4-26b-a4b", "q8_0");
  EXPECT_EQ(t["blk.0.attn_k.weight"].first, (Shape{2816, 8 * 256}));
  EXPECT_EQ(t["blk.0.attn_v.weight"].first, (Shape{2816, 8 * 256}));
  EXPECT_EQ(t["blk.5.attn_k.weight"].first, (Shape{2816, 2 * 512}));
  EXPECT_EQ(t.count("blk.5.attn_v.weight"), 0u);
  EXPECT_EQ(t["blk.29.attn_q.weight"].first, (Shape{2816, 16 * 512}));
  EXPECT_EQ(t["blk.0.ffn_up.weight"].first, (Shape{2816, 2112}));
  EXPECT_EQ(t["blk.0.ffn_gate_up_exps.weight"].first, (Shape{2816, 2 * 704, 128}));
  EXPECT_EQ(t["blk.0.ffn_down_exps.weight"].first, (Shape{704, 2816, 128}));
  EXPECT_EQ(t.count("per_layer_token_embd.weight"), 0u);
  EXPECT_EQ(t.count("blk.30.attn_norm.weight"), 0u);
  const ModelPreset p = *find_preset("gemma4", "gemma-4-26b-a4b");
  EXPECT_EQ(p.n_expert_used, 8);
  EXPECT_EQ(p.n_vocab_real, 262144);
}

// Each real preset cut to its first layers (hundreds of MB to write: MINFER_SLOW_TESTS=1): it
// loads with the preset's structure and runs.
struct Shortened {
  const char* arch;
  const char* preset;
  const char* type;
  int64_t n_layer;
};

class ShortenedRealPresetTest : public ::testing::TestWithParam<Shortened> {};

TEST_P(ShortenedRealPresetTest, LoadsAndRuns) {
  if (std::getenv("MINFER_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "set MINFER_SLOW_TESTS=1 to write and run the shortened real presets";
  }
  const Shortened s = GetParam();
  TempDir dir;
  MakeModelOptions o = make_options(s.arch, s.preset, s.type, dir.file("m.gguf"));
  o.n_layer = s.n_layer;
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto model = Model::load(o.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_layer, s.n_layer);
  const ModelPreset p = *find_preset(s.arch, s.preset);
  EXPECT_EQ(c.n_embd, p.n_embd);
  EXPECT_EQ(c.n_expert, p.n_expert);
  expect_runs(o.output, c.n_vocab);
}

INSTANTIATE_TEST_SUITE_P(Presets, ShortenedRealPresetTest,
                         ::testing::Values(Shortened{"gpt-oss", "gpt-oss-20b", "mxfp4_moe", 2},
                                           Shortened{"gemma4", "gemma-4-e4b", "q8_0", 2},
                                           Shortened{"gemma4", "gemma-4-26b-a4b", "q8_0", 1}),
                         [](const auto& param_info) { return test_name(param_info.param.preset); });

}  // namespace
}  // namespace minfer::gemma4_gptoss_test
