// Weights repacked at load (models/repack.h) compute exactly what the GGUF layout computes, under
// the active table (its x16 tiles) and under ref (matmul's deinterleaving fallback), and
// MINFER_REPACK=0 keeps the GGUF layout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime.h"
#include "graph/batch.h"
#include "kernels/dispatch.h"
#include "models/model.h"
#include "models/repack.h"
#include "test_util.h"

namespace minfer {
namespace {

// Logits of every position of a short prompt, as one prefill ([8, n_vocab]) or one token at a
// time (`decode`), on the table of `isa` (empty: the active one).
std::vector<float> logits(const Model& model, const std::string& isa, bool decode) {
  const std::vector<int32_t> prompt = {1, 17, 404, 9, 230, 5, 77, 801};
  engine::RuntimeOptions options;
  options.n_threads = 2;
  options.n_ctx = static_cast<int64_t>(prompt.size());
  options.isa = isa;
  auto runtime = engine::Runtime::create(model, options);
  EXPECT_TRUE(runtime.is_ok()) << runtime.status().message();
  if (!runtime.is_ok()) return {};
  std::vector<float> out;
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.add(prompt[i], static_cast<int32_t>(i), 0, true);
    if (!decode && i + 1 < prompt.size()) continue;
    auto step = (*runtime)->step(batch);
    EXPECT_TRUE(step.is_ok()) << step.status().message();
    if (!step.is_ok()) return {};
    out.insert(out.end(), step->begin(), step->end());
    batch = Batch();
  }
  return out;
}

// The model at `path` loaded with MINFER_REPACK set to `repack` ("1" or "0").
std::unique_ptr<Model> load_with(const std::string& path, const char* repack) {
  const char* before = std::getenv("MINFER_REPACK");
  const std::string saved = before != nullptr ? before : "";
  setenv("MINFER_REPACK", repack, 1);
  auto model = Model::load(path);
  if (before != nullptr) {
    setenv("MINFER_REPACK", saved.c_str(), 1);
  } else {
    unsetenv("MINFER_REPACK");
  }
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(*model) : nullptr;
}

// The model at `path` gives the same logits repacked and not, on the active table and on ref.
void expect_same_logits(const std::string& path, const Model& repacked, const Model& plain) {
  for (const char* isa : {"", "ref"}) {
    for (bool decode : {false, true}) {
      const std::vector<float> a = logits(repacked, isa, decode);
      const std::vector<float> b = logits(plain, isa, decode);
      ASSERT_FALSE(a.empty());
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
          << path << " isa '" << isa << "' decode " << decode;
    }
  }
}

TEST(Repack, RepackedWeightsGiveBitIdenticalLogits) {
  MINFER_REQUIRE_TEST_DATA();
  const bool repacks = repack_enabled(kernels::active_table());
  // The K-quant files (n_embd 256: whole super-blocks) mix Q4_K / Q5_K / Q6_K with other types.
  for (const char* name :
       {"qwen2-tiny-q8_0.gguf", "qwen2-tiny-q4_0.gguf", "qwen2-tiny-q5_0.gguf",
        "qwen2-tiny-q4_k_m.gguf", "qwen2-tiny-q5_k_m.gguf", "qwen2-tiny-q6_k.gguf"}) {
    const std::string path = test::test_data_path(std::string("models/") + name);
    std::unique_ptr<Model> repacked = load_with(path, "1");
    std::unique_ptr<Model> plain = load_with(path, "0");
    ASSERT_NE(repacked, nullptr);
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(plain->repacked(), nullptr) << name;
    if (repacks) {
      ASSERT_NE(repacked->repacked(), nullptr) << name;
      EXPECT_GT(repacked->repacked()->n_tensors(), 0) << name;
    }
    expect_same_logits(path, *repacked, *plain);
  }
}

// The layer matrices beyond attention and the dense FFN are repacked too: a MoE's experts (3-D,
// each expert's matrix on its own) and a gated delta-net's projections (Gemma 4's per-layer
// embedding projections as well, but the tiny file's have 8 rows or are f16: none can be).
TEST(Repack, ExpertsAndDeltaNetProjectionsAreRepacked) {
  MINFER_REQUIRE_TEST_DATA();
  if (!repack_enabled(kernels::active_table())) {
    GTEST_SKIP() << "the active table has no x16 tiles: nothing is repacked";
  }
  struct Case {
    const char* name;
    bool experts, delta_net;  // whether the file must have them in the x16 layout
  };
  for (const Case& c :
       {Case{"gptoss-tiny-mxfp4.gguf", true, false}, Case{"qwen35-tiny-q8_0.gguf", false, true},
        Case{"gemma4-tiny-q8_0.gguf", false, false},
        Case{"gemma4-moe-tiny-q8_0.gguf", true, false}}) {
    const std::string path = test::test_data_path(std::string("models/") + c.name);
    std::unique_ptr<Model> repacked = load_with(path, "1");
    std::unique_ptr<Model> plain = load_with(path, "0");
    ASSERT_NE(repacked, nullptr);
    ASSERT_NE(plain, nullptr);
    const auto x16 = [](const std::optional<WeightTensor>& t) {
      return t.has_value() && t->layout == kernels::WeightLayout::kRows16;
    };
    bool experts = false, delta_net = false;
    for (const LayerWeights& l : repacked->weights().layers) {
      experts = experts || x16(l.gate_exps) || x16(l.gate_up_exps) || x16(l.down_exps);
      delta_net = delta_net || (l.delta_net.has_value() &&
                                l.delta_net->qkv.layout == kernels::WeightLayout::kRows16);
    }
    EXPECT_EQ(experts, c.experts) << c.name;
    EXPECT_EQ(delta_net, c.delta_net) << c.name;
    expect_same_logits(path, *repacked, *plain);
  }
}

}  // namespace
}  // namespace minfer
