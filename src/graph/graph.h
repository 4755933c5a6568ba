// The compute graph of one step (DESIGN.md §4 "Graph"): a list of nodes in execution order, each
// producing one f32 activation [rows, cols] (kv_store produces none). A model file builds it per
// step through GraphBuilder so that it reads like a forward function; fusion rewrites it, the
// allocator assigns buffers, the executor runs the nodes in order (invariant 2: a layer's
// kv_store precedes its attention because it is built first).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rope.h"

namespace minfer {

struct WeightTensor;

// The expert FFN of gpt-oss beside Qwen3-MoE's (llama.cpp's build_moe_ffn with
// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT, swiglu_oai and the experts' biases); the default
// is Qwen3-MoE's (graph/moe.h).
struct MoeVariant {
  // The n_used largest router logits chosen, their weights the softmax over those alone (no
  // softmax over every expert, no renormalization).
  bool softmax_chosen = false;
  // > 0: the clamped SwiGLU, a = g' · σ(1.702 · g') · (u' + 1) with g' = min(g, limit) and
  // u' = clamp(u, -limit, limit); 0: silu(g) · u.
  float swiglu_limit = 0.0f;
  // Per-expert biases of gate, up ([n_expert][n_ff_exp]) and down ([n_expert][n_embd]), f32,
  // added to each expert's matmul output; nullptr: none.
  std::array<const WeightTensor*, 3> biases{};
};

enum class OpKind {
  kGetRows,  // rows of an embedding matrix, one per batch token → [n_tokens, n_embd]
  kRmsNorm,  // x / rms(x) * w over groups of `group` elements (group = cols, or head_dim)
  kMatmul,   // x · Wᵀ → [rows, W.n_rows]
  kAddRow,   // x + b, b a weight vector broadcast over rows (biases)
  kAdd,      // a + b
  kMul,      // a * b
  kSilu,     // silu(x)
  kSwiglu,   // silu(gate) * up (made by fusion from silu + mul)
  kScale,    // x * scale
  kRope,     // rotate each head of each row by its token's position
  kKvStore,  // write K and V rows of every token into the cache (no output)
  kAttention,  // softmax(q·Kᵀ/√d over the token's window) · V, per head → [n_tokens, n_head*dv]
  kSelectRows,   // keep the rows of tokens whose logits are wanted → [n_outputs, cols]
  kGeglu,        // gelu(gate) * up (tanh-form GELU, llama.cpp's f16 table)
  kSoftcap,      // scale · tanh(x / scale)
  kMoeFfn,       // mixture of experts: route by the router logits, weighted sum of the chosen
                 // experts' SwiGLUs (graph/moe.h) → [n_tokens, n_embd]
  kColumns,      // of each of n_head groups of `group` columns, the cols / n_head from `offset`
  kSigmoidGate,  // x · sigmoid(g), g's column c · g.cols / x.cols (a gate per group of columns)
  kSsmConv,      // the causal depthwise conv over each sequence's inputs and its conv state,
                 // then SiLU (graph/delta_net.h) → [n_tokens, channels]
  kDeltaNet,     // the gated delta rule over each sequence's tokens and its delta state
                 // (graph/delta_net.h) → [n_tokens, n_v_heads · d_state]
};

const char* op_name(OpKind op);

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

struct Node {
  OpKind op = OpKind::kAdd;
  std::string name;  // e.g. "blk.3.attn_q"
  int64_t rows = 0;  // output shape [rows, cols]
  int64_t cols = 0;
  std::vector<NodeId> inputs;
  const WeightTensor* weight = nullptr;  // matmul / get_rows matrix, norm weight, bias, sinks
  // Op parameters.
  float eps = 0.0f;    // rms_norm
  int64_t group = 0;   // rms_norm group width; rope / attention: head_dim
  int64_t n_head = 0;  // rope, attention (query heads)
  int64_t il = -1;     // kv_store, attention: layer
  float scale = 1.0f;  // scale; attention: the score scale; softcap: the cap
  int64_t window = 0;  // attention: sees positions > pos - window (0: every position ≤ pos)
  kernels::RopeConfig rope;
  // moe_ffn: the experts' gate, up and down weights (3-D, one matrix per expert) and how many
  // experts each token uses.
  std::array<const WeightTensor*, 3> experts{};
  int64_t n_used = 0;
  MoeVariant moe;
  // moe_ffn with Gemma 4's experts (moe_geglu): GEGLU, gate and up in experts[0] (experts[1]
  // null), `weight` the [n_expert] scale of each expert's output.
  bool gelu = false;
  int64_t offset = 0;  // columns: the first column taken of each group
  // delta_net: the per-value-head dt bias and A (ssm_dt.bias, ssm_a), and the key heads.
  std::array<const WeightTensor*, 2> gates{};
  int64_t n_k_heads = 0;
  // Set by the allocator: the buffer slot of the output, -1 for none.
  int32_t buffer = -1;
};

struct Graph {
  std::vector<Node> nodes;
  NodeId output = kNoNode;  // the node whose rows are the step's logits
};

// Builds a graph; every method appends one node and returns its id.
class GraphBuilder {
 public:
  GraphBuilder(int64_t n_tokens, int64_t n_outputs) : n_tokens_(n_tokens), n_outputs_(n_outputs) {}

