// Reranking: the classifier head's arithmetic by hand (dense + tanh + projection; the yes/no
// pair's softmax), the head read out of a file (cls.* taken from the tensor list, the model
// loading without them; what is not computed refused by name), and both methods' scores equal
// to a direct computation: the yes/no method to softmax over the "yes"/"no" columns of
// LanguageModel::logits on the pair's tokens, the classifier to the head applied by hand to the
// last hidden state of the public embedder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "edited_model.h"
#include "engine/rerank_head.h"
#include "engine/reranker.h"
#include "minfer/minfer.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

constexpr const char* kQwenVocabModel = "models/qwen3-qwentok-tiny-q8_0.gguf";

TEST(RerankHead, DenseTanhAndProjectionByHand) {
  RerankHead h;
  h.n_embd = 2;
  h.n_inner = 2;
  h.dense = {1, 0, 0, 2};  // [2, 2]
  h.dense_bias = {0, 0.5f};
  h.n_out = 1;
  h.out = {1, -1};  // [1, 2]
  h.out_bias = {0.25f};
  const std::vector<float> hidden = {0.5f, 0.25f};
  const double expected = std::tanh(0.5) - std::tanh(2 * 0.25 + 0.5) + 0.25;
  EXPECT_NEAR(h.score(hidden), expected, 1e-6);
  // Without the dense layer the projection reads the hidden state itself.
  RerankHead p;
  p.n_embd = 2;
  p.n_out = 1;
  p.out = {2, 3};
  EXPECT_NEAR(p.score(hidden), 2 * 0.5 + 3 * 0.25, 1e-6);
}

