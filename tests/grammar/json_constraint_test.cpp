// JSON-constrained sampling: the trie-walk mask equals trying every token on its own; sampling on
// seeded random logits (greedy and temperature 1, on a synthetic vocabulary and on real BPE and
// SentencePiece vocabularies) always yields text that nlohmann::json parses as one object, with
// control tokens and end-of-generation refused until the object closes and nothing else after it,
// on Qwen's 151,936-token vocabulary too. What a mask costs is measured in
// bench/json_constraint.cpp, not here.
#include "grammar/json_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "sampling/sampler.h"
#include "sampling_test_util.h"
#include "test_util.h"
#include "tokenizer/streaming_decoder.h"

namespace minfer::grammar {
namespace {

// A vocabulary that stresses the walk: every single byte, JSON-ish multi-byte pieces (shared
// prefixes, pieces that close and reopen, pieces ending mid-UTF-8 character), an end-of-generation
// token, a control token and an empty one.
std::shared_ptr<const VocabBytes> synthetic_vocab(int32_t& eog, int32_t& control) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  const std::vector<std::string> fixed = {
      "{\"",      "\":",      "\": ",      "\", \"",   "\"}",     "}}",           "]}",   "[{",
      "{}",       "[]",       "true",      "false",    "null",    "tru",          "nul",  ", ",
      ",\n  ",    "\n",       "  ",        "    ",     "0.",      ".5",           "e+",   "E-",
      "12",       "-1",       "00",        "\\u",      "\\uD83D", "\\uDE00",      "\\n",  "\\\"",
      "\xC3",     "\xA9",     "\xC3\xA9",  "\xE2\x82", "\xAC\"",  "\xF0\x9F\x98", "\x80", "caf\xC3",
      "key",      "\"key\"",  "\"key\": ", "}, {",     "], [",    "\"]",          "1}",   "0}",
      "\"a\":1}", "{\"a\":[", "{}}",       "\t",       "\r\n"};
  pieces.insert(pieces.end(), fixed.begin(), fixed.end());
  // Random pieces from a JSON alphabet.
  std::mt19937 rng(99);
  const std::string alphabet = "{}[]:,\"\\ 0123456789.eE+-abctfnrul\n";
  for (int i = 0; i < 1500; ++i) {
    std::string p;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) p += alphabet[rng() % alphabet.size()];
    pieces.push_back(p);
  }
  std::vector<TokenRole> roles(pieces.size(), TokenRole::kText);
  eog = static_cast<int32_t>(pieces.size());
  pieces.emplace_back("");
  roles.push_back(TokenRole::kEndOfGeneration);
  control = static_cast<int32_t>(pieces.size());
  pieces.emplace_back("{}");  // a control token whose text happens to be valid JSON
  roles.push_back(TokenRole::kNever);
  pieces.emplace_back("");  // an empty text token: refused, it would make no progress
  roles.push_back(TokenRole::kText);
  return std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
}

// The mask by trying each token alone, the definition fill_allowed must equal.
std::vector<uint8_t> brute_force_mask(const JsonConstraint& c, int32_t n_vocab) {
  std::vector<uint8_t> mask(static_cast<size_t>(n_vocab));
  for (int32_t id = 0; id < n_vocab; ++id) mask[static_cast<size_t>(id)] = c.allows(id) ? 1 : 0;
  return mask;
}

// Token ids whose bytes are exactly one of `texts`.
std::vector<int32_t> find_pieces(const VocabBytes& vocab, const std::vector<std::string>& texts) {
  std::vector<int32_t> out;
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    if (vocab.role(id) != TokenRole::kText) continue;
    for (const std::string& t : texts) {
      if (vocab.piece(id) == t) out.push_back(id);
    }
  }
  return out;
}

struct Generated {
  std::string text;
  std::vector<int32_t> ids;
  bool complete = false;
  int64_t n_resampled = 0;
};

// Samples under the constraint from seeded random logits. After `free_steps` tokens, tokens that
// close things ('}', ']', '"', '0', ':') get a large bias so the object finishes; before that the
// draw roams the whole vocabulary. `boost` tokens (end-of-generation, control) always get the
// highest logit, so only the constraint keeps them out. Stops when the object is complete (as the
// scheduler does) or after max_steps.
Generated generate_json(const std::shared_ptr<const VocabBytes>& vocab, SamplerParams params,
                        uint64_t logits_seed, int free_steps, int max_steps,
                        const std::vector<int32_t>& closers, const std::vector<int32_t>& boost) {
  const int32_t n_vocab = vocab->n_vocab();
  Sampler sampler(params, n_vocab);
  JsonConstraint json(vocab);
  std::mt19937_64 rng(logits_seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n_vocab));  // [n_vocab]
  Generated out;
  for (int step = 0; step < max_steps; ++step) {
    for (float& l : logits) l = normal(rng);
    if (step >= free_steps) {
      for (const int32_t id : closers) logits[static_cast<size_t>(id)] += 30.0f;
    }
    for (const int32_t id : boost) logits[static_cast<size_t>(id)] = 1000.0f;
    Result<int32_t> token = sampler.sample(logits, json);
    EXPECT_TRUE(token.is_ok()) << token.status().message();
    if (!token.is_ok()) break;
    EXPECT_EQ(vocab->role(token.value()), TokenRole::kText)
        << "step " << step << ": only text tokens may come before the object closes";
    EXPECT_TRUE(json.accept(token.value()).is_ok());
    sampler.accept(token.value());
    out.ids.push_back(token.value());
    out.text += vocab->piece(token.value());
    if (json.complete()) {
      out.complete = true;
      break;
    }
  }
  out.n_resampled = sampler.n_resampled();
  return out;
}

