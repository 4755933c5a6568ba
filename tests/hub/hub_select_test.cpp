// Which files `-hf REPO[:QUANT]` picks, what a bad name says, and what `minfer run` says without
// a model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hub/hub_select.h"
#include "test_util.h"

namespace minfer {
namespace {

using hub::pick_gguf_files;
using Files = std::vector<std::string>;

const Files kRepo = {
    "README.md",
    "Qwen3-8B-Q4_K_M.gguf",
    "Qwen3-8B-UD-Q4_K_M.gguf",
    "Qwen3-8B-Q4_K_S.gguf",
    "Qwen3-8B-Q8_0.gguf",
    "mmproj-Qwen3-8B-F16.gguf",
    "BF16/Qwen3-8B-BF16-00002-of-00002.gguf",
    "BF16/Qwen3-8B-BF16-00001-of-00002.gguf",
};

TEST(HubSelect, PicksByTagDefaultAndSplit) {
  EXPECT_EQ(*pick_gguf_files(kRepo, "q8_0", "r"), Files{"Qwen3-8B-Q8_0.gguf"});
  EXPECT_EQ(*pick_gguf_files(kRepo, "", "r"), Files{"Qwen3-8B-Q4_K_M.gguf"});
  EXPECT_EQ(*pick_gguf_files(kRepo, "ud-q4_k_m", "r"), Files{"Qwen3-8B-UD-Q4_K_M.gguf"});
  EXPECT_EQ(*pick_gguf_files(kRepo, "Qwen3-8B-Q4_K_M", "r"), Files{"Qwen3-8B-Q4_K_M.gguf"});
  EXPECT_EQ(
      *pick_gguf_files(kRepo, "BF16", "r"),
      (Files{"BF16/Qwen3-8B-BF16-00001-of-00002.gguf", "BF16/Qwen3-8B-BF16-00002-of-00002.gguf"}));
  EXPECT_EQ(*pick_gguf_files({"a-F16.gguf", "b-F32.gguf"}, "", "r"), Files{"a-F16.gguf"});
}

TEST(HubSelect, AmbiguousMissingAndEmpty) {
  auto ambiguous = pick_gguf_files(kRepo, "Q4_K", "org/r");
  ASSERT_FALSE(ambiguous.is_ok());
  EXPECT_NE(ambiguous.status().message().find("matches 3 models"), std::string::npos)
      << ambiguous.status().message();
  auto missing = pick_gguf_files(kRepo, "Q6_K", "org/r");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find(
                "the repo has: BF16/Qwen3-8B-BF16-00001-of-00002.gguf (2 parts), "),
            std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(pick_gguf_files({"README.md"}, "", "org/r").is_ok());
}

TEST(HubSelect, ParsesReferences) {
  auto r = hub::parse_hub_model_ref("Qwen/Qwen3-0.6B-GGUF:Q8_0");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->repo, "Qwen/Qwen3-0.6B-GGUF");
  EXPECT_EQ(r->quant, "Q8_0");
  EXPECT_EQ(r->revision, "main");
  auto rev = hub::parse_hub_model_ref("org/name@v1.0");
  ASSERT_TRUE(rev.is_ok());
  EXPECT_EQ(rev->revision, "v1.0");
  EXPECT_EQ(rev->quant, "");
  for (const char* bad : {"noslash", "a/b/c", "../x", "org/..", "/x", "org/"}) {
    EXPECT_FALSE(hub::parse_hub_model_ref(bad).is_ok()) << bad;
  }
}

TEST(ModelSource, NoModelSaysHowToGetOne) {
  const auto plain = test::run_command(test::minfer_binary() + " run -p hello");
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("no model: give -m FILE.gguf"), std::string::npos) << plain.err;
  EXPECT_EQ(std::count(plain.err.begin(), plain.err.end(), '\n'), 1) << plain.err;
  // On a terminal (script(1) gives the command one): the bundled model and -hf.
  if (test::run_command("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const auto tty =
      test::run_command("script -qec '" + test::minfer_binary() + " run -p hello' /dev/null");
  EXPECT_EQ(tty.exit_code, 1);
  EXPECT_NE(tty.out.find("minfer run -hf Qwen/Qwen3-0.6B-GGUF"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("models/stories260K.gguf"), std::string::npos) << tty.out;
}

}  // namespace
}  // namespace minfer
