// `minfer run --context-shift` and `minfer chat --context-shift` as a user runs them: a
// generation three times the context never stops at the context, and --keep is checked.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace minfer {
namespace {

using test::CommandResult;
using test::minfer_binary;
using test::run_command;

CommandResult run_stories(const std::string& args) {
  return run_command(minfer_binary() + " run -t 2 -m '" +
                     test::test_data_path("models/stories260K.gguf") + "' -p 'Once upon a time' " +
                     args);
}

// Token 2 is the model's end of text: banned, only -n ends the run.
TEST(RunContextShift, GeneratesThreeTimesTheContext) {
  const CommandResult r = run_stories("-c 64 -n 200 --temp 0 -l 2-inf --context-shift");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopped: token limit (-n) reached (200 tokens)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("generated tokens:    200"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("context shifts:"), std::string::npos) << r.err;

  const CommandResult plain = run_stories("-c 64 -n 200 --temp 0 -l 2-inf");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("stopped: context full"), std::string::npos) << plain.err;
}

// A chat reply past the context (the system prompt kept by default), end-of-generation banned.
TEST(ChatContextShift, AReplyGoesOnPastTheContext) {
  const CommandResult r =
      run_command("(printf 'Count to many.\\n' | " + minfer_binary() + " chat -t 2 -m '" +
                  test::test_data_path("models/qwen2.5-qwentok-tiny-q8_0.gguf") +
                  "' -sys 'You are terse.' -c 64 -n 150 --temp 0 -l 151643-inf -l 151645-inf "
                  "--context-shift --verbose)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("generated 150 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stopped: length"), std::string::npos) << r.err;
}

TEST(RunContextShift, KeepBeyondTheContextOrMalformedIsAnError) {
  const CommandResult beyond = run_stories("-c 64 -n 10 --context-shift --keep 63");
  EXPECT_NE(beyond.exit_code, 0);
  EXPECT_NE(beyond.err.find("--keep 63 is beyond the context"), std::string::npos) << beyond.err;
  const CommandResult negative = run_stories("-c 64 -n 10 --context-shift --keep -3");
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE(negative.err.find("--keep -3: expected -1"), std::string::npos) << negative.err;
  const CommandResult malformed = run_stories("-c 64 -n 10 --context-shift --keep many");
  EXPECT_NE(malformed.exit_code, 0);
  EXPECT_NE(malformed.err.find("--keep"), std::string::npos) << malformed.err;
}

}  // namespace
}  // namespace minfer
