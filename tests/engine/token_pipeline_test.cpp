// The token pipeline both generation loops drive: stop strings held back across pieces and
// tokens, an end-of-generation token ends unprinted, an unfinished UTF-8 character flushed as
// U+FFFD may still complete a stop string, a complete constraint ends as eog, the token limit,
// and the logprobs of the model's distribution.
#include "engine/token_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf_file.h"
#include "sampling/log_softmax.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

// --- StopMatcher --------------------------------------------------------------------------------

TEST(StopMatcher, WithoutStopsEverythingPassesAtOnce) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello"), "hello");
  EXPECT_EQ(m.push(" world"), " world");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackAPossibleStartUntilItIsDecided) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("abc<"), "abc");
  EXPECT_EQ(m.push("/"), "");
  EXPECT_EQ(m.push("x"), "</x");  // not the stop after all
  EXPECT_EQ(m.push("<"), "");
  EXPECT_EQ(m.flush(), "<");  // the end releases what was held
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, AStopSplitAcrossPiecesIsNeverEmitted) {
  StopMatcher m({"User:"});
  std::string out;
  for (const char* piece : {"Sure", ". Us", "e", "r", ":", " more"}) out += m.push(piece);
  out += m.flush();
  EXPECT_EQ(out, "Sure. ");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "User:");
  EXPECT_EQ(m.push("after"), "");
}