void expect_one_object(const Generated& g) {
  ASSERT_TRUE(g.complete) << "did not close: " << g.text;
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(g.text);
  } catch (const nlohmann::json::exception& e) {
    FAIL() << e.what() << "\n" << g.text;
  }
  EXPECT_TRUE(parsed.is_object()) << g.text;
}

TEST(JsonConstraint, MaskEqualsTryingEveryTokenAlone) {
  int32_t eog = 0;
  int32_t control = 0;
  const auto vocab = synthetic_vocab(eog, control);
  const std::vector<int32_t> closers = find_pieces(*vocab, {"}", "]", "\"", "0", ":"});
  int n_states = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const SamplerParams params = test::untruncated_sampling(seed);
    // Replay the generation, checking the mask in every state on the way.
    const Generated g = generate_json(vocab, params, seed * 7, 40, 400, closers, {});
    JsonConstraint json(vocab);
    std::vector<uint8_t> mask(static_cast<size_t>(vocab->n_vocab()));  // [n_vocab]
    for (const int32_t id : g.ids) {
      json.fill_allowed(mask);
      ASSERT_EQ(mask, brute_force_mask(json, vocab->n_vocab())) << "after: " << g.text;
      EXPECT_EQ(mask[static_cast<size_t>(control)], 0);
      EXPECT_EQ(mask[static_cast<size_t>(eog)], json.complete() ? 1 : 0);
      ASSERT_TRUE(json.accept(id).is_ok());
      ++n_states;
    }
    // Complete: end-of-generation is the only token left.
    json.fill_allowed(mask);
    if (json.complete()) {
      for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
        EXPECT_EQ(mask[static_cast<size_t>(id)], id == eog ? 1 : 0) << id;
      }
    }
  }
  EXPECT_GT(n_states, 300);
}

TEST(JsonConstraint, RandomLogitsAlwaysGiveOneParseableObject) {
  int32_t eog = 0;
  int32_t control = 0;
  const auto vocab = synthetic_vocab(eog, control);
  const std::vector<int32_t> closers = find_pieces(*vocab, {"}", "]", "\"", "0", ":"});
  int64_t n_resampled = 0;
  int64_t n_tokens = 0;
  for (const float temperature : {0.0f, 0.7f, 1.0f, 1.5f}) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      SamplerParams params = test::untruncated_sampling(seed);
      params.temperature = temperature;
      params.top_k = seed % 2 == 0 ? 0 : 40;
      const Generated g =
          generate_json(vocab, params, seed * 1000 + 17, 60, 2000, closers, {eog, control});
      SCOPED_TRACE(testing::Message() << "temperature " << temperature << " seed " << seed);
      expect_one_object(g);
      n_resampled += g.n_resampled;
      n_tokens += static_cast<int64_t>(g.ids.size());
    }
  }
  // The boosted end-of-generation and control tokens won the unconstrained draw every time, so
  // every token went through the masked second pass.
  EXPECT_EQ(n_resampled, n_tokens);
}

TEST(JsonConstraint, AcceptRefusesADisallowedTokenAndKeepsTheState) {
  int32_t eog = 0;
  int32_t control = 0;
  const auto vocab = synthetic_vocab(eog, control);
  JsonConstraint json(vocab);
  const int32_t open = find_pieces(*vocab, {"{\""})[0];
  const int32_t close = find_pieces(*vocab, {"}"})[0];
  EXPECT_FALSE(json.allows(close));
  const Status st = json.accept(close);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("[grammar]"), std::string::npos);
  EXPECT_FALSE(json.accept(eog).is_ok());
  EXPECT_FALSE(json.accept(control).is_ok());
  EXPECT_TRUE(json.accept(open).is_ok());  // the state did not move: '{"' is still fine
  EXPECT_FALSE(json.allows(-1));
  EXPECT_FALSE(json.allows(vocab->n_vocab()));
}

TEST(JsonConstraint, AConstraintThatAllowsNothingIsAnErrorNotAHang) {
  // Only the end-of-generation token and '[': no token can start an object.
  std::vector<std::string> pieces = {"[", ""};
  std::vector<TokenRole> roles = {TokenRole::kText, TokenRole::kEndOfGeneration};
  const auto vocab = std::make_shared<const VocabBytes>(pieces, roles);
  JsonConstraint json(vocab);
  Sampler sampler(SamplerParams{}, 2);
  const std::vector<float> logits = {1.0f, 2.0f};
  const Result<int32_t> t = sampler.sample(logits, json);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("allows no token"), std::string::npos);
}

