// `minfer run` and `minfer chat` run as a user would (the built binary): the golden story byte for
// byte, seeds, each finish reason, flag errors, and multi-turn chat whose prefill counts are
// checked against token counts computed independently with `minfer template` and
// `minfer tokenize`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edited_model.h"
#include "minfer/minfer.h"
#include "test_util.h"

namespace minfer {
namespace {

using nlohmann::json;
using test::CommandResult;
using test::count_lines;
using test::minfer_binary;
using test::run_command;
using test::run_minfer_chat;
using test::run_minfer_run;
using test::shell_quote;

std::string model_path(const std::string& name) {
  return test::test_data_path("models/" + name);
}

std::string stories() {
  return "-m " + shell_quote(model_path("stories260K.gguf")) + " -p 'Once upon a time' ";
}

json golden() {
  std::ifstream in(test::test_data_path("golden/stories260K.once.json"));
  return json::parse(in);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// --- run
// ------------------------------------------------------------------------------------------

TEST(RunCommand, GreedyStoryIsTheGoldenTextByteForByte) {
  MINFER_REQUIRE_TEST_DATA();
  // f32 cells: the golden is llama.cpp's with an f32 KV cache.
  const CommandResult r = run_minfer_run(stories() + "-n 48 --temp 0 --cache-type f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["greedy_text"].get<std::string>());
  EXPECT_NE(r.err.find("stopped: token limit"), std::string::npos) << r.err;
  for (const char* metric : {"prompt tokens:       5", "prefill:", "time to first token:",
                             "generated tokens:    48", "decode:", "decode forward:      min"}) {
    EXPECT_NE(r.err.find(metric), std::string::npos) << metric << "\n" << r.err;
  }
}

TEST(RunCommand, ThePromptCanComeFromAFile) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  std::ofstream(dir.file("p.txt")) << "Once upon a time";
  const CommandResult r =
      run_minfer_run("-m " + shell_quote(model_path("stories260K.gguf")) + " -f " +
                     shell_quote(dir.file("p.txt")) + " -n 48 --temp 0 --cache-type f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, golden()["greedy_text"].get<std::string>());
}

TEST(RunCommand, TheSameSeedGivesTheSameTextAndAnotherSeedAnother) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult a = run_minfer_run(stories() + "-n 32 --temp 0.8 --seed 1234");
  const CommandResult b = run_minfer_run(stories() + "-n 32 --temp 0.8 --seed 1234");
  const CommandResult c = run_minfer_run(stories() + "-n 32 --temp 0.8 --seed 99");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_NE(a.out, golden()["greedy_text"].get<std::string>());
}

// stories260K with the sampling a model's authors recommend in general.sampling.*: greedy
// (temp 0), top_k 7, the rest left to llama.cpp's defaults.
std::string write_stories_with_sampling(const test::TempDir& dir) {
  const std::vector<uint8_t> image = test::edited_model("stories260K.gguf", [](GgufWriter& w) {
    w.set_scalar("general.sampling.temp", 0.0f);
    w.set_scalar("general.sampling.top_k", int32_t{7});
    w.set_string("general.sampling.sequence", "top_k;temperature");  // read by nobody: accepted
  });
  const std::string path = dir.file("sampling.gguf");
  test::write_file_bytes(path, image);
  return path;
}

TEST(RunCommand, TheFilesSamplingKeysAreTheDefaultsAndFlagsOverrideThem) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string path = write_stories_with_sampling(dir);
  auto model = LanguageModel::load(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const GenerateParams d = (*model)->default_params();
  EXPECT_EQ(d.temperature, 0.0f);
  EXPECT_EQ(d.top_k, 7);
  EXPECT_EQ(d.top_p, GenerateParams{}.top_p);  // not in the file: llama.cpp's
  EXPECT_EQ(d.seed, kRandomSeed);
  // No --temp: the file's temperature 0, so the greedy story whatever the seed.
  const std::string args = "-m " + shell_quote(path) + " -p 'Once upon a time' -n 48 ";
  const CommandResult file_default = run_minfer_run(args + "--seed 5 --cache-type f32");
  ASSERT_EQ(file_default.exit_code, 0) << file_default.err;
  EXPECT_EQ(file_default.out, golden()["greedy_text"].get<std::string>());
  // --temp overrides it.
  const CommandResult hot = run_minfer_run(args + "--temp 1.5 --top-k 0 --seed 5");
  ASSERT_EQ(hot.exit_code, 0) << hot.err;
  EXPECT_NE(hot.out, golden()["greedy_text"].get<std::string>());
}

TEST(RunCommand, TheSeedIsRandomUnlessGivenAndVerboseSaysWhichRepeatsTheRun) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult a = run_minfer_run(stories() + "-n 32 --temp 1 --verbose");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const size_t at = a.err.find("seed: ");
  ASSERT_NE(at, std::string::npos) << a.err;
  const std::string seed = a.err.substr(at + 6, a.err.find(' ', at + 6) - (at + 6));
  const CommandResult again = run_minfer_run(stories() + "-n 32 --temp 1 --seed " + seed);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, a.out) << "seed " << seed;
  // Unseeded runs differ (the chance that three 32-token samples at temperature 1 agree is nil).
  const CommandResult b = run_minfer_run(stories() + "-n 32 --temp 1");
  const CommandResult c = run_minfer_run(stories() + "-n 32 --temp 1");
  EXPECT_FALSE(a.out == b.out && b.out == c.out);
}

TEST(RunCommand, AStopStringEndsTheTextAndIsNotPrinted) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r = run_minfer_run(stories() + "-n 48 --temp 0 --stop xyz --stop ' named'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ", there was a little girl");
  EXPECT_NE(r.err.find("stopped: stop string \" named\""), std::string::npos) << r.err;
}

TEST(RunCommand, NStopsAfterThatManyTokens) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r = run_minfer_run(stories() + "-n 5 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ", there was a little");
  EXPECT_NE(r.err.find("token limit (-n) reached (5 tokens)"), std::string::npos) << r.err;
}

TEST(RunCommand, AnEndOfGenerationTokenStops) {
  MINFER_REQUIRE_TEST_DATA();
  // Token 2 is stories260K's EOS; the bias makes it the greedy choice at once.
  const CommandResult r = run_minfer_run(stories() + "--temp 0 --logit-bias 2+100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("stopped: end-of-generation token"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generated tokens:    1"), std::string::npos) << r.err;
}