TEST(StopMatcher, TheEarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(m.push("hello world"), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, AStopAtTheVeryStartEmitsNothing) {
  StopMatcher m({"\n\n", ""});
  EXPECT_EQ(m.push("\n"), "");
  EXPECT_EQ(m.push("\nrest"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, OverlappingPrefixesKeepTheLongestCandidate) {
  // "aab": after "aa" both "a" and "aa" could start a match.
  StopMatcher m({"aab"});
  EXPECT_EQ(m.push("xaa"), "x");
  EXPECT_EQ(m.push("a"), "a");  // "aaa": only the last "aa" can still start "aab"
  EXPECT_EQ(m.push("b"), "");
  EXPECT_TRUE(m.stopped());
}

// --- TokenPipeline on stories260K's vocabulary ---------------------------------------------------

const std::string kFffd = "\xEF\xBF\xBD";

// stories260K: a SentencePiece vocabulary with one <0xNN> token per byte, so any text can be
// produced token by token, and multi-byte characters split across tokens.
struct Vocab {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;

  int32_t byte(int b) const { return tokenizer->find_token(fmt::format("<0x{:02X}>", b)); }
  int32_t n_vocab() const { return tokenizer->n_vocab(); }
};

Vocab load_vocab() {
  Vocab v;
  auto file = GgufFile::open(test::test_data_path("models/stories260K.gguf"));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return v;
  v.file = std::move(file).value();
  auto tok = Tokenizer::from_gguf(*v.file);
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  if (tok.is_ok()) v.tokenizer = std::move(tok).value();
  return v;
}

TokenPipelineOptions greedy_options() {
  TokenPipelineOptions o;
  o.sampling.temperature = 0.0f;
  return o;
}

// Logits [n_vocab] whose argmax is `token`.
std::vector<float> pick(const Vocab& v, int32_t token) {
  std::vector<float> logits(static_cast<size_t>(v.n_vocab()), 0.0f);
  logits[static_cast<size_t>(token)] = 10.0f;
  return logits;
}

TokenStep next_ok(TokenPipeline& p, const Vocab& v, int32_t token) {
  Result<TokenStep> step = p.next(pick(v, token));
  EXPECT_TRUE(step.is_ok()) << step.status().message();
  return step.is_ok() ? std::move(step).value() : TokenStep{};
}

// Everything the end of generation released.
void expect_ending(const TokenEnding& end, FinishReason finish, const std::string& stop,
                   const std::string& flushed, const std::string& held) {
  EXPECT_EQ(end.finish, finish);
  EXPECT_EQ(end.stop, stop);
  EXPECT_EQ(end.flushed, flushed);
  EXPECT_EQ(end.held, held);
}

TEST(TokenPipeline, AStopStringSplitAcrossTokensIsNeverEmitted) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  TokenPipelineOptions o = greedy_options();
  o.stops = {"AB"};
  TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
  TokenStep s = next_ok(p, v, v.byte('x'));
  EXPECT_EQ(s.sampled.token, v.byte('x'));
  EXPECT_EQ(s.text, "x");
  EXPECT_FALSE(s.finish.has_value());
  s = next_ok(p, v, v.byte('A'));
  EXPECT_EQ(s.text, "");  // may start the stop: held back
  EXPECT_FALSE(s.finish.has_value());
  s = next_ok(p, v, v.byte('B'));
  EXPECT_EQ(s.text, "");
  ASSERT_TRUE(s.finish.has_value());
  EXPECT_EQ(*s.finish, FinishReason::kStop);
  expect_ending(p.finish(*s.finish), FinishReason::kStop, "AB", "", "");
  EXPECT_EQ(p.n_generated(), 3);
}

TEST(TokenPipeline, AnEndOfGenerationTokenEndsUnprintedAndTheEndReleasesWhatWasHeld) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  const int32_t eos = v.tokenizer->eos_id();
  ASSERT_TRUE(v.tokenizer->is_eog(eos));
  TokenPipelineOptions o = greedy_options();
  o.stops = {"AB"};
  TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
  EXPECT_EQ(next_ok(p, v, v.byte('A')).text, "");
  const TokenStep s = next_ok(p, v, eos);
  EXPECT_EQ(s.sampled.token, eos);
  EXPECT_EQ(s.text, "");
  ASSERT_TRUE(s.finish.has_value());
  EXPECT_EQ(*s.finish, FinishReason::kEog);
  // "A" was not a stop after all.
  expect_ending(p.finish(*s.finish), FinishReason::kEog, "", "", "A");
}

TEST(TokenPipeline, AnUnfinishedCharacterFlushesAsReplacementAndMayCompleteAStop) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  {
    TokenPipelineOptions o = greedy_options();
    o.stops = {"x" + kFffd};
    TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
    EXPECT_EQ(next_ok(p, v, v.byte('a')).text, "a");
    EXPECT_EQ(next_ok(p, v, v.byte('x')).text, "");
    const TokenStep s = next_ok(p, v, v.byte(0xE4));  // the first byte of 中
    EXPECT_EQ(s.text, "");
    EXPECT_FALSE(s.finish.has_value());
    expect_ending(p.finish(FinishReason::kLength), FinishReason::kStop, "x" + kFffd, "", "");
  }
  {
    // Without such a stop the U+FFFD comes out; what may still start a stop comes after it.
    TokenPipelineOptions o = greedy_options();
    o.stops = {"AB", kFffd + "C"};
    TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
    EXPECT_EQ(next_ok(p, v, v.byte('A')).text, "");
    EXPECT_EQ(next_ok(p, v, v.byte(0xE4)).text, "");
    expect_ending(p.finish(FinishReason::kContext), FinishReason::kContext, "", "A", kFffd);
  }
}

// Allows exactly one sequence of tokens, then is complete.
class FixedSequence : public TokenConstraint {
 public:
  explicit FixedSequence(std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {}
  bool allows(int32_t token) const override {
    return next_ < tokens_.size() && tokens_[next_] == token;
  }
  void fill_allowed(std::span<uint8_t> allowed) const override {
    std::fill(allowed.begin(), allowed.end(), uint8_t{0});
    if (next_ < tokens_.size()) allowed[static_cast<size_t>(tokens_[next_])] = 1;
  }
  Status accept(int32_t token) override {
    if (!allows(token)) return make_error(ErrorCode::kInvalidArgument, "[test] {}", token);
    ++next_;
    return Status::ok();
  }
  bool complete() const override { return next_ == tokens_.size(); }

 private:
  std::vector<int32_t> tokens_;
  size_t next_ = 0;
};

TEST(TokenPipeline, AConstraintChoosesTheTokensAndEndsAsEogWhenComplete) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  FixedSequence constraint({v.byte('o'), v.byte('k')});
  TokenPipelineOptions o = greedy_options();
  o.constraint = &constraint;
  TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
  TokenStep s = next_ok(p, v, v.byte('z'));  // the model wants 'z': not allowed
  EXPECT_EQ(s.sampled.token, v.byte('o'));
  EXPECT_EQ(s.text, "o");
  EXPECT_FALSE(s.finish.has_value());
  s = next_ok(p, v, v.byte('k'));
  EXPECT_EQ(s.text, "k");
  ASSERT_TRUE(s.finish.has_value());
  EXPECT_EQ(*s.finish, FinishReason::kEog);  // without sampling the eog token
  EXPECT_EQ(p.finish(*s.finish).finish, FinishReason::kEog);