// Real vocabularies: byte-level BPE (Qwen2 tiny, 1000 tokens) and SentencePiece with byte
// fallback (stories260K, 512 tokens). What the server streams (StreamingDecoder) is the pieces
// joined, and it parses.
void real_vocab_round(const std::string& model) {
  auto file = GgufFile::open(test::test_data_path(model));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  const Tokenizer& tokenizer = **tok;
  const auto vocab = VocabBytes::from_tokenizer(tokenizer);
  const std::vector<int32_t> closers = find_pieces(*vocab, {"}", "]", "\"", "0", ":"});
  ASSERT_GE(closers.size(), 5u);
  std::vector<int32_t> boost(tokenizer.eog_ids().begin(), tokenizer.eog_ids().end());
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (tokenizer.token_type(id) == TokenType::kControl) boost.push_back(id);
  }
  for (const float temperature : {0.0f, 1.0f}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      SamplerParams params;
      params.temperature = temperature;
      params.seed = seed;
      const Generated g = generate_json(vocab, params, seed, 50, 2000, closers, boost);
      SCOPED_TRACE(testing::Message()
                   << model << " temperature " << temperature << " seed " << seed);
      expect_one_object(g);
      StreamingDecoder decoder(tokenizer);
      std::string streamed;
      for (const int32_t id : g.ids) streamed += decoder.push(id);
      EXPECT_EQ(decoder.pending_bytes(), 0u);
      streamed += decoder.flush();
      EXPECT_EQ(streamed, g.text);
    }
  }
}

TEST(JsonConstraint, RealVocabulariesGiveParseableObjects) {
  MINFER_REQUIRE_TEST_DATA();
  real_vocab_round("models/qwen2-tiny-f32.gguf");
  real_vocab_round("models/stories260K.gguf");
}

// Qwen's 151,936-token vocabulary: the mask is right in every state of a generated document.
TEST(JsonConstraint, QwenVocabularyMaskInEveryState) {
  MINFER_REQUIRE_TEST_DATA();
  auto file = GgufFile::open(test::test_data_path("models/qwen3-vocab.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  const Tokenizer& tokenizer = **tok;
  const auto vocab = VocabBytes::from_tokenizer(tokenizer);
  ASSERT_EQ(vocab->n_vocab(), 151936);

  // A realistic reply, tokenized as the model would write it: keys, prose in strings (with
  // non-ASCII), numbers, nesting, pretty-printing.
  const std::string reply =
      "{\n  \"name\": \"Whiskers\",\n  \"species\": \"cat\",\n  \"age\": 4,\n  \"weight_kg\": "
      "4.25,\n  \"indoor\": true,\n  \"owner\": null,\n  \"description\": \"A curious tabby "
      "who naps in the sun and chases the caf\u00e9's mice \u2014 na\u00efve but brave.\",\n"
      "  \"favourite_foods\": [\"tuna\", \"chicken\", \"cr\u00e8me fra\u00eeche\"],\n  "
      "\"vaccinations\": [{\"name\": \"rabies\", \"year\": 2023}, {\"name\": \"FVRCP\", "
      "\"year\": 2024}],\n  \"\u540d\u524d\": \"\u30bf\u30de\"\n}";
  ASSERT_TRUE(nlohmann::json::parse(reply).is_object());
  const std::vector<int32_t> ids = tokenizer.encode(reply, false, false);
  Generated g;
  g.ids = ids;
  for (const int32_t id : ids) g.text += vocab->piece(id);
  ASSERT_EQ(g.text, reply);

  // Replay: the mask against brute force in some states, and the next token allowed in all.
  JsonConstraint json(vocab);
  std::vector<uint8_t> mask(static_cast<size_t>(vocab->n_vocab()));  // [n_vocab]
  for (size_t i = 0; i < g.ids.size(); ++i) {
    json.fill_allowed(mask);
    if (i % 8 == 0) {
      ASSERT_EQ(mask, brute_force_mask(json, vocab->n_vocab())) << g.text;
    }
    ASSERT_EQ(mask[static_cast<size_t>(g.ids[i])], 1) << i;
    ASSERT_TRUE(json.allows(g.ids[i])) << i;
    ASSERT_TRUE(json.accept(g.ids[i]).is_ok());
  }
  EXPECT_TRUE(json.complete());

  // A sampled object too (random logits roaming the whole vocabulary first).
  const std::vector<int32_t> closers = find_pieces(*vocab, {"}", "]", "\"", "0", ":"});
  SamplerParams params;
  params.temperature = 1.0f;
  params.seed = 5;
  expect_one_object(generate_json(vocab, params, 5, 30, 1000, closers, {}));
}

}  // namespace
}  // namespace minfer::grammar