TEST(RunCommand, AFullContextStopsAndSaysSo) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r = run_minfer_run(stories() + "-c 12 --temp 0 --cache-type f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopped: context full (n_ctx 12)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generated tokens:    7"), std::string::npos) << r.err;
  EXPECT_TRUE(starts_with(golden()["greedy_text"].get<std::string>(), r.out)) << r.out;

  const CommandResult too_long = run_minfer_run(stories() + "-c 4 --temp 0");
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_EQ(count_lines(too_long.err), 1u) << too_long.err;
  EXPECT_NE(too_long.err.find("does not fit the context"), std::string::npos) << too_long.err;
}

TEST(RunCommand, VerbosePrintsTheModelKernelsThreadsAndCacheType) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r = run_minfer_run(stories() + "-n 2 --temp 0 --verbose --cache-type f16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"arch:         llama", "n_layer:      5", "n_vocab:      512",
        "kernels:      ", "threads:      2", "cache type:   f16", "stories260K.gguf"}) {
    EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
  }
}

TEST(RunCommand, BadFlagsAndFilesAreOneLineErrors) {
  MINFER_REQUIRE_TEST_DATA();
  for (const std::string& args :
       {stories() + "--no-such-flag", stories() + "stray", stories() + "--cache-type f8",
        stories() + "--top-p 3", stories() + "--logit-bias 2x5", stories() + "-sys",
        std::string("-m /nonexistent.gguf -p hi"),
        std::string("-m ") + shell_quote(model_path("stories260K.gguf")),
        stories() + "-sys 'no chat'"}) {
    const CommandResult r = run_minfer_run(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(count_lines(r.err), 1u) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

// --- chat: the qwen2.5 tokenizer and template ---------------------------------------------------

const char* kQwen = "qwen2.5-qwentok-tiny-q8_0.gguf";

// Token ids of what `minfer template` renders for `request`, via `minfer tokenize --special`.
std::vector<int32_t> rendered_tokens(const test::TempDir& dir, const json& request) {
  std::ofstream(dir.file("req.json")) << request.dump();
  const CommandResult t =
      run_command(minfer_binary() + " template -m " + shell_quote(model_path(kQwen)) + " -i " +
                  shell_quote(dir.file("req.json")));
  std::ofstream(dir.file("prompt.txt"), std::ios::binary) << t.out;
  EXPECT_EQ(t.exit_code, 0) << t.err;
  const CommandResult k =
      run_command(minfer_binary() + " tokenize -m " + shell_quote(model_path(kQwen)) + " -f " +
                  shell_quote(dir.file("prompt.txt")) + " --special --ids");
  EXPECT_EQ(k.exit_code, 0) << k.err;
  const std::vector<int32_t> ids = json::parse(k.out).get<std::vector<int32_t>>();
  EXPECT_FALSE(ids.empty()) << request.dump() << "\n" << t.err << k.err;
  return ids;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

json message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

// "turn N: prefilled P tokens (R reused)" lines of --verbose, in order: {P, R}.
std::vector<std::pair<int, int>> turn_reports(const std::string& err) {
  // Parsed with sscanf, not std::regex: GCC 12's sanitizer builds warn (falsely) inside
  // <regex>, and CI treats warnings as errors.
  std::vector<std::pair<int, int>> out;
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    int turn = 0, prefilled = 0, reused = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "turn %d: prefilled %d tokens (%d reused%c", &turn, &prefilled,
                    &reused, &tail) == 4 &&
        tail == ')') {
      out.emplace_back(prefilled, reused);
    }
  }
  return out;
}

TEST(RunCommand, ChatRendersThePromptThroughTheTemplateWithASystemMessage) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const CommandResult r =
      run_minfer_run("-m " + shell_quote(model_path(kQwen)) +
                     " --chat -sys 'You are terse.' -p 'Hi there' -n 4 --temp 0 "
                     "--verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<int32_t> expected = rendered_tokens(
      dir, {{"messages",
             json::array({message("system", "You are terse."), message("user", "Hi there")})},
            {"add_generation_prompt", true}});
  EXPECT_NE(r.err.find("prompt tokens: " + std::to_string(expected.size()) + "\n"),
            std::string::npos)
      << expected.size() << "\n"
      << r.err;
}

