// json_object as a grammar: the GBNF of json_object_gbnf, run by the grammar engine, accepts and
// refuses exactly what JsonRecognizer (the hand-written definition, with the same bounds) does,
// byte by byte, on hand-picked documents and on random ones; requests through RequestGrammars get
// one parseable object from random logits, and a grammar together with json_object is an error.
#include "grammar/json_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "grammar/grammar_constraint.h"
#include "grammar/json_constraint.h"
#include "grammar/json_recognizer.h"
#include "grammar/request_grammars.h"
#include "sampling/sampler.h"
#include "test_util.h"

namespace minfer::grammar {
namespace {

class JsonGrammarVsRecognizer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = parse_gbnf(json_object_gbnf(kGenerationJsonOptions));
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    matcher_ = std::make_unique<GrammarMatcher>(g.value(), MatcherLimits{});
  }

  // Feeds both byte by byte: the same bytes accepted, the same completion at each step.
  void expect_same(const std::string& text) {
    JsonRecognizer rec(kGenerationJsonOptions);
    MatchState s;
    ASSERT_EQ(matcher_->initial(s), StepResult::kOk);
    for (size_t i = 0; i < text.size(); ++i) {
      const bool rec_ok = rec.advance(static_cast<uint8_t>(text[i]));
      MatchState next;
      const StepResult r = matcher_->advance(s, static_cast<uint8_t>(text[i]), next);
      ASSERT_NE(r, StepResult::kTooManyStacks) << text;
      ASSERT_EQ(r == StepResult::kOk, rec_ok) << "byte " << i << " of: " << text;
      if (!rec_ok) return;
      s = std::move(next);
      ASSERT_EQ(GrammarMatcher::only_end(s), rec.complete()) << "byte " << i << " of: " << text;
      ASSERT_EQ(GrammarMatcher::can_end(s), rec.complete()) << "byte " << i << " of: " << text;
    }
  }

  std::unique_ptr<GrammarMatcher> matcher_;
};

TEST_F(JsonGrammarVsRecognizer, HandPickedDocuments) {
  const std::vector<std::string> docs = {
      "{}",
      " \n {\"a\": 1}",
      "{\"a\":[1,2.5,-0.1e+10,true,false,null,\"x\"],\"b\":{\"c\":{}}}",
      "{\"s\": \"caf\xC3\xA9 \xE6\xBC\xA2 \xF0\x9F\x98\x80 \\n\\t\\\"\\\\\\/\\b\\f\\r\"}",
      "{\"u\": \"\\u00e9\\uD83D\\uDE00\"}",
      "{\"u\": \"\\uDE00\"}",              // a lone low surrogate
      "{\"u\": \"\\uD83D\\u0041\"}",       // a high surrogate then no low one
      "{\"n\": 012}",                      // leading zero
      "{\"n\": 1.}",                       // no fraction digits
      "{\"n\": 1e123}",                    // three exponent digits
      "{\"n\": 123456789012345678901}",    // 21 integer digits
      "{\"n\": 12345678901234567890}",     // 20
      "{\"n\": 123456789012345}",          // 15 significant digits
      "{\"n\": 1234567890123456}",         // 16
      "{\"n\": -1.23456789012345e-12}",    // 15
      "{\"n\": 1.234567890123456}",        // 16
      "{\"n\": 0.123456789012345}",        // 15 after "0."
      "{\"n\": 0.1234567890123456}",       // 16
      "{\"ws\":                      1}",  // 22 spaces
      "{\"ws\":                    1}",    // 20
      "{\"ws\":\n\n1}",                    // two line breaks
      "{\"ws\":\r\n\t 1}",
      "{\"raw\": \"a\x01\"}",
      "{\"bad\": \"\xC0\x80\"}",      // overlong
      "{\"bad\": \"\xED\xA0\x80\"}",  // surrogate in UTF-8
      "{\"a\" 1}",
      "{\"a\":1,}",
      "[1]",
      "{\"a\":1} ",
      "{\"t\": tru}",
      "{\"t\": nulls}",
  };
  for (const std::string& d : docs) expect_same(d);
}

TEST_F(JsonGrammarVsRecognizer, NestingBound) {
  const int max = kGenerationJsonOptions.max_depth;
  std::string ok = "{\"a\":";
  for (int d = 1; d < max; ++d) ok += "[";
  expect_same(ok + "1");
  std::string deep = ok;
  deep += "[";  // one level too many
  expect_same(deep);
}

