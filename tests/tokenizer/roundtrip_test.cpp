// Detokenization: pieces, decode round trips on the corpora, llama.cpp's detokenizer rules, and
// the streaming decoder's UTF-8 safety.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/streaming_decoder.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace minfer::test {
namespace {

std::vector<std::string> corpus_texts(const std::string& corpus) {
  std::ifstream in(test_data_path("golden/tokenizer/" + corpus));
  EXPECT_TRUE(in.good()) << corpus;
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
  }
  return texts;
}

// Texts whose decoding llama.cpp changes on purpose when clean_up_tokenization_spaces is on
// (" ." " ," " !" " ?" " ' " " 's" " 'm" " 're" " 've"): the reference does not round-trip them.
bool cleaned_by_reference(const std::string& text) {
  for (const char* p : {" .", " ,", " !", " ?", " ' ", " 's", " 'm", " 're", " 've"}) {
    if (text.find(p) != std::string::npos) return true;
  }
  return false;
}

struct RoundTripParam {
  const char* corpus;
  const char* model;
  bool parse_special;
};

class RoundTripTest : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTripTest, DecodeOfEncodeIsTheText) {
  MINFER_REQUIRE_TEST_DATA();
  const RoundTripParam& p = GetParam();
  const Tokenizer* tok = shared_tokenizer(p.model);
  ASSERT_NE(tok, nullptr);
  const bool cleans = std::string(p.model).find("llama-tiny") != std::string::npos;
  size_t checked = 0;
  for (const std::string& text : corpus_texts(p.corpus)) {
    const std::vector<int32_t> ids = tok->encode(text, false, p.parse_special);
    // The pieces alone rebuild the text byte for byte (SPM adds its one prefix space).
    std::string joined;
    for (int32_t id : ids) joined += tok->token_to_piece(id, true);
    const std::string expected_joined =
        (tok->add_space_prefix() && !text.empty() ? " " : "") + text;
    EXPECT_EQ(joined, expected_joined) << p.model << ": '" << printable(text) << "'";
    if (cleans && cleaned_by_reference(text)) continue;
    EXPECT_EQ(tok->decode(ids, p.parse_special), text)
        << p.model << ": '" << printable(text) << "'";
    ++checked;
  }
  EXPECT_GE(checked, 50u);
}

INSTANTIATE_TEST_SUITE_P(
    Corpora, RoundTripTest,
    ::testing::Values(
        RoundTripParam{"corpus.qwen3.jsonl", "models/qwen3-vocab.gguf", false},
        RoundTripParam{"corpus.qwen3.special.jsonl", "models/qwen3-vocab.gguf", true},
        RoundTripParam{"corpus.stories260K.jsonl", "models/stories260K.gguf", false},
        RoundTripParam{"corpus.llama-tiny.jsonl", "models/llama-tiny-f32.gguf", false},
        RoundTripParam{"corpus.qwen2-tiny.jsonl", "models/qwen2-tiny-f32.gguf", false}),
    [](const ::testing::TestParamInfo<RoundTripParam>& param_info) {
      std::string name = param_info.param.corpus;
      name = name.substr(7, name.size() - 7 - 6);  // between "corpus." and ".jsonl"
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(Detokenize, SpmBytesSpacesAndBos) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->token_to_piece(tok->find_token("<0x41>")), "A");
  EXPECT_EQ(tok->token_to_piece(tok->find_token("<0x0A>")), "\n");
  EXPECT_EQ(tok->token_to_piece(tok->find_token("\xE2\x96\x81Once")), " Once");
  // BOS renders as its text only on request.
  EXPECT_EQ(tok->token_to_piece(tok->bos_id(), true), "<s>");
  EXPECT_EQ(tok->token_to_piece(tok->bos_id(), false), "");
  // "中" (E4 B8 AD) is not a token of this vocabulary: three byte tokens, joined back into one
  // character.
  const std::vector<int32_t> ids = tok->encode("a\xE4\xB8\xAD", false, false);
  EXPECT_EQ(tok->decode(ids), "a\xE4\xB8\xAD");
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[ids.size() - 3], tok->find_token("<0xE4>"));
  EXPECT_EQ(ids[ids.size() - 2], tok->find_token("<0xB8>"));
  EXPECT_EQ(ids[ids.size() - 1], tok->find_token("<0xAD>"));
}

TEST(Detokenize, Gpt2ByteMappingIsUndone) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/qwen3-vocab.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->token_to_piece(tok->find_token("\xC4\xA0world")), " world");  // Ġworld
  EXPECT_EQ(tok->token_to_piece(tok->find_token("\xC4\x8A")), "\n");           // Ċ
  EXPECT_EQ(tok->token_to_piece(151645, true), "<|im_end|>");
  EXPECT_EQ(tok->token_to_piece(151645, false), "");
  // USER_DEFINED tokens are text: always rendered.
  EXPECT_EQ(tok->token_to_piece(tok->find_token("<think>"), false), "<think>");
}

