// Pieces of the tokenizer on their own: UTF-8 helpers, the pre-tokenizer's llama.cpp quirks, the
// two BPE merge loops, metadata errors, BOS/EOS/EOG handling and special-token parsing.
#include <gtest/gtest.h>

#include <random>

#include "gguf/gguf_writer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace minfer::test {
namespace {

using tokenizer::BpeModel;
using tokenizer::BpeScratch;
using tokenizer::pre_tokenizer_spec;
using tokenizer::PreTokenizer;

TEST(Utf8, ValidSequenceLength) {
  using utf8::valid_sequence_length;
  EXPECT_EQ(valid_sequence_length("a"), 1u);
  EXPECT_EQ(valid_sequence_length("\xC3\xA9"), 2u);
  EXPECT_EQ(valid_sequence_length("\xE4\xB8\xAD"), 3u);
  EXPECT_EQ(valid_sequence_length("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(valid_sequence_length("\xC3"), 0u);              // cut short
  EXPECT_EQ(valid_sequence_length("\xC0\x80"), 0u);          // overlong
  EXPECT_EQ(valid_sequence_length("\xE0\x80\x80"), 0u);      // overlong
  EXPECT_EQ(valid_sequence_length("\xED\xA0\x80"), 0u);      // surrogate
  EXPECT_EQ(valid_sequence_length("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(valid_sequence_length("\x80"), 0u);              // stray continuation
  EXPECT_EQ(valid_sequence_length("\xFF"), 0u);
  EXPECT_TRUE(utf8::is_valid("plain ASCII text that is long enough for the fast path"));
  EXPECT_TRUE(utf8::is_valid("mixed \xE4\xB8\xAD and \xF0\x9F\x98\x80 text"));
  EXPECT_FALSE(utf8::is_valid("sixteen ascii by\xFF"));
}

TEST(Utf8, NormalizeLikeLlama) {
  std::string bpe, match;
  // Each undecodable byte becomes U+FFFD; overlongs collapse; surrogates survive for BPE only.
  utf8::normalize_like_llama(
      "a\xFF"
      "b\xC3",
      bpe, match);
  EXPECT_EQ(bpe,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(match, bpe);
  utf8::normalize_like_llama("\xC1\x81", bpe, match);  // overlong 'A'
  EXPECT_EQ(bpe, "A");
  utf8::normalize_like_llama("x\xED\xA0\x80y", bpe, match);
  EXPECT_EQ(bpe, "x\xED\xA0\x80y");
  EXPECT_EQ(match, "x\xEE\x80\x80y");
  EXPECT_EQ(bpe.size(), match.size());
}

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  auto spec = pre_tokenizer_spec(pre);
  EXPECT_TRUE(spec.is_ok()) << spec.status().message();
  auto pt = PreTokenizer::create(*spec);
  EXPECT_TRUE(pt.is_ok()) << pt.status().message();
  std::vector<std::string_view> words;
  (*pt)->split(text, words);
  return {words.begin(), words.end()};
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(split("qwen2", "Hello world 2024!!"),
            (Words{"Hello", " world", " ", "2", "0", "2", "4", "!!"}));
  EXPECT_EQ(split("qwen2", "I'm  here\n\n  x"),
            (Words{"I", "'m", " ", " here", "\n\n", " ", " x"}));
}

// Qwen3.5's split keeps combining marks (\p{M}) with their letters, where Qwen2's splits them
// off: a decomposed é (e + U+0301) and the Devanagari syllable कि (U+0915 + the vowel sign U+093F).
TEST(PreTokenizer, Qwen35KeepsCombiningMarksWithTheirLetters) {
  const std::string text = "e\xcc\x81t\xc3\xa9 \xe0\xa4\x95\xe0\xa4\xbf 12";
  EXPECT_EQ(split("qwen35", text),
            (Words{"e\xcc\x81t\xc3\xa9", " \xe0\xa4\x95\xe0\xa4\xbf", " ", "1", "2"}));
  EXPECT_EQ(split("qwen2", text),
            (Words{"e", "\xcc\x81t\xc3\xa9", " \xe0\xa4\x95", "\xe0\xa4\xbf", " ", "1", "2"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(split("llama-bpe", "1234567 DON'T"), (Words{"123", "456", "7", " DON", "'T"}));
}

TEST(PreTokenizer, Gpt2AndDefault) {
  EXPECT_EQ(split("gpt-2", "it's 12  ok\t!"), (Words{"it", "'s", " 12", " ", " ok", "\t", "!"}));
  // default: punctuation runs first, then GPT-2 words, digit runs, digit triples.
  EXPECT_EQ(split("default", "a,b 12345"), (Words{"a", ",", "b", " ", "123", "45"}));
  EXPECT_EQ(split("", "a,b"), split("default", "a,b"));
}

TEST(PreTokenizer, NextLineIsWhitespaceAsInLlamaCpp) {
  // llama.cpp counts U+0085 as whitespace; PCRE2's \s does not. "!\u0085" must not be one
  // punctuation word, and a trailing U+0085 run is whitespace.
  EXPECT_EQ(split("qwen2", "x!\xC2\x85\xC2\x85"), (Words{"x", "!", "\xC2\x85\xC2\x85"}));
  EXPECT_EQ(split("llama3", "!\xC2\x85 y"), (Words{"!", "\xC2\x85", " y"}));
}

TEST(PreTokenizer, WordsTileTheText) {
  const std::string text =
      "Mixed \xE4\xB8\xAD\xE6\x96\x87 text,\r\n  with 123 and \xF0\x9F\x98\x80!";
  for (const char* pre : {"qwen2", "llama-bpe", "gpt2", "default", "starcoder"}) {
    std::string joined;
    for (const auto& w : split(pre, text)) {
      EXPECT_FALSE(w.empty()) << pre;
      joined += w;
    }
    EXPECT_EQ(joined, text) << pre;
  }
}

TEST(PreTokenizer, UnknownPreIsAnErrorNamingIt) {
  auto spec = pre_tokenizer_spec("no-such-pre");
  ASSERT_FALSE(spec.is_ok());
  EXPECT_EQ(spec.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(spec.status().message().find("'no-such-pre'"), std::string::npos)
      << spec.status().message();
}

// The qwen3 vocabulary's BPE, built directly.
struct QwenBpe {
  tokenizer::Vocab vocab;
  std::unique_ptr<BpeModel> bpe;
};

const QwenBpe* qwen_bpe() {
  static std::unique_ptr<QwenBpe> cached = [] {
    auto out = std::make_unique<QwenBpe>();
    auto file = GgufFile::open(test_data_path("models/qwen3-vocab.gguf"));
    if (!file.is_ok()) return std::unique_ptr<QwenBpe>();
    const auto* tokens = *(*file)->get_string_array("tokenizer.ggml.tokens");
    for (size_t i = 0; i < tokens->size(); ++i) {
      out->vocab.text.push_back((*tokens)[i]);
      out->vocab.id_of_text.emplace((*tokens)[i], static_cast<int32_t>(i));
    }
    auto bpe = BpeModel::build(out->vocab, **(*file)->get_string_array("tokenizer.ggml.merges"));
    if (!bpe.is_ok()) return std::unique_ptr<QwenBpe>();
    out->bpe = std::make_unique<BpeModel>(std::move(bpe).value());
    return out;
  }();
  return cached.get();
}

TEST(Bpe, LinearAndHeapMergeLoopsAgree) {
  MINFER_REQUIRE_TEST_DATA();
  const QwenBpe* q = qwen_bpe();
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->bpe->n_merges(), 151387u);
  std::mt19937 rng(7);
  const std::string alphabet = "aeiou tnrslTHE'-.,0123456789\xC3\xA9\xE4\xB8\xAD";
  BpeScratch scratch;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string word;
    const int len = 2 + static_cast<int>(rng() % 120);
    for (int i = 0; i < len; ++i) word.push_back(alphabet[rng() % alphabet.size()]);
    std::vector<int32_t> linear, heap;
    q->bpe->encode_word_linear(word, linear, scratch);
    q->bpe->encode_word_heap(word, heap, scratch);
    ASSERT_EQ(linear, heap) << "'" << printable(word) << "'";
    // Every byte is covered: the pieces rebuild the word.
    std::string joined;
    for (int32_t id : linear) joined += q->vocab.text[id];
    EXPECT_EQ(joined, tokenizer::gpt2_byte_encode(word));
  }
}

TEST(Bpe, Gpt2ByteTable) {
  EXPECT_EQ(tokenizer::gpt2_byte_encode(" \n!"), "\xC4\xA0\xC4\x8A!");  // Ġ Ċ !
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(tokenizer::gpt2_codepoint_to_byte(tokenizer::gpt2_byte_to_codepoint()[b]), b);
  }
  EXPECT_EQ(tokenizer::gpt2_codepoint_to_byte(0x20), -1);
}

// A small byte-level BPE vocabulary written with the GGUF writer.
struct TinyVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  TinyVocab() {
    for (int b = 0; b < 256; ++b) {
      std::string t;
      utf8::append(t, tokenizer::gpt2_byte_to_codepoint()[b]);
      tokens.push_back(t);
      types.push_back(1);
    }
    auto add = [&](std::string t, int32_t type) {
      tokens.push_back(std::move(t));
      types.push_back(type);
    };
    // Merges whose result is not a token ("a b" -> "ab"), then one that uses it ("ab c").
    merges = {"a b", "ab c", "\xC4\xA0 x"};
    add("abc", 1);
    add("\xC4\xA0x", 1);
    add("<|end|>", 3);        // 258
    add("<|im_end|>", 3);     // 259
    add("<tool>", 4);         // 260
    add("<|endoftext|>", 1);  // 261, NORMAL in the file but an end-of-generation text
  }
  Result<std::unique_ptr<Tokenizer>> build(const std::string& pre, bool with_merges = true,
                                           const std::string& model = "gpt2") const {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", model);
    if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
    w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::array(types));
    if (with_merges) w.set("tokenizer.ggml.merges", GgufValue::string_array(merges));
    w.set_scalar<uint32_t>("tokenizer.ggml.eos_token_id", 259);
    w.set_scalar<uint32_t>("tokenizer.ggml.bos_token_id", 261);
    auto bytes = w.serialize();
    if (!bytes.is_ok()) return bytes.status();
    image = std::move(*bytes);
    auto file = GgufFile::parse(image, "tiny.gguf");
    if (!file.is_ok()) return file.status();
    return Tokenizer::from_gguf(**file);
  }
  mutable std::vector<uint8_t> image;
};

TEST(TokenizerMetadata, MergesThroughTextsOutsideTheVocabulary) {
  TinyVocab v;
  auto tok = v.build("qwen2");
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  // "ab" is no token but the merge chain a+b -> ab, ab+c -> abc still applies (llama.cpp merges
  // on text).
  EXPECT_EQ((*tok)->encode("abc", false, false), std::vector<int32_t>{256});
  // A surviving "ab" has no token: llama.cpp then emits its bytes that are tokens ("a", "b").
  EXPECT_EQ((*tok)->encode("ab", false, false), (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ((*tok)->encode(" x", false, false), std::vector<int32_t>{257});
}

TEST(TokenizerMetadata, ErrorsNameTheProblem) {
  TinyVocab v;
  auto unknown_pre = v.build("mystery-pre");
  ASSERT_FALSE(unknown_pre.is_ok());
  EXPECT_NE(unknown_pre.status().message().find("mystery-pre"), std::string::npos);
  auto no_merges = v.build("qwen2", false);
  ASSERT_FALSE(no_merges.is_ok());
  EXPECT_NE(no_merges.status().message().find("tokenizer.ggml.merges"), std::string::npos)
      << no_merges.status().message();
  auto bert = v.build("qwen2", true, "bert");
  ASSERT_FALSE(bert.is_ok());
  EXPECT_EQ(bert.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(bert.status().message().find("'bert'"), std::string::npos);

  TinyVocab dup;
  dup.tokens.push_back("abc");
  dup.types.push_back(1);
  auto duplicate = dup.build("qwen2");
  ASSERT_FALSE(duplicate.is_ok());
  EXPECT_NE(duplicate.status().message().find("duplicate token 'abc'"), std::string::npos)
      << duplicate.status().message();
}

TEST(TokenizerMetadata, EndOfGenerationAndSpecialParsing) {
  TinyVocab v;
  auto made = v.build("qwen2");
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  const Tokenizer& tok = **made;
  EXPECT_TRUE(tok.is_eog(259));  // eos, <|im_end|>
  EXPECT_TRUE(tok.is_eog(258));  // <|end|>
  EXPECT_TRUE(tok.is_eog(261));  // <|endoftext|> by its text
  EXPECT_FALSE(tok.is_eog(260));
  EXPECT_FALSE(tok.is_eog('a'));
  // <|endoftext|> became CONTROL as in llama.cpp: matched only when parsing specials.
  EXPECT_EQ(tok.token_type(261), TokenType::kControl);
  EXPECT_EQ(tok.encode("x<|endoftext|>", false, true), (std::vector<int32_t>{'x', 261}));
  EXPECT_GT(tok.encode("x<|endoftext|>", false, false).size(), 5u);
  // USER_DEFINED tokens are matched either way; CONTROL ones only on request.
  EXPECT_EQ(tok.encode("<tool>", false, false), std::vector<int32_t>{260});
  EXPECT_EQ(tok.encode("<|im_end|>", false, true), std::vector<int32_t>{259});
  EXPECT_NE(tok.encode("<|im_end|>", false, false), std::vector<int32_t>{259});
  // qwen2 defaults: no BOS (add_bos_token absent); llama-bpe adds one.
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.encode("x", true, false), std::vector<int32_t>{'x'});
  auto llama = v.build("llama-bpe");
  ASSERT_TRUE(llama.is_ok());
  EXPECT_TRUE((*llama)->add_bos());
  EXPECT_EQ((*llama)->encode("x", true, false), (std::vector<int32_t>{261, 'x'}));
  EXPECT_EQ((*llama)->encode("x", false, false), std::vector<int32_t>{'x'});
}

// gpt-oss's harmony: <|return|> and <|call|> end generation, <|end|> (which ends a message in
// the middle of a reply) does not, and the channel markers are text the reply parser reads.
TEST(TokenizerMetadata, HarmonyEndsAtReturnAndCall) {
  TinyVocab v;
  for (const char* t : {"<|return|>", "<|call|>", "<|channel|>", "<|message|>", "<|start|>"}) {
    v.tokens.push_back(t);  // 262..266
    v.types.push_back(3);
  }
  auto made = v.build("qwen2");
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  const Tokenizer& tok = **made;
  EXPECT_TRUE(tok.is_eog(262));
  EXPECT_TRUE(tok.is_eog(263));
  EXPECT_FALSE(tok.is_eog(258));  // <|end|>
  for (int32_t id : {258, 264, 265, 266}) EXPECT_FALSE(tok.is_eog(id)) << id;
  const std::vector<int32_t> reply = {264, 'a', 265, 'x', 258, 266};
  EXPECT_EQ(tok.decode(reply, /*render_special=*/false),
            "<|channel|>a<|message|>x<|end|><|start|>");
}

TEST(TokenizerModels, BosEosAndEogOfTheSharedModels) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* qwen = shared_tokenizer("models/qwen3-vocab.gguf");
  ASSERT_NE(qwen, nullptr);
  EXPECT_EQ(qwen->n_vocab(), 151936);
  EXPECT_EQ(qwen->kind(), TokenizerKind::kBpe);
  EXPECT_FALSE(qwen->add_bos());
  EXPECT_EQ(qwen->eos_id(), 151645);
  EXPECT_EQ(qwen->eot_id(), 151645);  // <|im_end|>
  for (int32_t id : {151643, 151645, 151662, 151663, 151664}) EXPECT_TRUE(qwen->is_eog(id)) << id;
  for (int32_t id : {151644, 151667, 9707}) EXPECT_FALSE(qwen->is_eog(id)) << id;
  EXPECT_EQ(qwen->encode("Hello", true, false), std::vector<int32_t>{9707});

  const Tokenizer* llama = shared_tokenizer("models/llama-tiny-f32.gguf");
  ASSERT_NE(llama, nullptr);
  EXPECT_TRUE(llama->add_bos());
  EXPECT_EQ(llama->bos_id(), 997);
  const auto with_bos = llama->encode("Hi", true, false);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos.front(), 997);
  EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()),
            llama->encode("Hi", false, false));

  const Tokenizer* stories = shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(stories, nullptr);
  EXPECT_EQ(stories->kind(), TokenizerKind::kSpm);
  EXPECT_TRUE(stories->add_bos());  // SPM default: the file has no add_bos_token
  EXPECT_TRUE(stories->add_space_prefix());
  EXPECT_EQ(stories->bos_id(), 1);
  EXPECT_TRUE(stories->is_eog(2));
  EXPECT_EQ(stories->encode("", true, false), std::vector<int32_t>{1});
  EXPECT_TRUE(stories->encode("", false, false).empty());
  // After a special token the SPM space prefix applies again.
  const auto parsed = stories->encode("<s>Once", false, true);
  ASSERT_GE(parsed.size(), 2u);
  EXPECT_EQ(parsed[0], 1);
  EXPECT_EQ(std::vector<int32_t>(parsed.begin() + 1, parsed.end()),
            stories->encode("Once", false, false));
}

TEST(TokenizerModels, InvalidUtf8IsTokenizedAsLlamaCppDoes) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* qwen = shared_tokenizer("models/qwen3-vocab.gguf");
  ASSERT_NE(qwen, nullptr);
  // Each undecodable byte reads as U+FFFD.
  EXPECT_EQ(qwen->encode("ok\xFF\xFE", false, false),
            qwen->encode("ok\xEF\xBF\xBD\xEF\xBF\xBD", false, false));
  EXPECT_EQ(qwen->encode("\xE4\xB8", false, false),
            qwen->encode("\xEF\xBF\xBD\xEF\xBF\xBD", false, false));
}

}  // namespace
}  // namespace minfer::test

