// Session: prefix reuse gives bit-identical logits to a fresh session, chunked prefill, context
// errors that never crash, truncation and the history the cache holds.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

std::unique_ptr<Model> load(const std::string& name) {
  auto model = Model::load(test::test_data_path("models/" + name));
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

std::unique_ptr<Session> make_session(const Model& model, SessionOptions options = {}) {
  if (options.n_threads == 0) options.n_threads = 2;
  auto session = Session::create(model, options);
  EXPECT_TRUE(session.is_ok()) << session.status().message();
  return session.is_ok() ? std::move(session).value() : nullptr;
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SessionModels : public ::testing::TestWithParam<const char*> {};

TEST_P(SessionModels, ExtendingAPromptPrefillsOnlyTheNewTokensWithIdenticalLogits) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> first = some_tokens(23, n_vocab, 1);
  std::vector<int32_t> whole = first;
  const std::vector<int32_t> more = some_tokens(17, n_vocab, 2);
  whole.insert(whole.end(), more.begin(), more.end());

  auto reused = make_session(*model);
  ASSERT_NE(reused, nullptr);
  ASSERT_TRUE(reused->set_prompt(first).is_ok());
  EXPECT_EQ(reused->last_prefill().n_prefilled, 23);
  EXPECT_EQ(reused->last_prefill().n_reused, 0);
  auto logits = reused->set_prompt(whole);
  ASSERT_TRUE(logits.is_ok()) << logits.status().message();
  EXPECT_EQ(reused->last_prefill().n_prompt, 40);
  EXPECT_EQ(reused->last_prefill().n_reused, 23);
  EXPECT_EQ(reused->last_prefill().n_prefilled, 17);
  EXPECT_EQ(reused->tokens(), whole);
  EXPECT_EQ(reused->cache().length(0), 40);
  const std::vector<float> after_reuse = copy(logits.value());

  auto fresh = make_session(*model);
  ASSERT_NE(fresh, nullptr);
  auto fresh_logits = fresh->set_prompt(whole);
  ASSERT_TRUE(fresh_logits.is_ok());
  EXPECT_EQ(fresh->last_prefill().n_prefilled, 40);
  EXPECT_TRUE(bit_identical(after_reuse, copy(fresh_logits.value())));
}

TEST_P(SessionModels, ADivergingPromptKeepsTheCommonPrefixAndMatchesAFreshSession) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t n_vocab = model->config().n_vocab;
  std::vector<int32_t> a = some_tokens(30, n_vocab, 3);
  std::vector<int32_t> b(a.begin(), a.begin() + 12);
  const std::vector<int32_t> tail = some_tokens(9, n_vocab, 4);
  b.insert(b.end(), tail.begin(), tail.end());
  ASSERT_NE(a[12], b[12]);

  auto session = make_session(*model);
  ASSERT_TRUE(session->set_prompt(a).is_ok());
  auto logits = session->set_prompt(b);
  ASSERT_TRUE(logits.is_ok());
  EXPECT_EQ(session->last_prefill().n_reused, 12);
  EXPECT_EQ(session->last_prefill().n_prefilled, 9);
  EXPECT_EQ(session->cache().length(0), 21);
  const std::vector<float> got = copy(logits.value());

  auto fresh = make_session(*model);
  auto expected = fresh->set_prompt(b);
  ASSERT_TRUE(expected.is_ok());
  EXPECT_TRUE(bit_identical(got, copy(expected.value())));
}

TEST_P(SessionModels, TheSamePromptAgainRecomputesOnlyItsLastToken) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> p = some_tokens(10, model->config().n_vocab, 5);
  auto session = make_session(*model);
  auto first = session->set_prompt(p);
  ASSERT_TRUE(first.is_ok());
  const std::vector<float> before = copy(first.value());
  auto again = session->set_prompt(p);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(session->last_prefill().n_reused, 9);
  EXPECT_EQ(session->last_prefill().n_prefilled, 1);
  EXPECT_TRUE(bit_identical(before, copy(again.value())));
}