TEST(ChatCommand, TheSecondTurnPrefillsOnlyItsNewTokens) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string user1 = "Hello there";
  const std::string user2 = "How are you today?";
  // The first reply, from `run --chat` (the same template, prompt and greedy draw).
  const CommandResult first = run_minfer_run("-m " + shell_quote(model_path(kQwen)) +
                                             " --chat -p " + shell_quote(user1) + " -n 8 --temp 0");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string reply1 = first.out;

  const CommandResult r =
      run_minfer_chat(user1 + "\n" + user2 + "\n",
                      "-m " + shell_quote(model_path(kQwen)) + " -n 8 --temp 0 --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(starts_with(r.out, reply1 + "\n")) << r.out;
  const auto reports = turn_reports(r.err);
  ASSERT_EQ(reports.size(), 2u) << r.err;

  const std::vector<int32_t> turn1 = rendered_tokens(
      dir, {{"messages", json::array({message("user", user1)})}, {"add_generation_prompt", true}});
  EXPECT_EQ(reports[0].first, static_cast<int>(turn1.size()));
  EXPECT_EQ(reports[0].second, 0);

  // After turn 1 the cache holds the conversation exactly as the template closes it; turn 2's
  // prompt shares that prefix, and only the rest is new.
  const std::vector<int32_t> closed = rendered_tokens(
      dir, {{"messages", json::array({message("user", user1), message("assistant", reply1)})},
            {"add_generation_prompt", false}});
  const std::vector<int32_t> turn2 = rendered_tokens(
      dir, {{"messages", json::array({message("user", user1), message("assistant", reply1),
                                      message("user", user2)})},
            {"add_generation_prompt", true}});
  const size_t shared = common_prefix(closed, turn2);
  ASSERT_GT(shared, turn1.size());
  EXPECT_EQ(reports[1].first, static_cast<int>(turn2.size() - shared)) << r.err;
  EXPECT_EQ(reports[1].second, static_cast<int>(shared)) << r.err;
  EXPECT_LT(reports[1].first, 20);  // the new user message and its markup, nothing earlier
}