  NodeId get_rows(const std::string& name, const WeightTensor& embedding);
  NodeId rms_norm(const std::string& name, NodeId x, const WeightTensor& w, float eps,
                  int64_t group = 0);
  NodeId matmul(const std::string& name, NodeId x, const WeightTensor& w);
  NodeId add_row(const std::string& name, NodeId x, const WeightTensor& b);
  NodeId add(const std::string& name, NodeId a, NodeId b);
  NodeId mul(const std::string& name, NodeId a, NodeId b);
  NodeId silu(const std::string& name, NodeId x);
  NodeId geglu(const std::string& name, NodeId gate, NodeId up);
  NodeId softcap(const std::string& name, NodeId x, float cap);
  NodeId scale(const std::string& name, NodeId x, float s);
  NodeId rope(const std::string& name, NodeId x, int64_t n_head, int64_t head_dim,
              const kernels::RopeConfig& config);
  void kv_store(const std::string& name, NodeId k, NodeId v, int64_t il);
  // sinks: a learned logit per query head ([n_head] f32) that joins each softmax's denominator
  // (gpt-oss); nullptr: none.
  NodeId attention(const std::string& name, NodeId q, int64_t il, int64_t n_head, int64_t head_dim,
                   int64_t head_dim_v, float scale, int64_t window = 0,
                   const WeightTensor* sinks = nullptr);
  NodeId select_rows(const std::string& name, NodeId x);
  // x: [n, n_embd], router_logits: [n, n_expert] (x · ffn_gate_inp); gate / up: n_expert ×
  // [n_embd → n_ff_exp], down: n_expert × [n_ff_exp → n_embd].
  NodeId moe_ffn(const std::string& name, NodeId x, NodeId router_logits, const WeightTensor& gate,
                 const WeightTensor& up, const WeightTensor& down, int64_t n_used,
                 const MoeVariant& variant = {});

  // Gemma 4's experts (graph/moe.h, MoeArgs::gelu): x: [n, n_embd], router_logits: [n,
  // n_expert]; gate_up: n_expert × [n_embd → 2 n_ff_exp] (gate's rows first), down: n_expert ×
  // [n_ff_exp → n_embd], scale: [n_expert], each expert's output factor.
  NodeId moe_geglu(const std::string& name, NodeId x, NodeId router_logits,
                   const WeightTensor& gate_up, const WeightTensor& down, const WeightTensor& scale,
                   int64_t n_used);

  // Of each of n_groups groups of x's columns, `width` columns from `offset`: [n, n_groups ·
  // width].
  NodeId columns(const std::string& name, NodeId x, int64_t n_groups, int64_t offset,
                 int64_t width);
  // x · sigmoid(g); g: [n, x.cols / m] for a gate per m columns (1: one per element).
  NodeId sigmoid_gate(const std::string& name, NodeId x, NodeId g);
  // The causal conv of layer il: x [n, channels], taps: channels rows of d_conv (f32).
  NodeId ssm_conv(const std::string& name, NodeId x, const WeightTensor& taps, int64_t il);
  // The gated delta rule of layer il: qkv [n, (2 n_k_heads + n_v_heads) · d_state] (the conv's
  // output), alpha and beta [n, n_v_heads] (before their gates), dt_bias and a [n_v_heads].
  NodeId delta_net(const std::string& name, NodeId qkv, NodeId alpha, NodeId beta,
                   const WeightTensor& dt_bias, const WeightTensor& a, int64_t il,
                   int64_t n_k_heads, int64_t n_v_heads, int64_t d_state, float eps);

  const Node& node(NodeId id) const { return graph_.nodes[static_cast<size_t>(id)]; }
  int64_t n_tokens() const { return n_tokens_; }
  int64_t n_outputs() const { return n_outputs_; }
  Graph finish(NodeId output);

 private:
  NodeId push(Node node);
  int64_t n_tokens_;
  int64_t n_outputs_;
  Graph graph_;
};

// Bytes of weights one run of the graph reads from memory: every matmul's whole matrix, the
// embedding rows get_rows reads (one per token), the vectors of norms and biases, and of a
// mixture of experts only the experts the tokens use (n_used each: the step's floor). For a
// one-token decode graph this is the step's memory-traffic floor (the bandwidth roofline of
// `minfer bench`).
uint64_t weight_bytes_read(const Graph& graph);

// One weight of those weight_bytes_read counts: `bytes` of `weight` (an expert tensor: the
// matrices of it the tokens use); `multiplied` when a matmul streams it (kMatmul, kMoeFfn's
// experts), not when it is get_rows' rows or a norm's or bias's vector.
struct WeightRead {
  const WeightTensor* weight = nullptr;
  uint64_t bytes = 0;
  bool multiplied = false;
};
// Every weight one run of the graph reads, in node order (weight_bytes_read is their sum).
std::vector<WeightRead> weight_reads(const Graph& graph);

// Rewrites mul(silu(g), u) into swiglu(g, u) where silu(g) has no other consumer.
void fuse_swiglu(Graph& graph);

// Assigns buffer slots by liveness: a slot is reused once its last reader has run, and an
// elementwise op whose first input is read by nobody after it writes in place into that input's
// slot. Returns the size in floats of each slot.
std::vector<int64_t> allocate_buffers(Graph& graph);

// Whether the op may write its output over its first input (same shape, element by element or
// row by row, reading each element before writing it).
bool op_can_run_in_place(OpKind op);

}  // namespace minfer
