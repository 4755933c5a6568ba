// A file whose meaning minfer does not fully implement is refused, never run: a tensor the
// architecture's list does not name, an "<arch>." key nothing reads, a rope scaling kind minfer
// does not compute. And the rope scaling it does implement is read as llama.cpp reads it
// (YaRN's defaults, Llama 3's rope_freqs, linear as the default kind).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "edited_model.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "models/model.h"
#include "models/model_config.h"
#include "test_util.h"

namespace minfer {
namespace {

using test::edited_model;

Result<std::unique_ptr<Model>> load_image(const std::vector<uint8_t>& image) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::parse(image, "x.gguf"));
  return Model::from_file(std::move(file));
}

// f32 vector of n values v.
std::vector<uint8_t> f32_bytes(size_t n, float v) {
  std::vector<float> values(n, v);
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  return std::vector<uint8_t>(p, p + n * sizeof(float));
}

void expect_refused(const std::vector<uint8_t>& image, ErrorCode code,
                    const std::vector<std::string>& parts) {
  auto model = load_image(image);
  ASSERT_FALSE(model.is_ok()) << "loaded, expected an error naming " << parts.front();
  EXPECT_EQ(model.status().code(), code) << model.status().message();
  for (const std::string& part : parts) {
    EXPECT_NE(model.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << model.status().message();
  }
}

TEST(UnreadInput, ATensorTheArchitectureDoesNotReadIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("blk.0.foo.weight", GgmlType::kF32, {64}, f32_bytes(64, 1)).is_ok());
  });
  expect_refused(image, ErrorCode::kUnsupported,
                 {"[model] 'x.gguf': tensor 'blk.0.foo.weight' is not read by architecture "
                  "'llama' (minfer would ignore it and compute something else)"});
}

TEST(UnreadInput, Llama3RopeFreqsInAQwen2FileIsRefused) {
  // llama.cpp's qwen2 reads no rope_freqs: the file means something neither engine computes.
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("qwen2-tiny-f32.gguf", [](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("rope_freqs.weight", GgmlType::kF32, {32}, f32_bytes(32, 2)).is_ok());
  });
  expect_refused(image, ErrorCode::kUnsupported, {"'rope_freqs.weight'", "'qwen2'"});
}

TEST(UnreadInput, AKeyNothingReadsIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<float>("llama.attn_logit_softcapping", 50.0f);
  });
  expect_refused(image, ErrorCode::kUnsupported,
                 {"key 'llama.attn_logit_softcapping' is not read by architecture 'llama'"});
  // YaRN's log multiplier means different things per architecture in llama.cpp: not guessed.
  const auto log_mul = edited_model("qwen2-yarn-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<float>("qwen2.rope.scaling.yarn_log_multiplier", 0.1f);
  });
  expect_refused(log_mul, ErrorCode::kUnsupported, {"'qwen2.rope.scaling.yarn_log_multiplier'"});
}

TEST(UnreadInput, RopeScalingKindsNotImplementedAreRefused) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* kind : {"longrope", "llama3", "su"}) {
    const auto image = edited_model("qwen2-tiny-f32.gguf", [kind](GgufWriter& w) {
      w.set_string("qwen2.rope.scaling.type", kind);
      w.set_scalar<float>("qwen2.rope.scaling.factor", 1.0f);
    });
    expect_refused(image, ErrorCode::kUnsupported,
                   {"key 'qwen2.rope.scaling.type' is rope scaling '" + std::string(kind) + "'"});
  }
}

TEST(UnreadInput, KeysThatDoNotChangeTheArithmeticLoad) {
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<bool>("llama.rope.scaling.finetuned", false);
    w.set_string("llama.tensor_data_layout", "Meta AI original pth");
    w.set_scalar<uint32_t>("llama.rope.scaling.original_context_length", 4096);
  });
  auto model = load_image(image);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
}

TEST(RopeScaling, YarnReadAsLlamaCppDefaultsIt) {
  MINFER_REQUIRE_TEST_DATA();
  // qwen2-yarn-tiny: yarn, factor 4, original context 1024, n_rot 64, base 1e6, no yarn_* keys.
  auto model = Model::load(test::test_data_path("models/qwen2-yarn-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.rope_freq_scale, 0.25f);
  EXPECT_EQ(c.rope_ext_factor, 1.0f);
  EXPECT_EQ(c.rope_n_ctx_orig, 1024);
  // (0.1 ln 4 + 1) / (1 + 0.1 ln 4): 1 up to rounding; ggml multiplies by 1 + 0.1 ln 4 again.
  EXPECT_NEAR(c.rope_attn_factor, 1.0f, 1e-6f);
  const kernels::RopeConfig rope = rope_config(c, nullptr, c.rope_freq_base);
  EXPECT_EQ(rope.yarn_low, 3.0f);    // beta_fast 32 (see the kernels' YarnCorrectionDimsAsGgml)
  EXPECT_EQ(rope.yarn_high, 12.0f);  // beta_slow 1
  // The optional keys override the defaults; rope.scaling.attn_factor multiplies the magnitude.
  const auto image = edited_model("qwen2-yarn-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<float>("qwen2.rope.scaling.yarn_beta_fast", 16.0f);
    w.set_scalar<float>("qwen2.rope.scaling.yarn_ext_factor", 0.5f);
    w.set_scalar<float>("qwen2.rope.scaling.attn_factor", 2.0f);
  });
  auto edited = load_image(image);
  ASSERT_TRUE(edited.is_ok()) << edited.status().message();
  EXPECT_EQ((*edited)->config().rope_yarn_beta_fast, 16.0f);
  EXPECT_EQ((*edited)->config().rope_ext_factor, 0.5f);
  EXPECT_NEAR((*edited)->config().rope_attn_factor, 2.0f, 1e-6f);
}

TEST(RopeScaling, AFactorWithoutAKindIsLinearAsInLlamaCpp) {
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<float>("llama.rope.scaling.factor", 2.0f);
  });
  auto model = load_image(image);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ((*model)->config().rope_freq_scale, 0.5f);
  EXPECT_EQ((*model)->config().rope_ext_factor, 0.0f);
  // "none" never scales, whatever the factor.
  const auto none = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "none");
    w.set_scalar<float>("llama.rope.scaling.factor", 2.0f);
  });
  auto unscaled = load_image(none);
  ASSERT_TRUE(unscaled.is_ok()) << unscaled.status().message();
  EXPECT_EQ((*unscaled)->config().rope_freq_scale, 1.0f);
}

TEST(RopeScaling, Llama3RopeFreqsReachEveryLayer) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/llama3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_TRUE((*model)->config().rope_freq_factors);
  const ModelWeights& w = (*model)->weights();
  ASSERT_TRUE(w.rope_freqs.has_value());
  EXPECT_EQ(w.rope_freqs->n_cols, 32);  // n_rot / 2
  for (const LayerWeights& layer : w.layers) {
    ASSERT_TRUE(layer.rope_freqs.has_value());
    EXPECT_EQ(layer.rope_freqs->data, w.rope_freqs->data);
  }
}

TEST(RopeScaling, ARopeFreqsValueThatIsNotPositiveIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  const auto image = edited_model("llama-tiny-f32.gguf", [](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("rope_freqs.weight", GgmlType::kF32, {32}, f32_bytes(32, 0)).is_ok());
  });
  expect_refused(image, ErrorCode::kCorrupt,
                 {"tensor 'rope_freqs.weight' value 0 is 0, expected a finite number > 0"});
}

}  // namespace
}  // namespace minfer