TEST(RerankHead, YesNoPairIsTheSoftmaxOfYes) {
  RerankHead h;
  h.n_embd = 1;
  h.n_out = 2;
  h.out = {3, 1};  // yes, no
  h.yes_no = true;
  const std::vector<float> hidden = {0.5f};
  EXPECT_NEAR(h.score(hidden), std::exp(1.5) / (std::exp(1.5) + std::exp(0.5)), 1e-6);
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// qwen3-tiny-f32 as a classifier reranker: pooling_type rank and a head of known values
// (`extra`: one more cls.* tensor to add, for the refusals).
std::vector<uint8_t> classifier_image(int64_t n_embd, const std::string& extra = "") {
  return test::edited_model("qwen3-tiny-f32.gguf", [&](GgufWriter& w) {
    w.set_scalar<uint32_t>("qwen3.pooling_type", 4);
    std::vector<float> dense(static_cast<size_t>(n_embd * n_embd));
    for (size_t i = 0; i < dense.size(); ++i) dense[i] = 0.05f * std::sin(0.37f * i);
    std::vector<float> out(static_cast<size_t>(n_embd));
    for (size_t i = 0; i < out.size(); ++i) out[i] = 0.3f * std::cos(1.3f * i);
    const auto n = static_cast<uint64_t>(n_embd);
    EXPECT_TRUE(w.add_tensor("cls.weight", GgmlType::kF32, {n, n}, f32_bytes(dense)).is_ok());
    EXPECT_TRUE(w.add_tensor("cls.output.weight", GgmlType::kF32, {n, 1}, f32_bytes(out)).is_ok());
    EXPECT_TRUE(w.add_tensor("cls.output.bias", GgmlType::kF32, {1}, f32_bytes({0.125f})).is_ok());
    if (!extra.empty()) {
      EXPECT_TRUE(w.add_tensor(extra, GgmlType::kF32, {n}, f32_bytes(out)).is_ok());
    }
  });
}

int64_t tiny_n_embd() {
  auto file = GgufFile::open(test::test_data_path("models/qwen3-tiny-f32.gguf"));
  EXPECT_TRUE(file.is_ok());
  return file.is_ok() ? *(*file)->get_integer("qwen3.embedding_length") : 0;
}

TEST(TakeRerankHead, ReadsTheHeadAndLeavesTheModelLoadable) {
  MINFER_REQUIRE_TEST_DATA();
  const int64_t n_embd = tiny_n_embd();
  const std::vector<uint8_t> image = classifier_image(n_embd);
  auto file = GgufFile::parse(image, "classifier");
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto head = take_rerank_head(**file);
  ASSERT_TRUE(head.is_ok()) << head.status().message();
  ASSERT_TRUE(head->has_value());
  const RerankHead& h = **head;
  EXPECT_EQ(h.n_inner, n_embd);
  EXPECT_EQ(h.n_out, 1);
  EXPECT_TRUE(h.dense_bias.empty());
  EXPECT_FLOAT_EQ(h.out_bias[0], 0.125f);
  EXPECT_FLOAT_EQ(h.dense[1], 0.05f * std::sin(0.37f));
  EXPECT_FALSE(h.yes_no);
  EXPECT_EQ((*file)->find_tensor("cls.weight"), nullptr);
  auto model = Model::from_file(std::move(file).value());
  EXPECT_TRUE(model.is_ok()) << model.status().message();
}

TEST(TakeRerankHead, RefusesWhatItDoesNotComputeByName) {
  MINFER_REQUIRE_TEST_DATA();
  const std::vector<uint8_t> norm_image = classifier_image(tiny_n_embd(), "cls.norm.weight");
  auto file = GgufFile::parse(norm_image, "with-norm");
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto head = take_rerank_head(**file);
  ASSERT_FALSE(head.is_ok());
  EXPECT_NE(head.status().message().find("cls.norm.weight"), std::string::npos);
  // A head whose projection does not read the dense layer's output.
  const std::vector<uint8_t> bad = test::edited_model("qwen3-tiny-f32.gguf", [](GgufWriter& w) {
    w.set_scalar<uint32_t>("qwen3.pooling_type", 4);
    EXPECT_TRUE(
        w.add_tensor("cls.output.weight", GgmlType::kF32, {3, 1}, f32_bytes({1, 2, 3})).is_ok());
  });
  auto bad_file = GgufFile::parse(bad, "bad-shape");
  ASSERT_TRUE(bad_file.is_ok());
  auto refused = take_rerank_head(**bad_file);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("cls.output.weight"), std::string::npos);
  // Not a reranker: nothing is taken.
  auto plain = GgufFile::open(test::test_data_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(plain.is_ok());
  auto none = take_rerank_head(**plain);
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->has_value());
}

std::unique_ptr<LanguageModel> load(const std::string& path) {
  LoadOptions o;
  o.n_ctx = 256;
  o.n_threads = 2;
  o.cache_type = "f32";
  o.single_sequence = false;
  auto model = LanguageModel::load(path, o);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

const std::vector<std::string> kDocuments = {
    "The giant panda is a bear species endemic to China.",
    "hi",
    "Paris is the capital of France.",
    "Bread is made of flour, water, yeast and salt.",
};

TEST(Reranker, YesNoScoresAreTheSoftmaxOfTheYesNoLogits) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(test::test_data_path(kQwenVocabModel));
  ASSERT_NE(model, nullptr);
  auto reranker = model->reranker();
  ASSERT_TRUE(reranker.is_ok()) << reranker.status().message();
  EXPECT_NE((*reranker)->method().find("yes/no"), std::string::npos);
  const int32_t yes = model->tokenize("yes", false).at(0);
  const int32_t no = model->tokenize("no", false).at(0);
  std::vector<std::vector<int32_t>> pairs;
  for (const std::string& d : kDocuments) {
    pairs.push_back((*reranker)->pair_tokens("What is a panda?", d));
  }
  // The model card's prompt, tokenized whole with special tokens parsed.
  EXPECT_EQ(pairs[1].front(), model->tokenize("<|im_start|>", false, true).at(0));
  auto scores = (*reranker)->score(pairs);
  ASSERT_TRUE(scores.is_ok()) << scores.status().message();
  ASSERT_EQ(scores->size(), kDocuments.size());
  const int64_t n_vocab = model->n_vocab();
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto logits = model->logits(pairs[i], 0, "f32");
    ASSERT_TRUE(logits.is_ok()) << logits.status().message();
    const float* last = logits->data() + (pairs[i].size() - 1) * static_cast<size_t>(n_vocab);
    const double p_yes = 1.0 / (1.0 + std::exp(static_cast<double>(last[no]) - last[yes]));
    EXPECT_NEAR((*scores)[i], p_yes, 1e-4) << "document " << i;
    EXPECT_GT((*scores)[i], 0.0f);
    EXPECT_LT((*scores)[i], 1.0f);
  }
  EXPECT_NE((*scores)[0], (*scores)[1]);
}

