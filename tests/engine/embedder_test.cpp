// Embeddings: the pooling arithmetic by hand, the embedder against the hidden rows of one step
// pooled by hand (mean, cls, last), normalization, repeatability, inputs batched together or
// split across steps equal to one at a time, bad inputs refused, and <arch>.pooling_type read.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edited_model.h"
#include "engine/embedder.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

constexpr const char* kModel = "models/qwen2-tiny-f32.gguf";

TEST(PoolRows, MeanClsLastByHand) {
  const std::vector<float> hidden = {1, 2, 3, 6, 5, -2};  // [3, 2]
  EXPECT_EQ(pool_rows(hidden, 3, 2, Pooling::kMean), (std::vector<float>{3, 2}));
  EXPECT_EQ(pool_rows(hidden, 3, 2, Pooling::kCls), (std::vector<float>{1, 2}));
  EXPECT_EQ(pool_rows(hidden, 3, 2, Pooling::kLast), (std::vector<float>{5, -2}));
}

TEST(L2Normalize, UnitLengthAndZeroStaysZero) {
  std::vector<float> v = {3, 4};
  l2_normalize(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> z = {0, 0};
  l2_normalize(z);
  EXPECT_EQ(z, (std::vector<float>{0, 0}));
}

TEST(ParsePooling, NamesAndErrors) {
  EXPECT_EQ(*parse_pooling("mean"), Pooling::kMean);
  EXPECT_EQ(*parse_pooling("cls"), Pooling::kCls);
  EXPECT_EQ(*parse_pooling("last"), Pooling::kLast);
  auto bad = parse_pooling("rank");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'rank'"), std::string::npos);
}

RuntimeOptions tiny_runtime() {
  RuntimeOptions o;
  o.n_ctx = 64;
  o.n_threads = 2;
  return o;
}

float norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return static_cast<float>(std::sqrt(s));
}

void expect_near_all(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
}

TEST(Embedder, PoolsTheHiddenRowsOfOneStepByHand) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path(kModel));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<int32_t> text = {5, 17, 300, 42, 9};
  const int64_t n = static_cast<int64_t>(text.size());
  const int64_t n_embd = (*model)->config().n_embd;
  // Every row's last hidden state, from one step of a runtime of its own.
  auto runtime = Runtime::create(**model, tiny_runtime());
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  Batch batch;
  for (int64_t t = 0; t < n; ++t) batch.add(text[static_cast<size_t>(t)], t, 0, true);
  auto hidden = (*runtime)->step_hidden(batch);
  ASSERT_TRUE(hidden.is_ok()) << hidden.status().message();
  ASSERT_EQ(hidden->size(), static_cast<size_t>(n * n_embd));
  const std::vector<float> rows(hidden->begin(), hidden->end());  // [n, n_embd]
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    SCOPED_TRACE(pooling_name(pooling));
    std::vector<float> want(static_cast<size_t>(n_embd), 0.0f);
    for (int64_t i = 0; i < n_embd; ++i) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) sum += rows[static_cast<size_t>(t * n_embd + i)];
      const size_t at = static_cast<size_t>(i);
      want[at] = pooling == Pooling::kMean  ? static_cast<float>(sum / static_cast<double>(n))
                 : pooling == Pooling::kCls ? rows[at]
                                            : rows[static_cast<size_t>((n - 1) * n_embd + i)];
    }
    const float want_norm = norm(want);
    for (float& x : want) x /= want_norm;
    auto e = Embedder::create(**model, tiny_runtime(), {.pooling = pooling});
    ASSERT_TRUE(e.is_ok()) << e.status().message();
    auto got = (*e)->embed(std::vector<std::vector<int32_t>>{text});
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    ASSERT_EQ(got->size(), 1u);
    expect_near_all((*got)[0], want, 1e-5f);
    EXPECT_NEAR(norm((*got)[0]), 1.0f, 1e-5f);
    // Without normalization: the pooled vector itself.
    auto raw = Embedder::create(**model, tiny_runtime(), {.pooling = pooling, .normalize = false});
    ASSERT_TRUE(raw.is_ok());
    auto got_raw = (*raw)->embed(std::vector<std::vector<int32_t>>{text});
    ASSERT_TRUE(got_raw.is_ok());
    for (float& x : want) x *= want_norm;
    expect_near_all((*got_raw)[0], want, 1e-4f);
  }
}

