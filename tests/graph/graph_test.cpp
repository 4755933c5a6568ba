#include "graph/graph.h"

#include <gtest/gtest.h>

#include "graph/weight_tensor.h"

namespace minfer {
namespace {

TEST(Graph, SwigluFusionReplacesSiluTimesUp) {
  WeightTensor embd{.name = "e", .n_cols = 8, .n_rows = 10};
  WeightTensor w{.name = "w", .n_cols = 8, .n_rows = 16};
  GraphBuilder g(3, 3);
  const NodeId x = g.get_rows("x", embd);
  const NodeId gate = g.matmul("gate", x, w);
  const NodeId up = g.matmul("up", x, w);
  const NodeId act = g.mul("act", g.silu("silu", gate), up);
  Graph graph = g.finish(act);
  fuse_swiglu(graph);
  ASSERT_EQ(graph.nodes.size(), 4u);
  const Node& fused = graph.nodes[static_cast<size_t>(graph.output)];
  EXPECT_EQ(fused.op, OpKind::kSwiglu);
  EXPECT_EQ(fused.name, "act");
  EXPECT_EQ(graph.nodes[static_cast<size_t>(fused.inputs[0])].name, "gate");
  EXPECT_EQ(graph.nodes[static_cast<size_t>(fused.inputs[1])].name, "up");
}

TEST(Graph, AllocatorReusesDeadBuffersAndRunsElementwiseOpsInPlace) {
  WeightTensor embd{.name = "e", .n_cols = 8, .n_rows = 10};
  WeightTensor w{.name = "w", .n_cols = 8, .n_rows = 8};
  GraphBuilder g(2, 2);
  const NodeId x = g.get_rows("x", embd);
  const NodeId a = g.matmul("a", x, w);
  const NodeId b = g.scale("b", a, 2.0f);  // a has no other reader: in place
  const NodeId c = g.matmul("c", b, w);    // b stays live (read by d)
  const NodeId d = g.add("d", b, c);       // in place over b
  const NodeId e = g.matmul("e", d, w);
  Graph graph = g.finish(e);
  const std::vector<int64_t> slots = allocate_buffers(graph);
  auto slot = [&](NodeId id) { return graph.nodes[static_cast<size_t>(id)].buffer; };
  EXPECT_EQ(slot(b), slot(a));
  EXPECT_EQ(slot(d), slot(b));
  EXPECT_NE(slot(c), slot(b));  // c is written while b is still needed
  // x is dead after a: its slot is reused later, so fewer slots than nodes.
  EXPECT_LT(slots.size(), graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    EXPECT_GE(slots[static_cast<size_t>(n.buffer)], n.rows * n.cols) << n.name;
  }
}

}  // namespace
}  // namespace minfer