TEST(Detokenize, CleanUpSpacesLikeLlamaCpp) {
  MINFER_REQUIRE_TEST_DATA();
  // llama-bpe has clean_up_tokenization_spaces; qwen2 does not.
  const Tokenizer* llama = shared_tokenizer("models/llama-tiny-f32.gguf");
  const Tokenizer* qwen = shared_tokenizer("models/qwen2-tiny-f32.gguf");
  ASSERT_NE(llama, nullptr);
  ASSERT_NE(qwen, nullptr);
  // Pass 2 takes both spaces around a lone apostrophe, so "' they" closes up too.
  const std::string text = "Hello , world ! It 's ' quoted ' they 're here .";
  EXPECT_EQ(llama->decode(llama->encode(text, false, false)),
            "Hello, world! It's'quoted'they're here.");
  EXPECT_EQ(qwen->decode(qwen->encode(text, false, false)), text);
  // " 't" and " 'll" keep their space.
  EXPECT_EQ(llama->decode(llama->encode("don 't we 'll", false, false)), "don 't we 'll");
}

TEST(Detokenize, CheckIdsNamesTheBadId) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/qwen2-tiny-f32.gguf");
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> good = {1, 2, 999};
  EXPECT_TRUE(tok->check_ids(good).is_ok());
  const std::vector<int32_t> bad = {1, 1000};
  const Status s = tok->check_ids(bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1000"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("index 1"), std::string::npos) << s.message();
}

// Feeds ids one at a time; every chunk must be whole UTF-8 characters, and the chunks must add
// up to the decoded text. Returns the most bytes ever held back.
size_t stream_and_check(const Tokenizer& tok, const std::vector<int32_t>& ids,
                        const std::string& expected) {
  StreamingDecoder stream(tok);
  std::string all;
  size_t max_pending = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string chunk = stream.push(ids[i]);
    EXPECT_TRUE(utf8::is_valid(chunk)) << "chunk after token " << i << " is not whole UTF-8";
    EXPECT_LT(stream.pending_bytes(), 4u);
    max_pending = std::max(max_pending, stream.pending_bytes());
    all += chunk;
  }
  all += stream.flush();
  EXPECT_EQ(stream.pending_bytes(), 0u);
  EXPECT_EQ(all, expected);
  return max_pending;
}

TEST(StreamingDecoder, NeverEmitsHalfACharacter) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string text =
      "中文：你好，世界！日本語：こんにちは。한국어 emoji: 😀😃 👍🏽 "
      "🇺🇸 "
      "👨‍👩‍👧‍👦 "
      "❤️ "
      "🦙 "
      "math ∑ ≤ ∞ — done";
  for (const char* model :
       {"models/qwen3-vocab.gguf", "models/stories260K.gguf", "models/llama-tiny-f32.gguf"}) {
    const Tokenizer* tok = shared_tokenizer(model);
    ASSERT_NE(tok, nullptr);
    const std::vector<int32_t> ids = tok->encode(text, false, false);
    const std::string expected =
        (tok->add_space_prefix() ? " " : "") + text;  // the stream keeps the prefix space
    const size_t max_pending = stream_and_check(*tok, ids, expected);
    // These vocabularies split some of those characters across tokens, so the decoder had to
    // hold bytes back at least once.
    EXPECT_GT(max_pending, 0u) << model;
  }
}

TEST(StreamingDecoder, InvalidAndUnfinishedBytes) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/stories260K.gguf");
  ASSERT_NE(tok, nullptr);
  auto byte = [&](int b) { return tok->find_token(fmt::format("<0x{:02X}>", b)); };
  const std::string kFffd = "\xEF\xBF\xBD";
  {
    // 0xFF can never occur in UTF-8: replaced at once, nothing held back.
    StreamingDecoder stream(*tok);
    EXPECT_EQ(stream.push(byte(0xFF)), kFffd);
    EXPECT_EQ(stream.pending_bytes(), 0u);
  }
  {
    // E4 B8 AD is 中: held back until complete.
    StreamingDecoder stream(*tok);
    EXPECT_EQ(stream.push(byte(0xE4)), "");
    EXPECT_EQ(stream.push(byte(0xB8)), "");
    EXPECT_EQ(stream.push(byte(0xAD)), "\xE4\xB8\xAD");
    EXPECT_EQ(stream.flush(), "");
  }
  {
    // A character cut off by a plain letter: the broken start becomes U+FFFD, the letter stays.
    StreamingDecoder stream(*tok);
    EXPECT_EQ(stream.push(byte(0xE4)), "");
    EXPECT_EQ(stream.push(byte(0x41)), kFffd + "A");
  }
  {
    // The stream ends inside a character: one U+FFFD.
    StreamingDecoder stream(*tok);
    EXPECT_EQ(stream.push(byte(0xF0)), "");
    EXPECT_EQ(stream.push(byte(0x9F)), "");
    EXPECT_EQ(stream.flush(), kFffd);
    EXPECT_EQ(stream.pending_bytes(), 0u);
  }
  {
    // Surrogates (ED A0 80) are not UTF-8.
    StreamingDecoder stream(*tok);
    std::string out = stream.push(byte(0xED));
    out += stream.push(byte(0xA0));
    out += stream.push(byte(0x80));
    out += stream.flush();
    EXPECT_TRUE(utf8::is_valid(out));
    EXPECT_EQ(out.find("\xED\xA0"), std::string::npos);
  }
}

}  // namespace
}  // namespace minfer::test
