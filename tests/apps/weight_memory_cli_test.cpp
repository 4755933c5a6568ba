// --no-mmap and --mlock on the commands that load a model to run it (run, chat, serve, bench,
// perplexity): the same output as the mapped file; a lock that fails only warns.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace minfer {
namespace {

std::string model_path() {
  return test::test_data_path("models/qwen2-tiny-q8_0.gguf");
}

std::string run_args() {
  return " run -m " + model_path() + " -p 'hello world' -n 16 --temp 0 -t 2";
}

TEST(WeightMemoryCli, NoMmapAndMlockGiveTheSameGreedyText) {
  MINFER_REQUIRE_TEST_DATA();
  const auto mapped = test::run_command(test::minfer_binary() + run_args());
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  ASSERT_FALSE(mapped.out.empty());
  const auto copied = test::run_command(test::minfer_binary() + run_args() + " --no-mmap");
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_EQ(copied.out, mapped.out);
  // A lock limit of 0: an unprivileged run cannot lock and warns (naming the limit); a
  // privileged one (CAP_IPC_LOCK) locks. Either way the run succeeds with the same text.
  for (const char* flags : {" --mlock", " --mlock --no-mmap"}) {
    const auto locked =
        test::run_command("ulimit -l 0; " + test::minfer_binary() + run_args() + flags);
    ASSERT_EQ(locked.exit_code, 0) << flags << "\n" << locked.err;
    EXPECT_EQ(locked.out, mapped.out) << flags;
    if (locked.err.find("cannot mlock") != std::string::npos) {
      EXPECT_NE(locked.err.find("RLIMIT_MEMLOCK"), std::string::npos) << locked.err;
    }
  }
}

TEST(WeightMemoryCli, BenchAndPerplexityTakeTheFlags) {
  MINFER_REQUIRE_TEST_DATA();
  const auto bench = test::run_command(test::minfer_binary() + " bench -m " + model_path() +
                                       " -p 8 -n 4 -r 1 -t 1 --no-mmap --mlock -o json");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("\"tg4\""), std::string::npos) << bench.out;
  const std::string text = test::test_data_path("golden/perplexity/tinystory.txt");
  const std::string ppl = " perplexity -m " + test::test_data_path("models/stories260K.gguf") +
                          " -f " + text + " -c 128 -b 64 --chunks 1 -t 1";
  const auto a = test::run_command(test::minfer_binary() + ppl);
  const auto b = test::run_command(test::minfer_binary() + ppl + " --no-mmap --mlock");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, a.out);
  for (const char* command : {" serve", " chat"}) {
    const auto help = test::run_command(test::minfer_binary() + command + " --help");
    EXPECT_NE(help.out.find("--no-mmap"), std::string::npos) << command;
    EXPECT_NE(help.out.find("--mlock"), std::string::npos) << command;
  }
}

}  // namespace
}  // namespace minfer