  // A constraint that allows nothing more is an error, and nothing is counted.
  Result<TokenStep> none = p.next(pick(v, v.byte('z')));
  EXPECT_FALSE(none.is_ok());
  EXPECT_EQ(p.n_generated(), 2);
}

TEST(TokenPipeline, TheTokenLimitEndsAsLength) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  TokenPipelineOptions o = greedy_options();
  o.max_tokens = 2;
  TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
  EXPECT_FALSE(p.at_limit());
  EXPECT_FALSE(next_ok(p, v, v.byte('a')).finish.has_value());
  const TokenStep s = next_ok(p, v, v.byte('b'));
  EXPECT_EQ(s.text, "b");
  ASSERT_TRUE(s.finish.has_value());
  EXPECT_EQ(*s.finish, FinishReason::kLength);
  EXPECT_TRUE(p.at_limit());

  o.max_tokens = 0;
  EXPECT_TRUE(TokenPipeline(*v.tokenizer, v.n_vocab(), o, {}).at_limit());
}

TEST(TokenPipeline, LogprobsAreTheModelsLogSoftmaxMostLikelyFirst) {
  MINFER_REQUIRE_TEST_DATA();
  const Vocab v = load_vocab();
  ASSERT_NE(v.tokenizer, nullptr);
  std::vector<float> logits(static_cast<size_t>(v.n_vocab()), 0.0f);  // [n_vocab]
  const int32_t a = v.byte('a');
  const int32_t b = v.byte('b');
  const int32_t c = v.byte('c');
  logits[static_cast<size_t>(c)] = 3.0f;
  logits[static_cast<size_t>(b)] = 2.0f;  // a tie: the lower id first
  logits[static_cast<size_t>(a)] = 2.0f;
  const double log_z = log_normalizer(logits);
  EXPECT_NEAR(log_z, std::log(std::exp(3.0) + 2 * std::exp(2.0) + (v.n_vocab() - 3)), 1e-12);

  TokenPipelineOptions o = greedy_options();
  o.top_logprobs = 3;
  TokenPipeline p(*v.tokenizer, v.n_vocab(), o, {});
  Result<TokenStep> s = p.next(logits);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->sampled.token, c);
  EXPECT_EQ(s->sampled.logprob, static_cast<float>(3.0 - log_z));
  ASSERT_EQ(s->sampled.top.size(), 3u);
  EXPECT_EQ(s->sampled.top[0].token, c);
  EXPECT_EQ(s->sampled.top[0].logprob, s->sampled.logprob);
  EXPECT_EQ(s->sampled.top[1].token, std::min(a, b));
  EXPECT_EQ(s->sampled.top[2].token, std::max(a, b));
  EXPECT_EQ(s->sampled.top[1].logprob, static_cast<float>(2.0 - log_z));

  // Not asked for: none computed.
  TokenPipeline q(*v.tokenizer, v.n_vocab(), greedy_options(), {});
  Result<TokenStep> t = q.next(logits);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->sampled.token, c);
  EXPECT_EQ(t->sampled.logprob, 0.0f);
  EXPECT_TRUE(t->sampled.top.empty());
}

TEST(FinishReason, NamesAndSentences) {
  EXPECT_STREQ(finish_reason_name(FinishReason::kEog), "eog");
  EXPECT_STREQ(finish_reason_name(FinishReason::kCancelled), "cancelled");
  EXPECT_STREQ(finish_reason_text(FinishReason::kLength), "token limit (-n) reached");
  EXPECT_STREQ(finish_reason_text(FinishReason::kContext), "context full");
}

}  // namespace
}  // namespace minfer::engine
