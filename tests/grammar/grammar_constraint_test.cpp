// GrammarConstraint: tokens that split a UTF-8 character across two tokens, masks equal to trying
// each token alone (on a hand-made vocabulary and on Qwen's 151,936 tokens), end-of-generation only
// when the grammar can end, lazy triggers (text and token), the shared mask cache, and an exploding
// grammar that fails instead of hanging.
#include "grammar/grammar_constraint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "grammar/json_constraint.h"
#include "grammar/json_grammar.h"
#include "sampling/sampler.h"
#include "test_util.h"

namespace minfer::grammar {
namespace {

// Pieces by hand: "é" (C3 A9) split as "\xC3" + "\xA9", "漢" (E6 BC A2) as "\xE6" + "\xBC\xA2",
// whole characters, ASCII, markup, and an end-of-generation token (the last id).
struct HandVocab {
  std::shared_ptr<const VocabBytes> vocab;
  int32_t eog = 0;
  int32_t id(std::string_view piece) const {
    for (int32_t i = 0; i < vocab->n_vocab(); ++i) {
      if (vocab->role(i) == TokenRole::kText && vocab->piece(i) == piece) return i;
    }
    ADD_FAILURE() << "no piece " << piece;
    return -1;
  }
};

HandVocab hand_vocab() {
  std::vector<std::string> pieces = {
      "a",        "b",    "ab", "abc",         "\xC3",  "\xA9",   "\xC3\xA9", "\xE6", "\xBC\xA2",
      "\xE6\xBC", "\xA2", "é!", "<tool_call>", "<tool", "_call>", "{",        "}",    " ",
      "x",        "yes",  "no", "y",           "es",    "n",      "o"};
  std::vector<TokenRole> roles(pieces.size(), TokenRole::kText);
  pieces.emplace_back("");
  roles.push_back(TokenRole::kEndOfGeneration);
  HandVocab v;
  v.eog = static_cast<int32_t>(pieces.size() - 1);
  v.vocab = std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
  return v;
}

std::shared_ptr<TokenGrammar> compile(const std::string& gbnf,
                                      std::shared_ptr<const VocabBytes> vocab) {
  auto g = TokenGrammar::compile(gbnf, std::move(vocab));
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  return g.is_ok() ? g.value() : nullptr;
}

std::unique_ptr<GrammarConstraint> constraint(std::shared_ptr<TokenGrammar> g,
                                              GrammarOptions options = {}) {
  auto c = GrammarConstraint::create(std::move(g), std::move(options));
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return std::move(c).value();
}

std::vector<uint8_t> brute_force_mask(const GrammarConstraint& c, int32_t n_vocab) {
  std::vector<uint8_t> mask(static_cast<size_t>(n_vocab));  // [n_vocab]
  for (int32_t id = 0; id < n_vocab; ++id) mask[static_cast<size_t>(id)] = c.allows(id) ? 1 : 0;
  return mask;
}

std::vector<uint8_t> fill(const GrammarConstraint& c, int32_t n_vocab) {
  std::vector<uint8_t> mask(static_cast<size_t>(n_vocab));  // [n_vocab]
  c.fill_allowed(mask);
  return mask;
}

TEST(GrammarConstraint, UtfEightSplitAcrossTwoTokens) {
  const HandVocab v = hand_vocab();
  auto c = constraint(compile("root ::= [é漢]+ \"!\"?", v.vocab));
  const int32_t n = v.vocab->n_vocab();
  // The lead byte of é alone is allowed (a partial character), its continuation alone is not.
  EXPECT_TRUE(c->allows(v.id("\xC3")));
  EXPECT_FALSE(c->allows(v.id("\xA9")));
  EXPECT_FALSE(c->allows(v.eog));
  ASSERT_TRUE(c->accept(v.id("\xC3")).is_ok());
  // Mid-character: only the continuation that completes é; no end.
  EXPECT_TRUE(c->allows(v.id("\xA9")));
  EXPECT_FALSE(c->allows(v.id("\xBC\xA2")));
  EXPECT_FALSE(c->allows(v.id("a")));
  EXPECT_FALSE(c->allows(v.eog));
  EXPECT_EQ(fill(*c, n), brute_force_mask(*c, n));
  ASSERT_TRUE(c->accept(v.id("\xA9")).is_ok());
  EXPECT_TRUE(c->allows(v.eog));
  // 漢 in two tokens, split after its first and after its second byte.
  ASSERT_TRUE(c->accept(v.id("\xE6")).is_ok());
  EXPECT_FALSE(c->allows(v.id("\xA2")));
  ASSERT_TRUE(c->accept(v.id("\xBC\xA2")).is_ok());
  ASSERT_TRUE(c->accept(v.id("\xE6\xBC")).is_ok());
  EXPECT_EQ(fill(*c, n), brute_force_mask(*c, n));
  ASSERT_TRUE(c->accept(v.id("\xA2")).is_ok());
  EXPECT_FALSE(c->complete());
  ASSERT_TRUE(c->accept(v.id("é!")).is_ok());
  EXPECT_TRUE(c->complete());
  const std::vector<uint8_t> mask = fill(*c, n);
  for (int32_t id = 0; id < n; ++id) EXPECT_EQ(mask[static_cast<size_t>(id)], id == v.eog ? 1 : 0);
  // A refused token is an error and leaves the state as it was.
  auto d = constraint(compile("root ::= \"ab\"", v.vocab));
  const Status s = d->accept(v.id("b"));
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("does not continue the grammar"), std::string::npos) << s.message();
  EXPECT_TRUE(d->accept(v.id("a")).is_ok());
  EXPECT_TRUE(d->accept(v.id("b")).is_ok());
  EXPECT_TRUE(d->complete());
}

TEST(GrammarConstraint, EndOfGenerationOnlyWhenTheGrammarCanEnd) {
  const HandVocab v = hand_vocab();
  auto c = constraint(compile("root ::= \"a\"+", v.vocab));
  EXPECT_FALSE(c->allows(v.eog));
  ASSERT_TRUE(c->accept(v.id("a")).is_ok());
  EXPECT_TRUE(c->allows(v.eog));
  EXPECT_FALSE(c->complete());  // more 'a' may follow
  // With end_on_complete off, a finished grammar does not end by itself.
  GrammarOptions keep_going;
  keep_going.end_on_complete = false;
  auto d = constraint(compile("root ::= \"a\"", v.vocab), keep_going);
  ASSERT_TRUE(d->accept(v.id("a")).is_ok());
  EXPECT_FALSE(d->complete());
  EXPECT_TRUE(d->allows(v.eog));
  EXPECT_FALSE(d->allows(v.id("a")));
}

TEST(GrammarConstraint, LazyTriggerText) {
  const HandVocab v = hand_vocab();
  auto g = compile("root ::= \"<tool_call>\" \"{\" [a-z]* \"}\"", v.vocab);
  GrammarOptions options;
  options.trigger_texts = {"<tool_call>"};
  auto c = constraint(g, options);
  const int32_t n = v.vocab->n_vocab();
  // Free text: everything goes.
  EXPECT_FALSE(c->active());
  for (int32_t id = 0; id < n; ++id) EXPECT_TRUE(c->allows(id)) << id;
  ASSERT_TRUE(c->accept(v.id("yes")).is_ok());
  ASSERT_TRUE(c->accept(v.id(" ")).is_ok());
  // The trigger split across two tokens: "<tool" then "_call>".
  ASSERT_TRUE(c->accept(v.id("<tool")).is_ok());
  EXPECT_FALSE(c->active());
  ASSERT_TRUE(c->accept(v.id("_call>")).is_ok());
  EXPECT_TRUE(c->active());
  EXPECT_FALSE(c->allows(v.id("yes")));
  EXPECT_TRUE(c->allows(v.id("{")));
  EXPECT_EQ(fill(*c, n), brute_force_mask(*c, n));
  ASSERT_TRUE(c->accept(v.id("{")).is_ok());
  ASSERT_TRUE(c->accept(v.id("abc")).is_ok());
  ASSERT_TRUE(c->accept(v.id("}")).is_ok());
  EXPECT_TRUE(c->complete());

  // Back to free text after the call when the grammar does not end generation.
  options.end_on_complete = false;
  auto d = constraint(g, options);
  ASSERT_TRUE(d->accept(v.id("<tool_call>")).is_ok());
  EXPECT_TRUE(d->active());
  ASSERT_TRUE(d->accept(v.id("{")).is_ok());
  ASSERT_TRUE(d->accept(v.id("}")).is_ok());
  EXPECT_FALSE(d->complete());
  EXPECT_FALSE(d->active());
  EXPECT_TRUE(d->allows(v.id("yes")));
  ASSERT_TRUE(d->accept(v.id("<tool_call>")).is_ok());
  EXPECT_TRUE(d->active());
}

TEST(GrammarConstraint, LazyTriggerRefusesATokenThatBreaksTheGrammarAfterIt) {
  // "x<tool_call>" is not in this vocabulary, so build one where a token holds the trigger and
  // more.
  std::vector<std::string> pieces = {"hi", "<tool_call>{", "<tool_call>x", "}", "<tool_call>"};
  std::vector<TokenRole> roles(pieces.size(), TokenRole::kText);
  auto vocab = std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
  GrammarOptions options;
  options.trigger_texts = {"<tool_call>"};
  auto c = constraint(compile("root ::= \"<tool_call>{\" \"}\"", vocab), options);
  EXPECT_TRUE(c->allows(0));
  EXPECT_TRUE(c->allows(1));
  EXPECT_FALSE(c->allows(2));
  EXPECT_EQ(fill(*c, vocab->n_vocab()), (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  EXPECT_FALSE(c->accept(2).is_ok());
  ASSERT_TRUE(c->accept(1).is_ok());
  EXPECT_TRUE(c->active());
  ASSERT_TRUE(c->accept(3).is_ok());
  EXPECT_TRUE(c->complete());
}

TEST(GrammarConstraint, LazyTriggerToken) {
  const HandVocab v = hand_vocab();
  GrammarOptions options;
  options.trigger_tokens = {v.id("x")};
  // The trigger token's own text is the grammar's first byte.
  auto c = constraint(compile("root ::= \"x\" (\"yes\" | \"no\")", v.vocab), options);
  ASSERT_TRUE(c->accept(v.id("abc")).is_ok());
  EXPECT_FALSE(c->active());
  ASSERT_TRUE(c->accept(v.id("x")).is_ok());
  EXPECT_TRUE(c->active());
  EXPECT_FALSE(c->allows(v.id("abc")));
  ASSERT_TRUE(c->accept(v.id("no")).is_ok());
  EXPECT_TRUE(c->complete());
}

TEST(GrammarConstraint, RequestsShareTheCachedMask) {
  const HandVocab v = hand_vocab();
  auto g = compile("root ::= (\"a\" | \"b\")* \"x\"", v.vocab);
  auto c1 = constraint(g);
  auto c2 = constraint(g);
  const int32_t n = v.vocab->n_vocab();
  const std::vector<uint8_t> m1 = fill(*c1, n);
  EXPECT_EQ(m1, brute_force_mask(*c1, n));
  // Same state, other request: the same mask (from the cache), and again after moving round the
  // loop back to the same state.
  EXPECT_EQ(fill(*c2, n), m1);
  ASSERT_TRUE(c2->accept(v.id("ab")).is_ok());
  EXPECT_EQ(c2->state(), c1->state());
  EXPECT_EQ(fill(*c2, n), m1);
  ASSERT_TRUE(c2->accept(v.id("x")).is_ok());
  EXPECT_TRUE(c2->complete());
}

TEST(GrammarConstraint, ExplodingGrammarIsAnErrorNotAHang) {
  const HandVocab v = hand_vocab();
  auto c = constraint(compile("root ::= \"x\" root \"y\" | \"x\" root \"b\" | \"a\"", v.vocab));
  Status last;
  int n = 0;
  for (; n < 100; ++n) {
    last = c->accept(v.id("x"));
    if (!last.is_ok()) break;
  }
  EXPECT_LT(n, 20);
  EXPECT_FALSE(last.is_ok());
  EXPECT_NE(last.message().find("parse stacks"), std::string::npos) << last.message();
  // The sampler reports that nothing is allowed rather than spinning.
  std::vector<uint8_t> mask = fill(*c, v.vocab->n_vocab());
  EXPECT_EQ(mask[static_cast<size_t>(v.id("x"))], 0);
}

// A JSON-like string rule nested in two contexts, on tokens that end a string and go on past its
// closing quote, escapes, and UTF-8 split across tokens: the masks made from suffix sets (on) equal
// the full walk (max_suffix_sets 0) and trying each token alone, in every state.
TEST(GrammarConstraint, SuffixSetMasksEqualTheFullWalk) {
  std::vector<std::string> pieces = {
      "a",    "b",        "ab",     "\"",     "\",", "\"}",  "\":",  "a\"",  "a\",\"",
      "\\",   "\\\"",     "\\n",    "\\u",    "00",  "e9",   "00e9", "9\"",  "{",
      "{\"",  "}",        ",",      " ",      ":",   " \"",  "\xC3", "\xA9", "\xC3\xA9",
      "\xE6", "\xBC\xA2", "\xA2\"", "\"\xC3", "x",   "\x01", "b\\",  "\"a",  "\\\\"};
  std::vector<TokenRole> roles(pieces.size(), TokenRole::kText);
  pieces.emplace_back("");
  roles.push_back(TokenRole::kEndOfGeneration);
  auto vocab = std::make_shared<const VocabBytes>(pieces, roles);
  const std::string gbnf =
      "root ::= \"{\" ws string ws \":\" ws (string | obj) ws \"}\"\n"
      "obj ::= \"{\" ws string ws \":\" ws string ws \"}\"\n"
      "string ::= \"\\\"\" char* \"\\\"\"\n"
      "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
      "ws ::= [ ]?\n";
  TokenGrammarOptions off;
  off.max_suffix_sets = 0;
  auto with_sets = constraint(compile(gbnf, vocab));
  auto without = constraint(TokenGrammar::compile(gbnf, vocab, off).value());
  const int32_t n = vocab->n_vocab();
  auto id = [&](std::string_view piece) {
    for (int32_t i = 0; i < n; ++i) {
      if (pieces[static_cast<size_t>(i)] == piece) return i;
    }
    ADD_FAILURE() << "no piece " << piece;
    return int32_t{0};
  };
  // {"ab\n\"é漢\u00e9": {"a": "éb\\"}}
  const std::vector<std::string> text = {"{\"",  "ab",       "\\n", "\\\"", "\xC3", "\xA9",
                                         "\xE6", "\xBC\xA2", "\\u", "00e9", "\":",  " ",
                                         "{",    "\"",       "a",   "\":",  " \"",  "\xC3\xA9",
                                         "b\\",  "\\\"",     "}",   "}"};
  for (size_t i = 0; i <= text.size(); ++i) {
    const std::vector<uint8_t> mask = fill(*with_sets, n);
    EXPECT_EQ(mask, brute_force_mask(*with_sets, n)) << "at token " << i;
    EXPECT_EQ(mask, fill(*without, n)) << "at token " << i;
    if (i == text.size()) break;
    ASSERT_EQ(mask[static_cast<size_t>(id(text[i]))], 1) << "token " << i << " " << text[i];
    ASSERT_TRUE(with_sets->accept(id(text[i])).is_ok());
    ASSERT_TRUE(without->accept(id(text[i])).is_ok());
  }
  EXPECT_TRUE(with_sets->complete());

  // Other grammars on the same vocabulary: one with the same string rule (it reuses the sets made
  // above) and one whose string refuses 'b' (it must not).
  const std::string string_rules = gbnf.substr(gbnf.find("string ::="));
  // The same rules, but the class refuses 'b' where it refused '\\' (same shape, other text).
  std::string refuses_b = string_rules;
  refuses_b.replace(refuses_b.find("[^\"\\\\"), 5, "[^\"b");
  struct Other {
    std::string gbnf;
    std::vector<std::string> text;
  };
  const std::vector<Other> others = {
      {"root ::= \"{\" string (\",\" string)* \"}\"\n" + string_rules,
       {"{\"", "ab", "a\",\"", "a", "\xC3\xA9", "\"", "}"}},
      {"root ::= \"{\" string \":\" string \"}\"\n" + refuses_b,
       {"{\"", "a", "\":", "\"", "a", "\"", "}"}},
  };
  for (const Other& other : others) {
    auto c = constraint(compile(other.gbnf, vocab));
    for (size_t i = 0; i <= other.text.size(); ++i) {
      EXPECT_EQ(fill(*c, n), brute_force_mask(*c, n)) << other.gbnf << " at token " << i;
      if (i == other.text.size()) break;
      ASSERT_TRUE(c->accept(id(other.text[i])).is_ok()) << other.gbnf << " token " << i;
    }
    EXPECT_TRUE(c->complete()) << other.gbnf;
  }
}

std::unique_ptr<Tokenizer> qwen_tokenizer() {
  auto file = GgufFile::open(test::test_data_path("models/qwen3-vocab.gguf"));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  return tok.is_ok() ? std::move(tok).value() : nullptr;
}

// Qwen's 151,936 tokens: in every state of a reply the trie-walk mask equals trying each token.
TEST(GrammarConstraint, QwenVocabularyMasksEqualBruteForce) {
  MINFER_REQUIRE_TEST_DATA();
  if (!std::filesystem::exists(test::test_data_path("models/qwen3-vocab.gguf"))) {
    MINFER_SKIP_OR_FAIL("needs " << test::test_data_path("models/qwen3-vocab.gguf"));
  }
  const std::unique_ptr<Tokenizer> tokenizer = qwen_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const auto vocab = VocabBytes::from_tokenizer(*tokenizer, MarkupTokens::kText);
  ASSERT_EQ(vocab->n_vocab(), 151936);
  struct Case {
    std::string gbnf;
    std::string reply;
  };
  const std::vector<Case> cases = {
      {"root ::= \"<tool_call>\\n\" obj \"\\n</tool_call>\"\n"
       "obj ::= \"{\\\"name\\\": \\\"\" [a-z_]+ \"\\\", \\\"arguments\\\": {\\\"city\\\": \\\"\" "
       "[^\"]* \"\\\"}}\"",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich 東京\"}}\n"
       "</tool_call>"},
      {"root ::= line+\nline ::= [A-Z] [a-z ,é]* [.!?] \"\\n\"", "Hello there, café.\nBye!\n"},
      {"root ::= (\"yes\" | \"no\") \" \" [0-9]{1,3} \" \" .{0,5}", "yes 42 漢字😀"},
      // A tool call's arguments: strings in several properties.
      {"root ::= \"{\" ws \"\\\"city\\\"\" ws \":\" ws string ws \",\" ws "
       "\"\\\"days\\\"\" ws \":\" ws [0-9]+ ws \",\" ws \"\\\"notes\\\"\" ws \":\" ws string ws "
       "\"}\"\n"
       "string ::= \"\\\"\" ([^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" "
       "[0-9a-fA-F]{4}))* \"\\\"\"\nws ::= [ \\t\\n]{0,20}",
       "{\"city\": \"São Paulo\", \"days\": 5, \"notes\": \"a \\\"big\\\" 東京 \\u00e9\\n\"}"},
      // JSON strings in several contexts (suffix sets): escapes, UTF-8, tokens past the quote.
      {json_object_gbnf(kGenerationJsonOptions),
       "{\"a\": \"x\\\"y\\\\ \\u00e9 \\n São 東京😀\", \"b\": [\"\", \"q\"], "
       "\"c\": {\"d\": \"—\"}}"},
  };
  for (const Case& k : cases) {
    auto g = compile(k.gbnf, vocab);
    ASSERT_NE(g, nullptr);
    auto c = constraint(g);
    const std::vector<int32_t> ids = tokenizer->encode(k.reply, false, true);
    for (size_t i = 0; i <= ids.size(); ++i) {
      const std::vector<uint8_t> mask = fill(*c, vocab->n_vocab());
      { ASSERT_EQ(mask, brute_force_mask(*c, vocab->n_vocab())) << k.gbnf << " at token " << i; }
      if (i == ids.size()) break;
      ASSERT_EQ(mask[static_cast<size_t>(ids[i])], 1) << k.gbnf << " token " << i;
      ASSERT_TRUE(c->accept(ids[i]).is_ok());
    }
    EXPECT_TRUE(GrammarMatcher::can_end(c->state())) << k.gbnf;
  }
}

}  // namespace
}  // namespace minfer::grammar
