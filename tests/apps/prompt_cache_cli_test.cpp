// KV state files from the command line, across process restarts: `run --prompt-cache FILE` gives
// the text of a run without it while reusing the stored prefix, and refuses a file of another
// model, cell type or a corrupt one; `chat` /save and /load continue a conversation in a new
// process as if it had never stopped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer {
namespace {

using test::CommandResult;
using test::minfer_binary;
using test::run_command;
using test::run_minfer_chat;
using test::run_minfer_run;
using test::shell_quote;

std::string quoted_model_path(const std::string& name) {
  return shell_quote(test::test_data_path("models/" + name));
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const std::string kStory = " -p 'Once upon a time' -n 24 --temp 0 ";

TEST(PromptCache, SecondRunReusesThePromptAndPrintsTheSameText) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string cache = " --prompt-cache " + shell_quote(dir.file("story.state"));
  for (const char* cells : {"f32", "f16"}) {
    SCOPED_TRACE(cells);
    const std::string args =
        "-m " + quoted_model_path("stories260K.gguf") + kStory + "--cache-type " + cells;
    const CommandResult plain = run_minfer_run(args);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    std::filesystem::remove(dir.file("story.state"));
    const CommandResult first = run_minfer_run(args + cache);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_EQ(first.out, plain.out);
    EXPECT_TRUE(contains(first.err, "prompt cache: 0 of 5 prompt tokens reused")) << first.err;
    EXPECT_TRUE(std::filesystem::exists(dir.file("story.state")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("story.state.tmp")));
    // A new process: the prompt's first 4 tokens come from the file (the last is recomputed for
    // its logits), and the greedy text is the same.
    const CommandResult second = run_minfer_run(args + cache);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.out, plain.out);
    EXPECT_TRUE(contains(second.err, "prompt cache: 4 of 5 prompt tokens reused")) << second.err;
  }
}

TEST(PromptCache, ADivergingPromptKeepsOnlyTheCommonPrefix) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string cache = " --prompt-cache " + shell_quote(dir.file("s.state"));
  const std::string model = "-m " + quoted_model_path("stories260K.gguf") + " -n 8 --temp 0 ";
  ASSERT_EQ(run_minfer_run(model + "-p 'Once upon a time there was a dog'" + cache).exit_code, 0);
  const CommandResult plain = run_minfer_run(model + "-p 'Once upon a time there was a cat'");
  const CommandResult cached =
      run_minfer_run(model + "-p 'Once upon a time there was a cat'" + cache);
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  EXPECT_EQ(cached.out, plain.out);
  EXPECT_FALSE(contains(cached.err, "prompt cache: 0 of")) << cached.err;
}

TEST(PromptCache, AFileOfAnotherModelCellTypeOrCorruptIsAnError) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string path = dir.file("s.state");
  const std::string cache = " --prompt-cache " + shell_quote(path);
  ASSERT_EQ(run_minfer_run("-m " + quoted_model_path("stories260K.gguf") + kStory +
                           "--cache-type f16" + cache)
                .exit_code,
            0);
  const CommandResult other_cells = run_minfer_run("-m " + quoted_model_path("stories260K.gguf") +
                                                   kStory + "--cache-type f32" + cache);
  EXPECT_EQ(other_cells.exit_code, 1);
  EXPECT_TRUE(contains(other_cells.err, "holds f16 KV cells, this cache holds f32"))
      << other_cells.err;
  const CommandResult other_model = run_minfer_run(
      "-m " + quoted_model_path("stories260K-f16.gguf") + kStory + "--cache-type f16" + cache);
  EXPECT_EQ(other_model.exit_code, 1);
  EXPECT_TRUE(contains(other_model.err, "saved from another model")) << other_model.err;
  EXPECT_TRUE(other_model.out.empty());

  std::vector<uint8_t> bytes = test::read_file_bytes(path);
  bytes[bytes.size() / 2] ^= 1;
  test::write_file_bytes(path, bytes);
  const CommandResult corrupt = run_minfer_run("-m " + quoted_model_path("stories260K.gguf") +
                                               kStory + "--cache-type f16" + cache);
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_TRUE(contains(corrupt.err, "checksum")) << corrupt.err;
}

TEST(ChatState, LoadInANewProcessContinuesAsIfItNeverStopped) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string model =
      "-m " + quoted_model_path("qwen2.5-qwentok-tiny-q8_0.gguf") + " -n 8 --temp 0 --verbose";
  const CommandResult whole = run_minfer_chat("Hello there\nHow are you?\n", model);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  const std::string file = dir.file("chat.state");
  const CommandResult saved = run_minfer_chat("Hello there\n/save " + file + "\n", model);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_TRUE(contains(saved.err, "(saved ")) << saved.err;
  const CommandResult loaded = run_minfer_chat("/load " + file + "\nHow are you?\n", model);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_TRUE(contains(loaded.err, "turns from")) << loaded.err;
  // The second reply is the same, and only the new turn is prefilled.
  const size_t first_reply_end = whole.out.find('\n');
  ASSERT_NE(first_reply_end, std::string::npos);
  EXPECT_EQ(loaded.out, whole.out.substr(first_reply_end + 1));
  EXPECT_TRUE(contains(loaded.err, "turn 1: prefilled")) << loaded.err;
  EXPECT_FALSE(contains(loaded.err, "(0 reused)")) << loaded.err;

  // Errors leave the conversation going.
  const CommandResult bad = run_minfer_chat("/load " + dir.file("none") + "\n/save\nHi\n", model);
  EXPECT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_TRUE(contains(bad.err, "cannot read")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "/save needs a file name")) << bad.err;
}

}  // namespace
}  // namespace minfer