TEST(ChatCommand, RegenAndClearReuseAndResetTheCache) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r =
      run_minfer_chat("Hello\n/regen\n/help\n/clear\nHello\n/bogus\n",
                      "-m " + shell_quote(model_path(kQwen)) + " -n 6 --temp 0 --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto reports = turn_reports(r.err);
  ASSERT_EQ(reports.size(), 3u) << r.err;
  // /regen: the same prompt again, all of it held but its last token.
  EXPECT_EQ(reports[1].first, 1);
  EXPECT_EQ(reports[1].second, reports[0].first - 1);
  // /clear: nothing reused.
  EXPECT_EQ(reports[2], reports[0]);
  // Greedy: the regenerated and the post-clear replies equal the first (each ends in '\n').
  ASSERT_EQ(r.out.size() % 3, 0u) << r.out;
  const size_t n = r.out.size() / 3;
  EXPECT_EQ(r.out.substr(0, n), r.out.substr(n, n));
  EXPECT_EQ(r.out.substr(0, n), r.out.substr(2 * n, n));
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_NE(r.err.find("/regen"), std::string::npos);  // the /help text
  EXPECT_NE(r.err.find("conversation cleared"), std::string::npos);
  EXPECT_NE(r.err.find("unknown command '/bogus'"), std::string::npos);
}

TEST(ChatCommand, AFullContextDropsTheOldestTurnWithAMessage) {
  MINFER_REQUIRE_TEST_DATA();
  const CommandResult r = run_minfer_chat(
      "first message here\nsecond message here\nthird message here\nfourth message here\n",
      "-m " + shell_quote(model_path(kQwen)) + " -c 80 -n 8 --temp 0 --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dropped the oldest turn"), std::string::npos) << r.err;
  const auto reports = turn_reports(r.err);
  ASSERT_EQ(reports.size(), 4u) << r.err;
  for (const auto& [prefilled, reused] : reports) {
    EXPECT_LE(prefilled + reused + 8, 80) << r.err;  // the prompt and the reply fit
  }
  // A turn after a drop keeps the system prompt's tokens but not the dropped turn's.
  bool saw_drop_reuse = false;
  for (size_t i = 1; i < reports.size(); ++i) {
    if (reports[i].second < reports[i - 1].first + reports[i - 1].second) saw_drop_reuse = true;
  }
  EXPECT_TRUE(saw_drop_reuse) << r.err;
  EXPECT_EQ(count_lines(r.out), 4u) << r.out;
}