namespace minfer::test {
namespace {

// Random bytes (often invalid UTF-8, sometimes special-token texts) never break encoding: every
// id is in range, and valid UTF-8 comes back byte for byte from the pieces.
TEST(TokenizerModels, RandomInputIsSafe) {
  MINFER_REQUIRE_TEST_DATA();
  std::mt19937 rng(99);
  const std::vector<std::string> fragments = {"a",
                                              " ",
                                              "\n",
                                              "\t",
                                              "'s",
                                              "12",
                                              "\xC3\xA9",
                                              "\xE4\xB8\xAD",
                                              "\xF0\x9F\x98\x80",
                                              "\xC2\x85",
                                              "\xFF",
                                              "\x80",
                                              "\xE4\xB8",
                                              "<|im_end|>",
                                              "<s>",
                                              "<think>",
                                              "!!",
                                              "\xE2\x96\x81",
                                              "\xED\xA0\x80",
                                              "\xC0\x80",
                                              "   ",
                                              "\r\n"};
  for (const char* model :
       {"models/qwen3-vocab.gguf", "models/stories260K.gguf", "models/llama-tiny-f32.gguf"}) {
    const Tokenizer* tok = shared_tokenizer(model);
    ASSERT_NE(tok, nullptr);
    for (int trial = 0; trial < 300; ++trial) {
      std::string text;
      const int n = static_cast<int>(rng() % 24);
      for (int i = 0; i < n; ++i) text += fragments[rng() % fragments.size()];
      for (bool special : {false, true}) {
        const std::vector<int32_t> ids = tok->encode(text, true, special);
        ASSERT_TRUE(tok->check_ids(ids).is_ok()) << model << " '" << printable(text) << "'";
        if (special || !utf8::is_valid(text)) continue;
        std::string joined;
        for (int32_t id : ids) joined += tok->token_to_piece(id, true);
        const std::string bos = tok->add_bos() ? tok->token_text(tok->bos_id()) : "";
        const std::string prefix = tok->add_space_prefix() && !text.empty() ? " " : "";
        // SentencePiece reads a literal ▁ in the input as its space marker.
        std::string expected;
        for (size_t i = 0; i < text.size(); ++i) {
          if (tok->kind() == TokenizerKind::kSpm && text.compare(i, 3, "\xE2\x96\x81") == 0) {
            expected += ' ';
            i += 2;
          } else {
            expected += text[i];
          }
        }
        EXPECT_EQ(joined, bos + prefix + expected) << model << " '" << printable(text) << "'";
      }
    }
  }
}

}  // namespace
}  // namespace minfer::test
