// `minfer tokenize`: both output forms, input from a file, flags, and errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_test_util.h"

namespace minfer::test {
namespace {

std::string tokenize_cmd(const std::string& model, const std::string& args) {
  return minfer_binary() + " tokenize -m " + shell_quote(test_data_path(model)) + " " + args;
}

TEST(TokenizeCli, IdsAsOneJsonArray) {
  MINFER_REQUIRE_TEST_DATA();
  const auto r = run_command(tokenize_cmd("models/qwen3-vocab.gguf", "-p 'Hello, world' --ids"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707, 11, 1879]\n");
  EXPECT_EQ(r.err, "");
}

TEST(TokenizeCli, IdAndPiecePerLine) {
  MINFER_REQUIRE_TEST_DATA();
  const auto r = run_command(tokenize_cmd("models/qwen3-vocab.gguf",
                                          "--special -p " + shell_quote("<|im_start|>user\nhi")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "151644\t<|im_start|>\n872\tuser\n198\t\\n\n6023\thi\n");
  // Without --special the markers are plain text.
  const auto plain = run_command(
      tokenize_cmd("models/qwen3-vocab.gguf", "--ids -p " + shell_quote("<|im_start|>user")));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("151644"), std::string::npos) << plain.out;
}

TEST(TokenizeCli, BosFileAndPartialCharacters) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  const std::string text = "Once upon a time \xE4\xB8\xAD";
  write_file_bytes(dir.file("in.txt"), std::vector<uint8_t>(text.begin(), text.end()));
  const auto r = run_command(
      tokenize_cmd("models/stories260K.gguf", "--ids -f " + shell_quote(dir.file("in.txt"))));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ids = nlohmann::json::parse(r.out).get<std::vector<int32_t>>();
  EXPECT_EQ(ids, shared_tokenizer("models/stories260K.gguf")->encode(text, true, false));
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);  // BOS, which this model adds
  const auto no_bos = run_command(tokenize_cmd(
      "models/stories260K.gguf", "--ids --no-bos -f " + shell_quote(dir.file("in.txt"))));
  ASSERT_EQ(no_bos.exit_code, 0) << no_bos.err;
  EXPECT_EQ(nlohmann::json::parse(no_bos.out).get<std::vector<int32_t>>(),
            std::vector<int32_t>(ids.begin() + 1, ids.end()));
  // 中 is three byte tokens here: each piece is half a character, shown as an escape.
  const auto pieces = run_command(
      tokenize_cmd("models/stories260K.gguf", "--no-bos -p " + shell_quote("\xE4\xB8\xAD")));
  ASSERT_EQ(pieces.exit_code, 0) << pieces.err;
  EXPECT_NE(pieces.out.find("\t\\xe4\n"), std::string::npos) << pieces.out;
  EXPECT_NE(pieces.out.find("\t\\xad\n"), std::string::npos) << pieces.out;
}

TEST(TokenizeCli, ErrorsAreOneLineAndExitOne) {
  MINFER_REQUIRE_TEST_DATA();
  const auto missing = run_command(minfer_binary() + " tokenize -m /no/such/model.gguf -p hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  ASSERT_FALSE(missing.err.empty());
  EXPECT_EQ(missing.err.find('\n'), missing.err.size() - 1) << missing.err;
  EXPECT_NE(missing.err.find("/no/such/model.gguf"), std::string::npos) << missing.err;

  const auto neither = run_command(tokenize_cmd("models/qwen3-vocab.gguf", ""));
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_NE(neither.err.find("-p"), std::string::npos) << neither.err;
  const auto both = run_command(tokenize_cmd("models/qwen3-vocab.gguf", "-p a -f /tmp/x"));
  EXPECT_EQ(both.exit_code, 1);

  const auto no_file = run_command(tokenize_cmd("models/qwen3-vocab.gguf", "-f /no/such.txt"));
  EXPECT_EQ(no_file.exit_code, 1);
  EXPECT_NE(no_file.err.find("/no/such.txt"), std::string::npos) << no_file.err;
}

}  // namespace
}  // namespace minfer::test
