#include "graph/graph.h"

#include <algorithm>
#include <initializer_list>

#include "core/check.h"
#include "core/enum_names.h"
#include "graph/weight_tensor.h"

namespace minfer {

namespace {
constexpr std::array<const char*, 20> kOpNames = {
    "get_rows", "rms_norm", "matmul",  "add_row",      "add",       "mul",         "silu",
    "swiglu",   "scale",    "rope",    "kv_store",     "attention", "select_rows", "geglu",
    "softcap",  "moe_ffn",  "columns", "sigmoid_gate", "ssm_conv",  "delta_net"};
static_assert(kOpNames.size() == static_cast<size_t>(OpKind::kDeltaNet) + 1);
}  // namespace

const char* op_name(OpKind op) {
  return enum_name(kOpNames, op, "?");
}

bool op_can_run_in_place(OpKind op) {
  switch (op) {
    case OpKind::kRmsNorm:
    case OpKind::kAddRow:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSilu:
    case OpKind::kSwiglu:
    case OpKind::kGeglu:
    case OpKind::kSoftcap:
    case OpKind::kScale:
    case OpKind::kRope:
    case OpKind::kSigmoidGate:
      return true;
    default:
      return false;
  }
}

namespace {
// A node of op with output [rows, cols] read from inputs; the caller sets the op's parameters.
Node make_node(OpKind op, const std::string& name, int64_t rows, int64_t cols,
               std::vector<NodeId> inputs) {
  Node n;
  n.op = op;
  n.name = name;
  n.rows = rows;
  n.cols = cols;
  n.inputs = std::move(inputs);
  return n;
}
}  // namespace

NodeId GraphBuilder::push(Node node) {
  for (NodeId in : node.inputs) {
    MINFER_CHECK(in >= 0 && in < static_cast<NodeId>(graph_.nodes.size()), "bad graph input");
  }
  graph_.nodes.push_back(std::move(node));
  return static_cast<NodeId>(graph_.nodes.size() - 1);
}

NodeId GraphBuilder::get_rows(const std::string& name, const WeightTensor& embedding) {
  Node n = make_node(OpKind::kGetRows, name, n_tokens_, embedding.n_cols, {});
  n.weight = &embedding;
  return push(std::move(n));
}

NodeId GraphBuilder::rms_norm(const std::string& name, NodeId x, const WeightTensor& w, float eps,
                              int64_t group) {
  const Node& in = node(x);
  Node n = make_node(OpKind::kRmsNorm, name, in.rows, in.cols, {x});
  n.weight = &w;
  n.eps = eps;
  n.group = group > 0 ? group : in.cols;
  MINFER_CHECK(n.cols % n.group == 0 && w.n_cols == n.group, "rms_norm group/weight mismatch");
  return push(std::move(n));
}

NodeId GraphBuilder::matmul(const std::string& name, NodeId x, const WeightTensor& w) {
  const Node& in = node(x);
  MINFER_CHECK(in.cols == w.n_cols, "matmul input width != weight row length");
  Node n = make_node(OpKind::kMatmul, name, in.rows, w.n_rows, {x});
  n.weight = &w;
  return push(std::move(n));
}

NodeId GraphBuilder::add_row(const std::string& name, NodeId x, const WeightTensor& b) {
  const Node& in = node(x);
  MINFER_CHECK(in.cols == b.n_cols, "bias width mismatch");
  Node n = make_node(OpKind::kAddRow, name, in.rows, in.cols, {x});
  n.weight = &b;
  return push(std::move(n));
}

namespace {
Node binary(OpKind op, const std::string& name, const Node& a, NodeId ia, const Node& b,
            NodeId ib) {
  MINFER_CHECK(a.rows == b.rows && a.cols == b.cols, "binary op shape mismatch");
  return make_node(op, name, a.rows, a.cols, {ia, ib});
}
}  // namespace

NodeId GraphBuilder::add(const std::string& name, NodeId a, NodeId b) {
  return push(binary(OpKind::kAdd, name, node(a), a, node(b), b));
}

NodeId GraphBuilder::mul(const std::string& name, NodeId a, NodeId b) {
  return push(binary(OpKind::kMul, name, node(a), a, node(b), b));
}

NodeId GraphBuilder::silu(const std::string& name, NodeId x) {
  const Node& in = node(x);
  return push(make_node(OpKind::kSilu, name, in.rows, in.cols, {x}));
}

NodeId GraphBuilder::geglu(const std::string& name, NodeId gate, NodeId up) {
  return push(binary(OpKind::kGeglu, name, node(gate), gate, node(up), up));
}

NodeId GraphBuilder::softcap(const std::string& name, NodeId x, float cap) {
  NodeId id = scale(name, x, cap);
  graph_.nodes[static_cast<size_t>(id)].op = OpKind::kSoftcap;
  return id;
}

NodeId GraphBuilder::scale(const std::string& name, NodeId x, float s) {
  const Node& in = node(x);
  Node n = make_node(OpKind::kScale, name, in.rows, in.cols, {x});
  n.scale = s;
  return push(std::move(n));
}

NodeId GraphBuilder::rope(const std::string& name, NodeId x, int64_t n_head, int64_t head_dim,
                          const kernels::RopeConfig& config) {
  const Node& in = node(x);
  MINFER_CHECK(in.cols == n_head * head_dim && in.rows == n_tokens_, "rope shape mismatch");
  Node n = make_node(OpKind::kRope, name, in.rows, in.cols, {x});
  n.n_head = n_head;
  n.group = head_dim;
  n.rope = config;
  return push(std::move(n));
}

void GraphBuilder::kv_store(const std::string& name, NodeId k, NodeId v, int64_t il) {
  Node n = make_node(OpKind::kKvStore, name, 0, 0, {k, v});  // no output
  n.il = il;
  push(std::move(n));
}

NodeId GraphBuilder::attention(const std::string& name, NodeId q, int64_t il, int64_t n_head,
                               int64_t head_dim, int64_t head_dim_v, float scale, int64_t window,
                               const WeightTensor* sinks) {
  const Node& in = node(q);
  MINFER_CHECK(in.cols == n_head * head_dim, "attention q width mismatch");
  MINFER_CHECK(sinks == nullptr || (sinks->n_cols == n_head && sinks->type == GgmlType::kF32),
               "attention: sinks must be [n_head] f32");
  Node n = make_node(OpKind::kAttention, name, in.rows, n_head * head_dim_v, {q});
  n.il = il;
  n.n_head = n_head;
  n.group = head_dim;
  n.scale = scale;
  n.window = window;
  n.weight = sinks;
  return push(std::move(n));
}

NodeId GraphBuilder::select_rows(const std::string& name, NodeId x) {
  const Node& in = node(x);
  return push(make_node(OpKind::kSelectRows, name, n_outputs_, in.cols, {x}));
}

namespace {
// The expert checks moe_ffn and moe_geglu share (one message for each, whichever op): every
// input-side expert matrix (gate and up, or gate_up) reads rows of x's width and has ffn_rows
// rows (down's input width; twice that for gate_up), down writes rows of x's width, the router
// gives one logit per expert for every row of x, every expert tensor holds one matrix per
// expert, and 1 <= n_used <= n_expert.
void check_experts(const Node& in, const Node& logits,
                   std::initializer_list<const WeightTensor*> in_side, const WeightTensor& down,
                   int64_t ffn_rows, int64_t n_used) {
  MINFER_CHECK(in.cols == down.n_rows, "moe_ffn / moe_geglu: input width != expert widths");
  MINFER_CHECK(logits.rows == in.rows && logits.cols == down.n_mats,
               "moe_ffn / moe_geglu: router and expert counts differ");
  for (const WeightTensor* w : in_side) {
    MINFER_CHECK(in.cols == w->n_cols, "moe_ffn / moe_geglu: input width != expert widths");
    MINFER_CHECK(w->n_rows == ffn_rows, "moe_ffn / moe_geglu: expert FFN widths differ");
    MINFER_CHECK(w->n_mats == down.n_mats, "moe_ffn / moe_geglu: router and expert counts differ");
  }
  MINFER_CHECK(n_used >= 1 && n_used <= down.n_mats, "moe_ffn / moe_geglu: bad expert_used_count");
}
}  // namespace

NodeId GraphBuilder::moe_ffn(const std::string& name, NodeId x, NodeId router_logits,
                             const WeightTensor& gate, const WeightTensor& up,
                             const WeightTensor& down, int64_t n_used, const MoeVariant& variant) {
  const Node& in = node(x);
  check_experts(in, node(router_logits), {&gate, &up}, down, down.n_cols, n_used);
  for (size_t i = 0; i < variant.biases.size(); ++i) {
    const WeightTensor* b = variant.biases[i];
    const int64_t width = i < 2 ? gate.n_rows : down.n_rows;
    MINFER_CHECK(b == nullptr || (b->type == GgmlType::kF32 && b->n_cols == width &&
                                  b->n_rows * b->n_mats == gate.n_mats),
                 "moe_ffn: an expert bias is not [n_expert][width] f32");
  }
  Node n = make_node(OpKind::kMoeFfn, name, in.rows, in.cols, {x, router_logits});
  n.experts = {&gate, &up, &down};
  n.n_used = n_used;
  n.moe = variant;
  return push(std::move(n));
}

NodeId GraphBuilder::moe_geglu(const std::string& name, NodeId x, NodeId router_logits,
                               const WeightTensor& gate_up, const WeightTensor& down,
                               const WeightTensor& scale, int64_t n_used) {
  const Node& in = node(x);
  check_experts(in, node(router_logits), {&gate_up}, down, 2 * down.n_cols, n_used);
  MINFER_CHECK(scale.n_cols == down.n_mats, "moe_geglu: scale and expert counts differ");
  Node n = make_node(OpKind::kMoeFfn, name, in.rows, in.cols, {x, router_logits});
  n.experts = {&gate_up, nullptr, &down};
  n.weight = &scale;
  n.gelu = true;
  n.n_used = n_used;
  return push(std::move(n));
}

NodeId GraphBuilder::columns(const std::string& name, NodeId x, int64_t n_groups, int64_t offset,
                             int64_t width) {
  const Node& in = node(x);
  MINFER_CHECK(n_groups > 0 && in.cols % n_groups == 0 && offset >= 0 &&
                   offset + width <= in.cols / n_groups,
               "columns: range outside the groups");
  Node n = make_node(OpKind::kColumns, name, in.rows, n_groups * width, {x});
  n.n_head = n_groups;
  n.group = in.cols / n_groups;
  n.offset = offset;
  return push(std::move(n));
}

NodeId GraphBuilder::sigmoid_gate(const std::string& name, NodeId x, NodeId g) {
  const Node& in = node(x);
  const Node& gate = node(g);
  MINFER_CHECK(in.rows == gate.rows && gate.cols > 0 && in.cols % gate.cols == 0,
               "sigmoid_gate: gate shape mismatch");
  return push(make_node(OpKind::kSigmoidGate, name, in.rows, in.cols, {x, g}));
}

NodeId GraphBuilder::ssm_conv(const std::string& name, NodeId x, const WeightTensor& taps,
                              int64_t il) {
  const Node& in = node(x);
  MINFER_CHECK(in.rows == n_tokens_ && taps.n_rows == in.cols && taps.type == GgmlType::kF32,
               "ssm_conv: taps do not match the channels");
  Node n = make_node(OpKind::kSsmConv, name, in.rows, in.cols, {x});
  n.weight = &taps;
  n.il = il;
  return push(std::move(n));
}

NodeId GraphBuilder::delta_net(const std::string& name, NodeId qkv, NodeId alpha, NodeId beta,
                               const WeightTensor& dt_bias, const WeightTensor& a, int64_t il,
                               int64_t n_k_heads, int64_t n_v_heads, int64_t d_state, float eps) {
  const Node& in = node(qkv);
  MINFER_CHECK(in.rows == n_tokens_ && in.cols == (2 * n_k_heads + n_v_heads) * d_state &&
                   n_v_heads % n_k_heads == 0,
               "delta_net: qkv width mismatch");
  MINFER_CHECK(node(alpha).cols == n_v_heads && node(beta).cols == n_v_heads &&
                   dt_bias.n_cols == n_v_heads && a.n_cols == n_v_heads,
               "delta_net: gate widths mismatch");
  Node n = make_node(OpKind::kDeltaNet, name, in.rows, n_v_heads * d_state, {qkv, alpha, beta});
  n.gates = {&dt_bias, &a};
  n.il = il;
  n.n_head = n_v_heads;
  n.n_k_heads = n_k_heads;
  n.group = d_state;
  n.eps = eps;
  return push(std::move(n));
}

Graph GraphBuilder::finish(NodeId output) {
  graph_.output = output;
  Graph out = std::move(graph_);
  graph_ = Graph{};
  return out;
}

namespace {

// consumers[i] = the nodes that read node i.
std::vector<std::vector<NodeId>> consumers_of(const Graph& graph) {
  std::vector<std::vector<NodeId>> consumers(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (NodeId in : graph.nodes[i].inputs) {
      consumers[static_cast<size_t>(in)].push_back(static_cast<NodeId>(i));
    }
  }
  return consumers;
}

}  // namespace

std::vector<WeightRead> weight_reads(const Graph& graph) {
  std::vector<WeightRead> reads;
  for (const Node& node : graph.nodes) {
    if (node.op == OpKind::kMoeFfn) {
      // Each token reads the matrices of its n_used experts: at most n_tokens · n_used of them.
      const int64_t n_read = std::min(node.rows * node.n_used, node.experts[0]->n_mats);
      for (const WeightTensor* e : node.experts) {
        if (e == nullptr) continue;
        reads.push_back({e, static_cast<uint64_t>(n_read * e->n_rows) * e->row_bytes, true});
      }
      continue;
    }
    const WeightTensor* w = node.weight;
    if (w == nullptr) continue;
    // get_rows reads one row per token; every other op reads its whole weight.
    const int64_t rows = node.op == OpKind::kGetRows ? node.rows : w->n_rows;
    reads.push_back({w, static_cast<uint64_t>(rows) * w->row_bytes, node.op == OpKind::kMatmul});
  }
  return reads;
}

uint64_t weight_bytes_read(const Graph& graph) {
  uint64_t bytes = 0;
  for (const WeightRead& r : weight_reads(graph)) bytes += r.bytes;
  return bytes;
}

void fuse_swiglu(Graph& graph) {
  const std::vector<std::vector<NodeId>> consumers = consumers_of(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& mul = graph.nodes[i];
    if (mul.op != OpKind::kMul) continue;
    const NodeId silu_id = mul.inputs[0];
    const Node& silu = graph.nodes[static_cast<size_t>(silu_id)];
    if (silu.op != OpKind::kSilu || consumers[static_cast<size_t>(silu_id)].size() != 1 ||
        silu_id == graph.output) {
      continue;
    }
    mul.op = OpKind::kSwiglu;
    mul.inputs = {silu.inputs[0], mul.inputs[1]};
    dead[static_cast<size_t>(silu_id)] = true;
  }
  // Drop the dead nodes and renumber inputs.
  std::vector<NodeId> new_id(graph.nodes.size(), kNoNode);
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (dead[i]) continue;
    new_id[i] = static_cast<NodeId>(kept.size());
    kept.push_back(std::move(graph.nodes[i]));
  }
  for (Node& n : kept) {
    for (NodeId& in : n.inputs) in = new_id[static_cast<size_t>(in)];
  }
  graph.output = new_id[static_cast<size_t>(graph.output)];
  graph.nodes = std::move(kept);
}