TEST_P(SessionModels, ChunkedPrefillAndDecodeGiveTheLogitsOfOneBigPrefill) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> p = some_tokens(37, model->config().n_vocab, 6);
  SessionOptions chunked;
  chunked.n_batch = 8;
  auto a = make_session(*model, chunked);
  auto la = a->set_prompt(p);
  ASSERT_TRUE(la.is_ok());
  EXPECT_EQ(a->prefill_times().count, 5);  // 8 + 8 + 8 + 8 + 5
  const std::vector<float> chunk_logits = copy(la.value());

  auto b = make_session(*model);
  auto lb = b->set_prompt(p);
  ASSERT_TRUE(lb.is_ok());
  EXPECT_EQ(b->prefill_times().count, 1);
  EXPECT_TRUE(bit_identical(chunk_logits, copy(lb.value())));

  // Decoding token by token after a prompt equals prefilling the whole.
  auto c = make_session(*model);
  const std::vector<int32_t> head(p.begin(), p.begin() + 30);
  ASSERT_TRUE(c->set_prompt(head).is_ok());
  std::vector<float> last;
  for (size_t i = 30; i < p.size(); ++i) {
    auto l = c->decode(p[i]);
    ASSERT_TRUE(l.is_ok());
    last = copy(l.value());
  }
  EXPECT_EQ(c->decode_times().count, 7);
  EXPECT_EQ(c->n_past(), 37);
  EXPECT_TRUE(bit_identical(chunk_logits, last));
}

INSTANTIATE_TEST_SUITE_P(Models, SessionModels,
                         ::testing::Values("stories260K.gguf", "qwen2-tiny-q8_0.gguf",
                                           "qwen3-tiny-q4_k_m.gguf", "llama-tiny-f32.gguf"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(Session, PositionsPastTheContextAreErrorsNotCrashes) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.n_ctx = 8;
  auto session = make_session(*model, options);
  const std::vector<int32_t> too_long = some_tokens(9, model->config().n_vocab, 7);
  auto r = session->set_prompt(too_long);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("[session]"), std::string::npos) << r.status().message();
  EXPECT_EQ(session->n_past(), 0);

  const std::vector<int32_t> fits = some_tokens(6, model->config().n_vocab, 8);
  ASSERT_TRUE(session->set_prompt(fits).is_ok());
  ASSERT_TRUE(session->decode(5).is_ok());
  ASSERT_TRUE(session->decode(6).is_ok());
  EXPECT_EQ(session->n_past(), 8);
  auto full = session->decode(7);
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(session->n_past(), 8);
  auto more = session->prefill(fits);
  ASSERT_FALSE(more.is_ok());
  EXPECT_EQ(more.status().code(), ErrorCode::kOutOfRange);
  // Still usable: truncate and go on.
  session->truncate(4);
  EXPECT_EQ(session->n_past(), 4);
  EXPECT_EQ(session->cache().length(0), 4);
  EXPECT_TRUE(session->decode(9).is_ok());
}

TEST(Session, BadOptionsAndInputsAreErrors) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions bad;
  bad.n_ctx = 0;
  EXPECT_FALSE(Session::create(*model, bad).is_ok());
  bad.n_ctx = 16;
  bad.n_batch = 0;
  EXPECT_FALSE(Session::create(*model, bad).is_ok());

  auto session = make_session(*model);
  EXPECT_EQ(session->set_prompt({}).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<int32_t> bad_id = {1, 5000};
  auto r = session->set_prompt(bad_id);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("5000"), std::string::npos);
  EXPECT_EQ(session->n_past(), 0);
}

TEST(Session, ClearFreesTheCacheBlocks) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.n_ctx = 256;
  options.block_size = 16;
  auto session = make_session(*model, options);
  ASSERT_TRUE(session->set_prompt(some_tokens(40, model->config().n_vocab, 9)).is_ok());
  EXPECT_EQ(session->cache().n_blocks_used(), 3);
  session->truncate(16);
  EXPECT_EQ(session->cache().n_blocks_used(), 1);
  session->clear();
  EXPECT_EQ(session->cache().n_blocks_used(), 0);
  EXPECT_TRUE(session->tokens().empty());
}

}  // namespace
}  // namespace minfer::engine
