// --profile's accounting: every node of every step is counted under its op (the graph's own op
// counts times the steps), and the op times are parts of the step time, never more than it.
// How close they come to it (the executor's own bookkeeping is the rest) is a figure, printed
// here and measured by the benchmarks, not asserted: it depends on the machine's load.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "engine/runtime.h"
#include "graph/observe.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

// Nodes per op of a graph, by op name.
std::map<std::string, int64_t> ops_of(const Graph& graph) {
  std::map<std::string, int64_t> count;
  for (const Node& node : graph.nodes) ++count[op_name(node.op)];
  return count;
}

TEST(Profile, EveryNodeIsCountedAndOpTimesArePartsOfTheStep) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::RuntimeOptions options;
  options.n_threads = 1;
  options.n_ctx = 128;
  options.n_ctx_total = 16 * 32;
  auto runtime = engine::Runtime::create(**model, options);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  engine::StepRunner& forward = (*runtime)->runner();
  // A warm-up on another sequence builds the graphs and sizes the buffers (work the profile
  // rightly does not attribute to any op).
  Batch warm_prompt, warm_one;
  for (int32_t p = 0; p < 32; ++p) warm_prompt.add(p, p, 1, p == 31);
  warm_one.add(1, 32, 1, true);
  ASSERT_TRUE(forward.step(warm_prompt).is_ok());
  ASSERT_TRUE(forward.step(warm_one).is_ok());
  OpProfile profile;
  RunObservers observers;
  observers.profile = &profile;
  forward.set_observers(&observers);
  constexpr int64_t kPrefillSteps = 4;
  constexpr int64_t kDecodeSteps = 64;
  for (int32_t chunk = 0; chunk < kPrefillSteps; ++chunk) {
    Batch prompt;
    for (int32_t p = 0; p < 32; ++p) prompt.add((p * 7 + chunk) % 1000, p, 2 + chunk, p == 31);
    ASSERT_TRUE(forward.step(prompt).is_ok());
  }
  for (int32_t p = 0; p < kDecodeSteps; ++p) {
    Batch one;
    one.add(p * 13 % 1000, p, 0, true);
    ASSERT_TRUE(forward.step(one).is_ok());
  }
  // The graphs those steps ran, built the same way (fusion included) for their shapes.
  Graph prefill = (*model)->build_graph(32, 1);
  Graph decode = (*model)->build_graph(1, 1);
  fuse_swiglu(prefill);
  fuse_swiglu(decode);
  for (const auto& [kind, graph, n_steps] :
       {std::tuple{StepKind::kPrefill, &prefill, kPrefillSteps},
        std::tuple{StepKind::kDecode, &decode, kDecodeSteps}}) {
    EXPECT_EQ(profile.n_steps(kind), n_steps);
    const std::map<std::string, int64_t> ops = ops_of(*graph);
    ASSERT_FALSE(ops.empty());
    for (const auto& [op, n] : ops) {
      EXPECT_EQ(profile.n_calls(kind, op), n * n_steps) << step_kind_name(kind) << " " << op;
    }
    const double nodes = profile.total_node_seconds(kind);
    const double steps = profile.total_step_seconds(kind);
    ASSERT_GT(steps, 0.0);
    std::printf("[profile] %s: ops %.3f ms of %.3f ms (%.1f%%)\n", step_kind_name(kind),
                nodes * 1e3, steps * 1e3, 100.0 * nodes / steps);
    // Each node's time is measured inside its step's: their sum cannot exceed it.
    EXPECT_LE(nodes, steps);
  }
}

// A decode step's fixed costs grow with its pool dispatches: each wakes the workers and waits at
// a barrier. Only the matmuls and attention carry enough work for one; Qwen3's per-head q/k
// norms (a few heads of one token) run on the calling thread.
TEST(Profile, ADecodeStepWakesThePoolOnlyForMatmulsAndAttention) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::RuntimeOptions options;
  options.n_threads = 2;
  options.n_ctx = 64;
  auto runtime = engine::Runtime::create(**model, options);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  Batch prompt;
  for (int32_t p = 0; p < 8; ++p) prompt.add(p + 3, p, 0, p == 7);
  ASSERT_TRUE((*runtime)->step(prompt).is_ok());
  Graph decode = (*model)->build_graph(1, 1);
  fuse_swiglu(decode);
  // Consecutive matmuls of one input (q, k, v; gate, up) run as one dispatch.
  int64_t heavy = 0;
  int64_t per_head_norms = 0;
  for (size_t i = 0; i < decode.nodes.size(); ++i) {
    const Node& node = decode.nodes[i];
    const bool grouped = i > 0 && node.op == OpKind::kMatmul &&
                         decode.nodes[i - 1].op == OpKind::kMatmul &&
                         decode.nodes[i - 1].inputs[0] == node.inputs[0];
    heavy += (node.op == OpKind::kMatmul && !grouped) || node.op == OpKind::kAttention ? 1 : 0;
    per_head_norms += node.op == OpKind::kRmsNorm && node.group < node.cols ? 1 : 0;
  }
  ASSERT_GT(per_head_norms, 0) << "the model should have per-head q/k norms";
  const uint64_t before = (*runtime)->pool().n_dispatches();
  Batch one;
  one.add(11, 8, 0, true);
  ASSERT_TRUE((*runtime)->step(one).is_ok());
  const uint64_t dispatches = (*runtime)->pool().n_dispatches() - before;
  EXPECT_GT(dispatches, 0u);
  EXPECT_LE(dispatches, static_cast<uint64_t>(heavy));
}

}  // namespace
}  // namespace minfer