TEST(Embedder, SameTextSameVectorAndBatchedEqualsOneAtATime) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path(kModel));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<std::vector<int32_t>> texts = {
      {1, 2, 3, 4, 5, 6, 7}, {100, 200}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11}};
  for (Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    SCOPED_TRACE(pooling_name(pooling));
    auto e = Embedder::create(**model, tiny_runtime(), {.pooling = pooling});
    ASSERT_TRUE(e.is_ok()) << e.status().message();
    auto batched = (*e)->embed(texts);
    ASSERT_TRUE(batched.is_ok()) << batched.status().message();
    ASSERT_EQ(batched->size(), texts.size());
    // A small step budget and two sequences: inputs split across steps and waiting for a slot.
    auto chunked =
        Embedder::create(**model, tiny_runtime(), {.pooling = pooling, .n_batch = 3, .n_seq = 2});
    ASSERT_TRUE(chunked.is_ok()) << chunked.status().message();
    auto split = (*chunked)->embed(texts);
    ASSERT_TRUE(split.is_ok()) << split.status().message();
    for (size_t i = 0; i < texts.size(); ++i) {
      auto one = (*e)->embed(std::vector<std::vector<int32_t>>{texts[i]});
      ASSERT_TRUE(one.is_ok()) << one.status().message();
      auto again = (*e)->embed(std::vector<std::vector<int32_t>>{texts[i]});
      ASSERT_TRUE(again.is_ok());
      EXPECT_EQ((*one)[0], (*again)[0]);
      expect_near_all((*batched)[i], (*one)[0], 1e-5f);
      expect_near_all((*split)[i], (*one)[0], 1e-5f);
      EXPECT_NEAR(norm((*one)[0]), 1.0f, 1e-5f);
    }
  }
}

TEST(Embedder, RefusesBadInputsAndPoolings) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path(kModel));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto e = Embedder::create(**model, tiny_runtime(), {});
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  auto empty = (*e)->embed(std::vector<std::vector<int32_t>>{{1, 2}, {}});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("input 1 has no tokens"), std::string::npos);
  auto bad_id = (*e)->embed(std::vector<std::vector<int32_t>>{{1, 5000}});
  ASSERT_FALSE(bad_id.is_ok());
  EXPECT_NE(bad_id.status().message().find("5000"), std::string::npos);
  auto too_long = (*e)->embed(std::vector<std::vector<int32_t>>{std::vector<int32_t>(65, 1)});
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.status().message().find("65 tokens"), std::string::npos);
  // Still usable after errors.
  EXPECT_TRUE((*e)->embed(std::vector<std::vector<int32_t>>{{1, 2}}).is_ok());
  EXPECT_FALSE(Embedder::create(**model, tiny_runtime(), {.pooling = Pooling::kRank}).is_ok());
}

Result<std::unique_ptr<Model>> with_pooling(const std::vector<uint8_t>& image) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::parse(image, "edited"));
  return Model::from_file(std::move(file));
}

TEST(Embedder, ReadsThePoolingTypeKey) {
  MINFER_REQUIRE_TEST_DATA();
  auto plain = Model::load(test::test_data_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ((*plain)->config().pooling_type, -1);
  EXPECT_EQ(*model_pooling((*plain)->config()), Pooling::kLast);
  auto image_with = [](uint32_t type) {
    return test::edited_model("qwen3-tiny-f32.gguf",
                              [type](GgufWriter& w) { w.set_scalar("qwen3.pooling_type", type); });
  };
  const std::vector<uint8_t> mean_image = image_with(1);
  auto mean = with_pooling(mean_image);
  ASSERT_TRUE(mean.is_ok()) << mean.status().message();
  EXPECT_EQ(*model_pooling((*mean)->config()), Pooling::kMean);
  const std::vector<uint8_t> rank_image = image_with(4);
  auto rank = with_pooling(rank_image);
  ASSERT_TRUE(rank.is_ok()) << rank.status().message();
  auto refused = model_pooling((*rank)->config());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("rank"), std::string::npos);
  const std::vector<uint8_t> bad_image = image_with(9);
  auto bad = with_pooling(bad_image);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("pooling_type"), std::string::npos);
}

}  // namespace
}  // namespace minfer::engine
