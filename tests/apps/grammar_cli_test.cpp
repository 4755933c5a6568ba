// --grammar and --grammar-file on `minfer run`, `chat` and `serve`, run as a user would: the output
// follows the grammar exactly (greedy and sampled, on the real Qwen vocabulary), and a bad grammar
// is a one-line error naming line and column before any model is loaded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "test_util.h"

namespace minfer {
namespace {

using test::CommandResult;
using test::minfer_binary;
using test::run_command;

std::string qwen_tiny() {
  return "-m '" + test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf") + "' ";
}

TEST(GrammarFlags, RunOutputIsExactlyASentenceOfTheGrammar) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* sampling :
       {"--temp 0", "--temp 1 --seed 1", "--temp 1 --seed 2", "--temp 1.5 --seed 3"}) {
    const CommandResult r =
        run_command(minfer_binary() + " run -t 2 " + qwen_tiny() + "-p 'Is the sky blue?' -n 16 " +
                    sampling + " --grammar 'root ::= \"yes\" | \"no\"'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out == "yes" || r.out == "no") << sampling << ": '" << r.out << "'";
  }
}

TEST(GrammarFlags, GrammarFileAndChat) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  std::ofstream(dir.file("g.gbnf")) << "# digits then a unit\nroot ::= [1-9] [0-9]{0,2} unit\n"
                                       "unit ::= \" kg\" | \" g\"\n";
  const CommandResult r = run_command(minfer_binary() + " run -t 2 " + qwen_tiny() +
                                      "-p 'Weight:' -n 16 --temp 1 --seed 7 --grammar-file '" +
                                      dir.file("g.gbnf") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GE(r.out.size(), 3u) << r.out;
  EXPECT_TRUE(r.out.ends_with(" kg") || r.out.ends_with(" g")) << r.out;
  EXPECT_TRUE(r.out[0] >= '1' && r.out[0] <= '9') << r.out;
  // chat: the reply follows the grammar too.
  const CommandResult c =
      run_command("(printf 'Is it?\\n' | " + minfer_binary() + " chat -t 2 " + qwen_tiny() +
                  "-n 16 --temp 0 --grammar 'root ::= \"maybe\"')");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("maybe"), std::string::npos) << c.out;
}

TEST(GrammarFlags, BadGrammarIsAnErrorWithLineAndColumn) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* command : {" run -p hi ", " serve --port 0 "}) {
    const CommandResult r = run_command(minfer_binary() + command + qwen_tiny() +
                                        "--grammar 'root ::= \"a\"\nx ::= [a-z'");
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_NE(r.err.find("gbnf:2:11: expected ']' to close the character class"), std::string::npos)
        << command << r.err;
  }
  const CommandResult both = run_command(minfer_binary() + " run -p hi " + qwen_tiny() +
                                         "--grammar 'root ::= \"a\"' --grammar-file /nonexistent");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("give one of --grammar, --grammar-file, --json-schema"),
            std::string::npos)
      << both.err;
}

TEST(GrammarFlags, JsonSchemaConstrainsRunAndAnUnsupportedKeywordIsNamed) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string schema =
      R"('{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":1,"maximum":3}},"required":["ok","n"],"additionalProperties":false}')";
  for (const char* temp : {"0", "1"}) {
    const CommandResult r = run_command(minfer_binary() + " run -p hi -n 200 --temp " + temp + " " +
                                        qwen_tiny() + "-j " + schema);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.out;
    EXPECT_TRUE(doc["ok"].is_boolean()) << r.out;
    EXPECT_TRUE(doc["n"].is_number_integer() && doc["n"] >= 1 && doc["n"] <= 3) << r.out;
    EXPECT_EQ(doc.size(), 2u) << r.out;
  }
  const CommandResult bad = run_command(minfer_binary() + " run -p hi " + qwen_tiny() +
                                        "-j '{\"type\":\"string\",\"format\":\"email\"}'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--json-schema: [json_schema] unsupported format \"email\""),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace minfer
