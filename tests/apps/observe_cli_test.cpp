// The observability tools end to end: traces, profiles, graph dumps and tensor dumps from
// `minfer logits`, and tools/diff_dumps.py finding where two runs part.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace minfer {
namespace {

const char* kIds = "17,253,999,4,88,500,12,640,321";  // 9 ids below qwen2-tiny's n_vocab 1000

std::string logits_command(const std::string& model, const std::string& extra) {
  return test::minfer_binary() + " logits -m " + test::test_data_path("models/" + model) +
         " --ids " + kIds + " --batch 4 " + extra;
}

std::string diff_dumps(const std::string& a, const std::string& b) {
  return std::string("python3 ") + MINFER_SOURCE_DIR + "/tools/diff_dumps.py " + a + " " + b;
}

TEST(ObserveCli, TraceProfileAndGraphDump) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const auto r = test::run_command(logits_command(
      "qwen2-tiny-f32.gguf", "-o " + dir.file("l.f32") + " --trace " + dir.file("t.jsonl") +
                                 " --profile " + "--dump-graph " + dir.file("g.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 9 ids in batches of 4, 4 and 1: two prefill steps and a one-token (decode) step, each a
  // JSON line with every node of its graph.
  std::ifstream trace(dir.file("t.jsonl"));
  std::string line;
  int steps = 0;
  while (std::getline(trace, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], steps);
    EXPECT_EQ(j["kind"], steps < 2 ? "prefill" : "decode");
    bool saw_attention = false;
    for (const auto& node : j["nodes"]) {
      if (node["op"] == "kv_store") {
        EXPECT_FALSE(node.contains("stats")) << "kv_store nodes carry no data";
        continue;
      }
      ASSERT_TRUE(node.contains("stats")) << node["name"];
      EXPECT_EQ(node["stats"]["n_nan"], 0);
      EXPECT_LE(node["stats"]["samples"].size(), 64u);
      EXPECT_GE(node["ms"].get<double>(), 0.0);
      saw_attention |= node["name"] == "blk.2.attn";
    }
    EXPECT_TRUE(saw_attention);
    EXPECT_EQ(j["top5"].size(), 5u);
    ++steps;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_NE(r.err.find("prefill (2 steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decode (1 steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("matmul"), std::string::npos);
  std::ifstream graph(dir.file("g.json"));
  const nlohmann::json g = nlohmann::json::parse(graph);
  EXPECT_GT(g["prefill"]["nodes"].size(), 30u);
  EXPECT_GT(g["decode"]["nodes"].size(), 30u);
}

// A greedy run's trace on stories260K: one line per step (the prompt's prefill, then a decode
// step per further token), every node with finite statistics, and each step's token equal to
// the top of its top-5, as greedy sampling requires.
TEST(ObserveCli, GreedyRunTraceOnStories260K) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const auto r = test::run_command(
      test::minfer_binary() + " run -m " + test::test_data_path("models/stories260K.gguf") +
      " -p 'Once upon a time' -n 6 --temp 0 --cache-type f32 --trace " + dir.file("t.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream trace(dir.file("t.jsonl"));
  std::string line;
  std::vector<int32_t> tokens;
  int steps = 0;
  while (std::getline(trace, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], steps);
    EXPECT_EQ(j["kind"], steps == 0 ? "prefill" : "decode");
    EXPECT_EQ(j["n_tokens"], steps == 0 ? 5 : 1);  // BOS + 4 prompt tokens, then one at a time
    ASSERT_EQ(j["nodes"].size(), 85u);  // 5 layers of 16 nodes + embedding, norm, output, …
    for (const auto& node : j["nodes"]) {
      if (node["op"] == "kv_store") continue;
      const auto& stats = node["stats"];
      EXPECT_EQ(stats["n_nan"], 0) << node["name"];
      EXPECT_EQ(stats["n_inf"], 0) << node["name"];
      EXPECT_LE(stats["min"].get<double>(), stats["mean"].get<double>()) << node["name"];
      EXPECT_LE(stats["mean"].get<double>(), stats["max"].get<double>()) << node["name"];
      EXPECT_EQ(stats["count"], node["shape"][0].get<int>() * node["shape"][1].get<int>());
    }
    ASSERT_EQ(j["top5"].size(), 5u);
    EXPECT_EQ(j["top5"][0][0], j["token"]) << "greedy picks the top logit";
    tokens.push_back(j["token"].get<int32_t>());
    ++steps;
  }
  EXPECT_EQ(steps, 6);
  // The golden story's first tokens (../shared/golden/stories260K.once.json).
  EXPECT_EQ(tokens, (std::vector<int32_t>{432, 383, 286, 261, 376, 298}));
}

// The first tensor where a q8_0 cache departs from an f32 one is the first attention output:
// everything before it is computed identically, and attention is the first op to read the cache.
TEST(ObserveCli, DumpDiffFindsWhereTheCacheTypeMatters) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  for (const char* type : {"f32", "q8_0"}) {
    const auto r = test::run_command(
        "MINFER_DUMP_DIR=" + dir.file(type) + " " +
        logits_command("qwen2-tiny-f32.gguf",
                       std::string("--cache-type ") + type + " -o " + dir.file("l.f32")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto diff = test::run_command(diff_dumps(dir.file("f32"), dir.file("q8_0")));
  EXPECT_EQ(diff.exit_code, 1) << diff.out << diff.err;
  EXPECT_NE(diff.out.find("first difference: step 0 (prefill) blk.0.attn op attention"),
            std::string::npos)
      << diff.out;
  const auto same = test::run_command(diff_dumps(dir.file("f32"), dir.file("f32")));
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("tensors match"), std::string::npos);
}

TEST(ObserveCli, DumpDiffFindsAnInjectedDifferenceInTheRightLayer) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const auto r =
      test::run_command("MINFER_DUMP_DIR=" + dir.file("a") + " " +
                        logits_command("qwen2-tiny-f32.gguf", "-o " + dir.file("l.f32")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::copy(dir.file("a"), dir.file("b"), std::filesystem::copy_options::recursive);
  // Perturb one element of layer 1's FFN up projection in the second step.
  const std::string victim = dir.file("b") + "/step_0001/blk.1.ffn_up.f32";
  std::vector<uint8_t> bytes = test::read_file_bytes(victim);
  ASSERT_GT(bytes.size(), 400u);
  float v;
  std::memcpy(&v, bytes.data() + 400, 4);
  v += 0.5f;
  std::memcpy(bytes.data() + 400, &v, 4);
  test::write_file_bytes(victim, bytes);
  const auto diff = test::run_command(diff_dumps(dir.file("a"), dir.file("b")));
  EXPECT_EQ(diff.exit_code, 1);
  EXPECT_NE(diff.out.find("step 1 (prefill) blk.1.ffn_up op matmul"), std::string::npos)
      << diff.out;
  EXPECT_NE(diff.out.find("at element 100"), std::string::npos) << diff.out;
}

TEST(ObserveCli, BadGraphDumpExtensionIsAnError) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const auto r = test::run_command(logits_command(
      "qwen2-tiny-f32.gguf", "-o " + dir.file("l.f32") + " --dump-graph " + dir.file("g.png")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("expected a .dot or .json file"), std::string::npos) << r.err;
}

// bench and perplexity take the same flags as logits and run (and MINFER_TRACE): a trace line
// per step, the profile table on stderr, both graphs dumped.
TEST(ObserveCli, BenchAndPerplexityTakeTheObserveFlags) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string model = test::test_data_path("models/stories260K.gguf");
  const auto bench = test::run_command(test::minfer_binary() + " bench -m " + model +
                                       " -p 8 -n 4 -r 1 -t 1 --profile --trace " +
                                       dir.file("b.jsonl") + " --dump-graph " + dir.file("b.json"));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.err.find("prefill ("), std::string::npos) << bench.err;
  EXPECT_NE(bench.err.find("decode ("), std::string::npos) << bench.err;
  // Warm-up and one run of each test: 2 prefill steps (8 tokens, one forward each) and 2 x 4
  // decode steps.
  std::ifstream trace(dir.file("b.jsonl"));
  std::string line;
  int prefill = 0, decode = 0;
  while (std::getline(trace, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    (j["kind"] == "prefill" ? prefill : decode) += 1;
  }
  EXPECT_EQ(prefill, 2);
  EXPECT_EQ(decode, 8);
  std::ifstream graphs(dir.file("b.json"));
  const nlohmann::json g = nlohmann::json::parse(graphs);
  EXPECT_FALSE(g["prefill"].is_null());
  EXPECT_FALSE(g["decode"].is_null());

  const auto ppl = test::run_command("MINFER_TRACE=" + dir.file("p.jsonl") + " " +
                                     test::minfer_binary() + " perplexity -m " + model + " -f " +
                                     test::test_data_path("golden/perplexity/tinystory.txt") +
                                     " -c 128 -b 64 --chunks 1 -t 1 --profile");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_NE(ppl.err.find("prefill ("), std::string::npos) << ppl.err;
  std::ifstream ppl_trace(dir.file("p.jsonl"));
  int lines = 0;
  while (std::getline(ppl_trace, line)) ++lines;
  EXPECT_EQ(lines, 2);  // one chunk of 128 tokens in forwards of 64
}

}  // namespace
}  // namespace minfer
