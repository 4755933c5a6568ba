// Weights repacked at load (models/repack.h) compute exactly what the GGUF layout computes, under
// the active table (its x16 tiles) and under ref (matmul's deinterleaving fallback), and
// MINFER_REPACK=0 keeps the GGUF layout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
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
    for (const char* isa : {"", "ref"}) {
      for (bool decode : {false, true}) {
        const std::vector<float> a = logits(*repacked, isa, decode);
        const std::vector<float> b = logits(*plain, isa, decode);
        ASSERT_FALSE(a.empty());
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << name << " isa '" << isa << "' decode " << decode;
      }
    }
  }
}

}  // namespace
}  // namespace minfer
