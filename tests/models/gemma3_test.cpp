// Gemma 3's own keys: the sliding-window layers and their rope base as llama.cpp reads them,
// the final logit softcap when a file has one, and a clear refusal of the attention logit cap
// (which neither minfer nor llama.cpp's gemma3 graph computes).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime.h"
#include "forward_logits.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

constexpr const char* kModel = "models/gemma3-tiny-q8_0.gguf";

// A copy of gemma3-tiny without the key `drop` and with `edit` applied to its metadata: the file
// image.
std::vector<uint8_t> edited_model(const std::function<void(GgufWriter&)>& edit,
                                  const std::string& drop = "") {
  auto file = GgufFile::open(test::test_data_path(kModel));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  GgufWriter w;
  for (const GgufKeyValue& kv : (*file)->metadata()) {
    if (kv.key != drop) w.set(kv.key, kv.value);
  }
  edit(w);
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    const std::span<const uint8_t> data = (*file)->tensor_data(t);
    EXPECT_TRUE(w.add_tensor(t.name, t.type, t.shape, {data.begin(), data.end()}).is_ok());
  }
  auto bytes = w.serialize();
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().message();
  return *bytes;
}

// `bytes` must outlive the model: its weights are views into them.
Result<std::unique_ptr<Model>> load(const std::vector<uint8_t>& bytes) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::parse(bytes, "edited"));
  return Model::from_file(std::move(file));
}

// The logits of a few tokens, one forward: [n_tokens, n_vocab].
std::vector<float> logits_of(const Model& model) {
  std::vector<int32_t> tokens;  // [12]
  for (int32_t t = 0; t < 12; ++t) tokens.push_back(100 + 7 * t);
  return test::forward_logits(model, tokens);
}

TEST(Gemma3, ReadsTheSlidingWindowLayersAndTheirRopeBase) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path(kModel));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_swa, 8);
  // Every 3rd layer global: layers 2 and 5.
  EXPECT_EQ(c.swa_layers, (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_EQ(c.rope_freq_base_swa, 1e4f);
  EXPECT_EQ(c.rope_freq_base, 1e6f);
  EXPECT_EQ(c.embd_scale, 16.0f);     // √256
  EXPECT_EQ(c.attn_q_scale, 0.125f);  // 1/√key_length (64)
  EXPECT_EQ(c.ffn_act, FfnActivation::kGelu);
  EXPECT_TRUE(c.post_norms && c.qk_norm);
  EXPECT_EQ(c.final_logit_softcap, 0.0f);
}

TEST(Gemma3, PatternDefaultsToSixAndNoWindowMeansEveryLayerGlobal) {
  MINFER_REQUIRE_TEST_DATA();
  auto six = load(edited_model([](GgufWriter&) {}, "gemma3.attention.sliding_window_pattern"));
  ASSERT_TRUE(six.is_ok()) << six.status().message();
  EXPECT_EQ((*six)->config().swa_layers, (std::vector<bool>{true, true, true, true, true, false}));
  auto none = load(edited_model(
      [](GgufWriter& w) { w.set_scalar<uint32_t>("gemma3.attention.sliding_window", 0); }));
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_TRUE((*none)->config().swa_layers.empty());
  EXPECT_FALSE((*none)->config().is_swa(0));
}

TEST(Gemma3, AttentionLogitSoftcappingIsRefusedByName) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(edited_model(
      [](GgufWriter& w) { w.set_scalar<float>("gemma3.attn_logit_softcapping", 50.0f); }));
  ASSERT_FALSE(model.is_ok());
  EXPECT_NE(model.status().message().find("gemma3.attn_logit_softcapping"), std::string::npos)
      << model.status().message();
}

// cap · tanh(logit / cap), computed from the uncapped logits of the same model.
TEST(Gemma3, FinalLogitSoftcappingBoundsTheLogits) {
  MINFER_REQUIRE_TEST_DATA();
  auto plain = Model::load(test::test_data_path(kModel));
  ASSERT_TRUE(plain.is_ok());
  constexpr float kCap = 30.0f;
  const std::vector<uint8_t> bytes = edited_model(
      [](GgufWriter& w) { w.set_scalar<float>("gemma3.final_logit_softcapping", kCap); });
  auto capped = load(bytes);
  ASSERT_TRUE(capped.is_ok()) << capped.status().message();
  EXPECT_EQ((*capped)->config().final_logit_softcap, kCap);
  const std::vector<float> a = logits_of(**plain);
  const std::vector<float> b = logits_of(**capped);
  ASSERT_EQ(a.size(), b.size());
  float max_plain = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    max_plain = std::max(max_plain, std::fabs(a[i]));
    EXPECT_LE(std::fabs(b[i]), kCap);
    EXPECT_EQ(b[i], std::tanh(a[i] * (1.0f / kCap)) * kCap) << i;
  }
  EXPECT_GT(max_plain, kCap);  // the cap changed something
}

}  // namespace
}  // namespace minfer
