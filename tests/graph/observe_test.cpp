#include "graph/observe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "graph/weight_tensor.h"
#include "test_util.h"

namespace minfer {
namespace {

TEST(Observe, StatsCountNanAndInfAndAverageTheRest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.0f, -3.0f, nan, inf, 2.0f, -inf};
  const TensorStats s = tensor_stats(x, 3);
  EXPECT_EQ(s.n_nan, 1);
  EXPECT_EQ(s.n_inf, 2);
  EXPECT_EQ(s.min, -3.0f);
  EXPECT_EQ(s.max, 2.0f);
  EXPECT_DOUBLE_EQ(s.mean, 0.0);
  EXPECT_DOUBLE_EQ(s.mean_abs, 2.0);
  ASSERT_EQ(s.samples.size(), 3u);  // x[0], x[2], x[4]
  EXPECT_EQ(s.samples[0], 1.0f);
  EXPECT_TRUE(std::isnan(s.samples[1]));
  EXPECT_EQ(s.samples[2], 2.0f);
  // NaN samples become JSON null, so the trace stays valid JSON.
  EXPECT_TRUE(to_json(s)["samples"][1].is_null());
}

Graph tiny_graph() {
  static WeightTensor embd{.name = "token_embd.weight", .n_cols = 4, .n_rows = 10};
  static WeightTensor w{.name = "blk.0.attn_q.weight", .n_cols = 4, .n_rows = 4};
  GraphBuilder g(2, 2);
  const NodeId x = g.get_rows("token_embd", embd);
  return g.finish(g.matmul("blk.0.attn_q", x, w));
}

TEST(Observe, GraphDumpsNameNodesOpsShapesAndEdges) {
  const Graph graph = tiny_graph();
  const nlohmann::json j = graph_to_json(graph);
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][1]["name"], "blk.0.attn_q");
  EXPECT_EQ(j["nodes"][1]["op"], "matmul");
  EXPECT_EQ(j["nodes"][1]["inputs"], nlohmann::json::array({0}));
  EXPECT_EQ(j["nodes"][1]["weight"]["name"], "blk.0.attn_q.weight");
  const std::string dot = graph_to_dot(graph);
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos);
  test::TempDir dir;
  EXPECT_TRUE(write_step_graphs(&graph, &graph, dir.file("g.json")).is_ok());
  std::ifstream in(dir.file("g.json"));
  const nlohmann::json both = nlohmann::json::parse(in);
  EXPECT_EQ(both["prefill"]["nodes"].size(), 2u);
  EXPECT_EQ(both["decode"]["nodes"].size(), 2u);
  const Status bad = write_step_graphs(&graph, nullptr, dir.file("g.png"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("expected a .dot or .json file"), std::string::npos);
}

TEST(Observe, ProfileSumsTimePerOpAndStepKind) {
  const Graph graph = tiny_graph();
  OpProfile p;
  p.begin_step(StepKind::kPrefill);
  p.on_node(graph.nodes[0], 0.001);
  p.on_node(graph.nodes[1], 0.003);
  p.end_step(0.0045);
  p.begin_step(StepKind::kDecode);
  p.on_node(graph.nodes[1], 0.002);
  p.end_step(0.002);
  EXPECT_DOUBLE_EQ(p.total_node_seconds(StepKind::kPrefill), 0.004);
  EXPECT_DOUBLE_EQ(p.total_node_seconds(StepKind::kDecode), 0.002);
  const std::string table = p.table();
  EXPECT_NE(table.find("prefill (1 steps"), std::string::npos) << table;
  EXPECT_NE(table.find("decode (1 steps"), std::string::npos) << table;
  EXPECT_NE(table.find("matmul"), std::string::npos);
}

TEST(Observe, TraceWritesOneJsonLinePerStep) {
  const Graph graph = tiny_graph();
  test::TempDir dir;
  auto trace = TraceWriter::open(dir.file("t.jsonl"));
  ASSERT_TRUE(trace.is_ok());
  const std::vector<float> out = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int step = 0; step < 2; ++step) {
    (*trace)->begin_step(step == 0 ? StepKind::kPrefill : StepKind::kDecode, 2);
    (*trace)->on_node(graph.nodes[1], out, 0.5e-3);
    (*trace)->end_step(7, out);
  }
  std::ifstream in(dir.file("t.jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], n);
    EXPECT_EQ(j["token"], 7);
    EXPECT_EQ(j["top5"][0][0], 7);  // the largest of out is at index 7
    EXPECT_EQ(j["nodes"][0]["stats"]["max"], 8.0);
    ++n;
  }
  EXPECT_EQ(n, 2);
}

}  // namespace
}  // namespace minfer