TEST(ChatCommand, AMessageLongerThanTheContextIsRefusedNotFatal) {
  MINFER_REQUIRE_TEST_DATA();
  std::string long_message;
  for (int i = 0; i < 40; ++i) long_message += "lorem ipsum dolor ";
  const CommandResult r =
      run_minfer_chat(long_message + "\nhi\n",
                      "-m " + shell_quote(model_path(kQwen)) + " -c 64 -n 4 --temp 0 --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("does not fit the context"), std::string::npos) << r.err;
  EXPECT_EQ(turn_reports(r.err).size(), 1u) << r.err;
}

TEST(ChatCommand, CtrlCStopsTheReplyNotTheProgramAndTwiceAtThePromptLeaves) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  // A reply that would run for minutes (a huge context, no -n) is interrupted once it has
  // started; then two interrupts at the prompt. stdin is a FIFO held open, so only the interrupts
  // can end the program. Each step waits for the output of the one before (no fixed sleeps).
  const std::string fifo = shell_quote(dir.file("in"));
  const std::string out = shell_quote(dir.file("out"));
  const std::string err = shell_quote(dir.file("err"));
  auto wait_for = [&](const std::string& test) {
    return "i=0; until " + test + " || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; ";
  };
  // The last wait is bounded too: a program that failed to leave is killed (exit 137).
  const std::string script =
      "mkfifo " + fifo + " && (" + minfer_binary() + " chat -t 1 -m " +
      shell_quote(model_path("stories260K.gguf")) + " -c 200000 --temp 0 --verbose < " + fifo +
      " > " + out + " 2> " + err + " & pid=$!; exec 3>" + fifo + "; echo 'Once upon a time' >&3; " +
      wait_for("[ -s " + out + " ]") + "kill -INT $pid; " +
      wait_for("grep -q 'reply stopped' " + err) + "kill -INT $pid; " +
      wait_for("grep -q 'Ctrl-C again' " + err) + "kill -INT $pid; " +
      wait_for("! kill -0 $pid 2>/dev/null") + "kill -9 $pid 2>/dev/null; wait $pid; rc=$?; " +
      "exec 3>&-; cat " + out + "; cat " + err + " >&2; exit $rc)";
  const CommandResult r = run_command(script);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopped: cancelled"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(reply stopped)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Ctrl-C again"), std::string::npos) << r.err;
  EXPECT_FALSE(r.out.empty());
}

// `chat --spec-ngram N` and `chat -md DRAFT`: greedy replies are those of plain decoding, turn
// after turn, and --verbose reports each turn's drafts; sampled with the model as its own draft,
// every draft is kept (q = p).
TEST(ChatCommand, SpeculativeDecodingGivesThePlainGreedyReplies) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string model = "-m " + shell_quote(model_path(kQwen)) + " -n 12 --temp 0 --verbose ";
  const std::string lines = "Hello there\nSay it again\n";
  const CommandResult plain = run_minfer_chat(lines, model);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("speculative"), std::string::npos) << plain.err;
  for (const std::string& spec : {std::string("--spec-ngram 1"),
                                  "-md " + shell_quote(model_path(kQwen)) + " --draft-max 4"}) {
    SCOPED_TRACE(spec);
    const CommandResult r = run_minfer_chat(lines, model + spec);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out);
    EXPECT_EQ(turn_reports(r.err), turn_reports(plain.err));
  }
  const CommandResult self = run_minfer_chat(
      lines, "-m " + shell_quote(model_path(kQwen)) + " -n 12 --temp 0.8 --seed 5 --verbose -md " +
                 shell_quote(model_path(kQwen)) + " --draft-max 4");
  ASSERT_EQ(self.exit_code, 0) << self.err;
  int turns = 0;
  std::istringstream err(self.err);
  for (std::string line; std::getline(err, line);) {
    long long turn = 0, drafted = 0, accepted = 0;
    if (std::sscanf(line.c_str(), "turn %lld: speculative: %lld drafted, %lld accepted", &turn,
                    &drafted, &accepted) != 3) {
      continue;
    }
    ++turns;
    EXPECT_GT(drafted, 0) << line;
    EXPECT_GE(accepted, drafted - 4) << line;  // all but drafts past the 12th token
  }
  EXPECT_EQ(turns, 2) << self.err;
}

}  // namespace
}  // namespace minfer