std::vector<int64_t> allocate_buffers(Graph& graph) {
  const size_t n = graph.nodes.size();
  std::vector<size_t> last_use(n, 0);
  for (size_t i = 0; i < n; ++i) {
    last_use[i] = i;
    for (NodeId in : graph.nodes[i].inputs) last_use[static_cast<size_t>(in)] = i;
  }
  // The output must survive the whole step.
  if (graph.output != kNoNode) last_use[static_cast<size_t>(graph.output)] = n;

  std::vector<int64_t> slot_size;                    // floats
  std::vector<int32_t> free_slots;                   // slots no live value holds
  std::vector<std::vector<NodeId>> expiring(n + 1);  // values whose last reader is node i
  for (size_t i = 0; i < n; ++i) {
    Node& node = graph.nodes[i];
    const int64_t size = node.rows * node.cols;
    if (node.op != OpKind::kKvStore && size > 0) {
      const NodeId first = node.inputs.empty() ? kNoNode : node.inputs[0];
      if (op_can_run_in_place(node.op) && first != kNoNode &&
          last_use[static_cast<size_t>(first)] == i &&
          graph.nodes[static_cast<size_t>(first)].buffer >= 0 &&
          graph.nodes[static_cast<size_t>(first)].rows *
                  graph.nodes[static_cast<size_t>(first)].cols ==
              size) {
        // In place: take over the input's slot; it no longer expires at this node.
        node.buffer = graph.nodes[static_cast<size_t>(first)].buffer;
        auto& list = expiring[i];
        list.erase(std::remove(list.begin(), list.end(), first), list.end());
      } else {
        // Best fit among free slots, growing one if none is large enough.
        int32_t best = -1;
        for (int32_t s : free_slots) {
          if (best < 0 || std::abs(slot_size[static_cast<size_t>(s)] - size) <
                              std::abs(slot_size[static_cast<size_t>(best)] - size)) {
            best = s;
          }
        }
        if (best < 0) {
          best = static_cast<int32_t>(slot_size.size());
          slot_size.push_back(size);
        } else {
          free_slots.erase(std::find(free_slots.begin(), free_slots.end(), best));
          slot_size[static_cast<size_t>(best)] =
              std::max(slot_size[static_cast<size_t>(best)], size);
        }
        node.buffer = best;
      }
      expiring[last_use[i]].push_back(static_cast<NodeId>(i));
    }
    // Values read for the last time by this node free their slots after it runs.
    for (NodeId dead : expiring[i]) {
      const int32_t slot = graph.nodes[static_cast<size_t>(dead)].buffer;
      if (slot >= 0) free_slots.push_back(slot);
    }
    expiring[i].clear();
  }
  return slot_size;
}

}  // namespace minfer