TEST(Reranker, ClassifierScoresAreTheHeadOfTheLastHiddenState) {
  MINFER_REQUIRE_TEST_DATA();
  const int64_t n_embd = tiny_n_embd();
  test::TempDir dir;
  const std::string path = dir.file("classifier.gguf");
  test::write_file_bytes(path, classifier_image(n_embd));
  auto model = load(path);
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->is_reranker());
  EXPECT_FALSE(model->is_embedding_model());
  auto reranker = model->reranker();
  ASSERT_TRUE(reranker.is_ok()) << reranker.status().message();
  EXPECT_NE((*reranker)->method().find("classifier head"), std::string::npos);
  // The head as the file holds it, applied by hand.
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.is_ok());
  auto head = take_rerank_head(**file);
  ASSERT_TRUE(head.is_ok() && head->has_value());
  auto embedder = model->embedder({.pooling = "last", .normalize = false, .n_ctx = 256});
  ASSERT_TRUE(embedder.is_ok()) << embedder.status().message();
  std::vector<std::vector<int32_t>> pairs;
  for (const std::string& d : kDocuments) pairs.push_back((*reranker)->pair_tokens("panda?", d));
  auto scores = (*reranker)->score(pairs);
  ASSERT_TRUE(scores.is_ok()) << scores.status().message();
  auto hidden = (*embedder)->embed(pairs);
  ASSERT_TRUE(hidden.is_ok()) << hidden.status().message();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::vector<float>& h = (*hidden)[i];
    double y = (**head).out_bias[0];
    for (int64_t r = 0; r < n_embd; ++r) {
      double v = 0;
      for (int64_t c = 0; c < n_embd; ++c) {
        v += static_cast<double>((**head).dense[static_cast<size_t>(r * n_embd + c)]) *
             h[static_cast<size_t>(c)];
      }
      y += (**head).out[static_cast<size_t>(r)] * std::tanh(v);
    }
    EXPECT_NEAR((*scores)[i], y, 1e-5) << "document " << i;
  }
}

TEST(Reranker, AModelThatCannotRerankIsRefusedWithTheReason) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(test::test_data_path("models/stories260K.gguf"));
  ASSERT_NE(model, nullptr);
  auto reranker = model->reranker();
  ASSERT_FALSE(reranker.is_ok());
  EXPECT_NE(reranker.status().message().find("cannot rerank"), std::string::npos)
      << reranker.status().message();
}

TEST(Reranker, TooLongAPairIsAnErrorNamingIt) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(test::test_data_path(kQwenVocabModel));
  ASSERT_NE(model, nullptr);
  auto reranker = model->reranker({.n_ctx = 64});
  ASSERT_TRUE(reranker.is_ok()) << reranker.status().message();
  std::vector<std::vector<int32_t>> pairs = {(*reranker)->pair_tokens("q", "short")};
  EXPECT_FALSE((*reranker)->score(pairs).is_ok());  // the prompt alone is over 64 tokens
}

}  // namespace
}  // namespace minfer::engine