TEST_F(JsonGrammarVsRecognizer, RandomDocuments) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]:,\"\\ 0123456789.eE+-abtfnrulu\n\t\xC3\xA9";
  int n_long = 0;
  for (int i = 0; i < 3000; ++i) {
    // A valid start, then random bytes: most documents fail somewhere, at the same byte for both.
    std::string text = (i % 2 == 0) ? "{\"k\": " : "{";
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
    expect_same(text);
    if (n > 30) ++n_long;
  }
  EXPECT_GT(n_long, 100);
}

// What requests get: one compiled grammar per distinct text, json_object and a grammar together
// refused, a bad grammar's line and column.
TEST(RequestGrammars, CompilesOncePerTextAndRefusesBadRequests) {
  MINFER_REQUIRE_TEST_DATA();
  auto file = GgufFile::open(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  RequestGrammars grammars(**tok);
  auto none = grammars.constraint(false, "");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none.value(), nullptr);
  auto both = grammars.constraint(true, "root ::= \"a\"");
  ASSERT_FALSE(both.is_ok());
  EXPECT_NE(both.status().message().find("not both"), std::string::npos);
  auto bad = grammars.constraint(false, "root ::= \"a\"\nb ::= (\"x\"");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("gbnf:2:"), std::string::npos) << bad.status().message();
  auto a = grammars.compile("root ::= \"yes\" | \"no\"");
  auto b = grammars.compile("root ::= \"yes\" | \"no\"");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a.value(), b.value());
  EXPECT_NE(grammars.compile("root ::= \"yes\"").value(), a.value());
  EXPECT_EQ(grammars.json_object(), grammars.json_object());
  auto json = grammars.constraint(true, "");
  ASSERT_TRUE(json.is_ok());
  ASSERT_NE(json.value(), nullptr);
  EXPECT_FALSE(json.value()->complete());
}

// Sampling under the JSON grammar on a synthetic vocabulary from random logits gives one object
// that nlohmann::json parses, and the trie mask equals trying each token.
TEST(JsonGrammar, RandomLogitsGiveOneParseableObject) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  for (const char* p : {"{\"",  "\":",      "\": ",   "\", \"", "\"}", "}}",      "]}",      "[{",
                        "true", "null",     ", ",     ",\n  ",  "\\u", "\\uD83D", "\\uDE00", "\xC3",
                        "\xA9", "\xE2\x82", "\xAC\"", "12",     "0.",  "e+"}) {
    pieces.emplace_back(p);
  }
  std::vector<TokenRole> roles(pieces.size(), TokenRole::kText);
  pieces.emplace_back("");
  roles.push_back(TokenRole::kEndOfGeneration);
  const auto eog = static_cast<int32_t>(pieces.size() - 1);
  auto vocab = std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
  auto grammar = TokenGrammar::compile(json_object_gbnf(kGenerationJsonOptions), vocab);
  ASSERT_TRUE(grammar.is_ok()) << grammar.status().message();
  const int32_t n_vocab = vocab->n_vocab();
  int n_complete = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto c = GrammarConstraint::create(grammar.value()).value();
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(n_vocab));  // [n_vocab]
    std::vector<uint8_t> mask(static_cast<size_t>(n_vocab));  // [n_vocab]
    SamplerParams params;
    params.temperature = 1.0f;
    params.seed = seed;
    Sampler sampler(params, n_vocab);
    std::string text;
    for (int step = 0; step < 400 && !c->complete(); ++step) {
      for (float& l : logits) l = normal(rng);
      // After a while, closing bytes win so that the object ends.
      if (step > 40) {
        for (const char* closer : {"}", "]", "\"", "0"}) {
          logits[static_cast<uint8_t>(closer[0])] += 30.0f;
        }
      }
      logits[static_cast<size_t>(eog)] = 1000.0f;
      c->fill_allowed(mask);
      for (int32_t id = 0; id < n_vocab; ++id) {
        ASSERT_EQ(mask[static_cast<size_t>(id)], c->allows(id) ? 1 : 0) << id << " after " << text;
      }
      Result<int32_t> t = sampler.sample(logits, *c);
      ASSERT_TRUE(t.is_ok()) << t.status().message() << " after: " << text;
      ASSERT_NE(t.value(), eog) << text;
      ASSERT_TRUE(c->accept(t.value()).is_ok());
      sampler.accept(t.value());
      text += vocab->piece(t.value());
    }
    if (!c->complete()) continue;
    ++n_complete;
    EXPECT_TRUE(nlohmann::json::parse(text).is_object()) << text;
  }
  EXPECT_GE(n_complete, 4);
}

}  // namespace
}  // namespace minfer::grammar
