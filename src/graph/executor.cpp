#include "graph/executor.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "graph/attention.h"
#include "graph/for_tasks.h"
#include "graph/weight_tensor.h"
#include "kernels/matmul.h"
#include "quant/quant_traits.h"

namespace minfer {

namespace {

using GatedFn = void (*)(const float* gate, const float* up, int64_t n, float* y);

// A gated activation (SwiGLU, GEGLU) of [rows, cols] gate and up, rows split over the pool.
void gated_rows(kernels::ThreadPool& pool, GatedFn fn, const float* gate, const float* up,
                int64_t rows, int64_t cols, float* y) {
  for_tasks(pool, rows, cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) fn(gate + r * cols, up + r * cols, cols, y + r * cols);
  });
}

}  // namespace

std::span<const float> Executor::run(const Graph& graph, const std::vector<int64_t>& slot_sizes,
                                     const Batch& batch, KvCache& cache) {
  if (slots_.size() < slot_sizes.size()) slots_.resize(slot_sizes.size());
  for (size_t s = 0; s < slot_sizes.size(); ++s) {
    if (static_cast<int64_t>(slots_[s].size()) < slot_sizes[s]) {
      slots_[s].resize(static_cast<size_t>(slot_sizes[s]));
    }
  }
  for (size_t i = 0; i < graph.nodes.size();) {
    const size_t n_run = shared_input_matmuls(graph, i);
    const auto start = std::chrono::steady_clock::now();
    if (n_run > 1) {
      matmul_group(graph, i, n_run);
    } else {
      const Node& node = graph.nodes[i];
      // An empty output (e.g. the rows of a step that wants no logits) has no buffer and nothing
      // to compute; kv_store writes the cache and has no output at all.
      const bool empty = node.op != OpKind::kKvStore && node.rows * node.cols == 0;
      if (!empty) run_node(node, graph, batch, cache);
    }
    if (observer_) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      observe(graph, i, n_run, seconds);
    }
    i += n_run;
  }
  const Node& out = graph.nodes[static_cast<size_t>(graph.output)];
  if (out.buffer < 0) return {};  // no rows wanted
  return {slots_[static_cast<size_t>(out.buffer)].data(), static_cast<size_t>(out.rows * out.cols)};
}

size_t Executor::shared_input_matmuls(const Graph& graph, size_t first) const {
  const Node& head = graph.nodes[first];
  if (head.op != OpKind::kMatmul || head.rows == 0) return 1;
  size_t n = 1;
  while (first + n < graph.nodes.size() && n < kernels::kMaxSharedInput) {
    const Node& next = graph.nodes[first + n];
    if (next.op != OpKind::kMatmul || next.inputs[0] != head.inputs[0] ||
        next.weight->n_cols != head.weight->n_cols ||
        !kernels::matmul_shares_act(next.weight->type, head.weight->type)) {
      break;
    }
    ++n;
  }
  return n;
}

void Executor::matmul_group(const Graph& graph, size_t first, size_t n) {
  std::array<kernels::MatmulWeights, kernels::kMaxSharedInput> ws;
  std::array<float*, kernels::kMaxSharedInput> ys{};
  for (size_t j = 0; j < n; ++j) {
    const Node& node = graph.nodes[first + j];
    const WeightTensor& w = *node.weight;
    ws[j] = {w.type, w.data, w.n_rows, w.n_cols, w.layout};
    ys[j] = buffer(node);
  }
  const Node& head = graph.nodes[first];
  const size_t need = kernels::matmul_scratch_bytes(ws[0].type, head.rows, ws[0].n_in);
  if (act_scratch_.size() < need) act_scratch_.resize(need);
  const float* x = buffer(graph.nodes[static_cast<size_t>(head.inputs[0])]);
  kernels::matmul_shared_input(table_, pool_, {ws.data(), n}, x, head.rows, {ys.data(), n},
                               act_scratch_);
}

void Executor::observe(const Graph& graph, size_t first, size_t n, double seconds) {
  // Matmuls run together share their time in proportion to their weights' bytes.
  auto bytes = [&](size_t j) {
    const WeightTensor& w = *graph.nodes[first + j].weight;
    return static_cast<double>(w.n_rows) * static_cast<double>(w.row_bytes);
  };
  double total_bytes = 0;
  for (size_t j = 0; j < n; ++j) total_bytes += n == 1 ? 0.0 : bytes(j);
  for (size_t j = 0; j < n; ++j) {
    const Node& node = graph.nodes[first + j];
    std::span<const float> out;
    if (node.buffer >= 0) out = {buffer(node), static_cast<size_t>(node.rows * node.cols)};
    const double share = n == 1 ? 1.0 : bytes(j) / total_bytes;
    observer_(node, out, seconds * share);
  }
}

void Executor::matmul(const Node& node, const float* x, float* y) {
  const WeightTensor& w = *node.weight;
  const kernels::MatmulWeights weights{w.type, w.data, w.n_rows, w.n_cols, w.layout};
  const size_t need = kernels::matmul_scratch_bytes(w.type, node.rows, w.n_cols);
  if (act_scratch_.size() < need) act_scratch_.resize(need);
  kernels::matmul(table_, pool_, weights, x, node.rows, y, act_scratch_);
}

void Executor::run_node(const Node& node, const Graph& graph, const Batch& batch, KvCache& cache) {
  auto input = [&](size_t i) -> const Node& {
    return graph.nodes[static_cast<size_t>(node.inputs[i])];
  };
  auto in_data = [&](size_t i) { return buffer(input(i)); };
  const int64_t rows = node.rows;
  const int64_t cols = node.cols;

  switch (node.op) {
    case OpKind::kGetRows: {
      const WeightTensor& e = *node.weight;
      float* y = buffer(node);
      if (e.layout != kernels::WeightLayout::kGguf) {
        // A tied output repacked at load: each row's blocks back in order first.
        std::vector<uint8_t> row(e.row_bytes);  // [row bytes]
        for (int64_t t = 0; t < rows; ++t) {
          kernels::deinterleave_row(e.type, e.data, cols, batch.tokens[static_cast<size_t>(t)],
                                    row.data());
          dequantize_row(e.type, row.data(), y + t * cols, cols);
        }
        return;
      }
      for (int64_t t = 0; t < rows; ++t) {
        dequantize_row(e.type, e.row(batch.tokens[static_cast<size_t>(t)]), y + t * cols, cols);
      }
      return;
    }
    case OpKind::kRmsNorm: {
      const float* x = in_data(0);
      float* y = buffer(node);
      const int64_t n_groups = rows * (cols / node.group);
      const float* w = node.weight->f32();
      for_tasks(pool_, n_groups, node.group, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
          table_.rms_norm(x + g * node.group, w, node.eps, node.group, y + g * node.group);
        }
      });
      return;
    }
    case OpKind::kMatmul:
      matmul(node, in_data(0), buffer(node));
      return;
    case OpKind::kAddRow: {
      const float* x = in_data(0);
      float* y = buffer(node);
      for (int64_t r = 0; r < rows; ++r) {
        table_.add(x + r * cols, node.weight->f32(), cols, y + r * cols);
      }
      return;
    }
    case OpKind::kAdd:
      table_.add(in_data(0), in_data(1), rows * cols, buffer(node));
      return;
    case OpKind::kMul:
      table_.mul(in_data(0), in_data(1), rows * cols, buffer(node));
      return;
    // SiLU and SwiGLU go row by row: their kernels treat whole groups of 16 from the start of
    // a call differently from the elements after them, as llama.cpp does per row.
    case OpKind::kSilu: {
      const float* x = in_data(0);
      float* y = buffer(node);
      for (int64_t r = 0; r < rows; ++r) table_.silu(x + r * cols, cols, y + r * cols);
      return;
    }
    case OpKind::kSwiglu:
      gated_rows(pool_, table_.swiglu, in_data(0), in_data(1), rows, cols, buffer(node));
      return;
    case OpKind::kGeglu:
      gated_rows(pool_, table_.geglu, in_data(0), in_data(1), rows, cols, buffer(node));
      return;
    case OpKind::kSoftcap: {
      // As llama.cpp: x times 1/cap (a product, not a division), tanh, times cap.
      const float* x = in_data(0);
      float* y = buffer(node);
      const float inv = 1.0f / node.scale;
      for (int64_t i = 0; i < rows * cols; ++i) y[i] = std::tanh(x[i] * inv) * node.scale;
      return;
    }
    case OpKind::kScale:
      table_.scale(in_data(0), node.scale, rows * cols, buffer(node));
      return;
    case OpKind::kRope: {
      float* y = buffer(node);
      if (y != in_data(0)) std::memcpy(y, in_data(0), static_cast<size_t>(rows * cols) * 4);
      kernels::apply_rope(table_, y, rows, node.n_head, node.group, batch.positions.data(),
                          node.rope);
      return;
    }
    case OpKind::kKvStore: {
      const float* k = in_data(0);
      const float* v = in_data(1);
      const int64_t k_cols = input(0).cols;
      const int64_t v_cols = input(1).cols;
      for (int64_t t = 0; t < batch.n_tokens(); ++t) {
        cache.store(table_, node.il, batch.seq_ids[static_cast<size_t>(t)],
                    batch.positions[static_cast<size_t>(t)], k + t * k_cols, v + t * v_cols);
      }
      return;
    }
    case OpKind::kAttention: {
      const float* sinks = node.weight != nullptr ? node.weight->f32() : nullptr;
      AttentionArgs args{in_data(0), buffer(node), node.il, node.n_head,
                         node.scale, node.window,  sinks};
      attention(table_, pool_, cache, batch, args, attention_options_);
      return;
    }
    case OpKind::kMoeFfn: {
      const MoeArgs args{.x = in_data(0),
                         .router_logits = in_data(1),
                         .gate = node.experts[0],
                         .up = node.experts[1],
                         .down = node.experts[2],
                         .n_tokens = rows,
                         .n_used = node.n_used,
                         .y = buffer(node),
                         .variant = node.moe,

                         .gelu = node.gelu,
                         .expert_scale = node.weight != nullptr ? node.weight->f32() : nullptr};
      moe_ffn(table_, pool_, args, moe_scratch_);
      return;
    }
    case OpKind::kColumns:
    case OpKind::kSigmoidGate:
    case OpKind::kSsmConv:
    case OpKind::kDeltaNet:
      run_hybrid_node(node, graph, batch, cache);
      return;
    case OpKind::kSelectRows: {
      const float* x = in_data(0);
      float* y = buffer(node);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = batch.output_rows[static_cast<size_t>(r)];
        if (y + r * cols != x + src * cols) {
          std::memmove(y + r * cols, x + src * cols, static_cast<size_t>(cols) * 4);
        }
      }
      return;
    }
  }
}

void Executor::run_hybrid_node(const Node& node, const Graph& graph, const Batch& batch,
                               KvCache& cache) {
  // Input i's node and buffer.
  auto in = [&](size_t i) -> const Node& {
    return graph.nodes[static_cast<size_t>(node.inputs[i])];
  };
  const int64_t rows = node.rows;
  const int64_t cols = node.cols;
  switch (node.op) {
    case OpKind::kColumns: {
      const float* x = buffer(in(0));
      float* y = buffer(node);
      const int64_t width = cols / node.n_head;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t h = 0; h < node.n_head; ++h) {
          std::memcpy(y + r * cols + h * width, x + r * in(0).cols + h * node.group + node.offset,
                      static_cast<size_t>(width) * sizeof(float));
        }
      }
      return;
    }
    case OpKind::kSigmoidGate: {
      // As ggml: sigmoid(g) = 1 / (1 + e^-g), then the product.
      const float* x = buffer(in(0));
      const float* g = buffer(in(1));
      float* y = buffer(node);
      const int64_t g_cols = in(1).cols;
      const int64_t per_gate = cols / g_cols;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const float gate = 1.0f / (1.0f + std::exp(-g[r * g_cols + c / per_gate]));
          y[r * cols + c] = x[r * cols + c] * gate;
        }
      }
      return;
    }
    case OpKind::kSsmConv: {
      const SsmConvArgs args{.x = buffer(in(0)),
                             .taps = node.weight,
                             .channels = cols,
                             .il = node.il,
                             .y = buffer(node)};
      ssm_conv(table_, pool_, cache, batch, args, delta_net_scratch_);
      return;
    }
    case OpKind::kDeltaNet: {
      const DeltaNetArgs args{.qkv = buffer(in(0)),
                              .alpha = buffer(in(1)),
                              .beta = buffer(in(2)),
                              .dt_bias = node.gates[0]->f32(),
                              .a = node.gates[1]->f32(),
                              .n_k_heads = node.n_k_heads,
                              .n_v_heads = node.n_head,
                              .d_state = node.group,
                              .eps = node.eps,
                              .il = node.il,
                              .out = buffer(node)};
      delta_net(table_, pool_, cache, batch, args);
      return;
    }
    default:
      MINFER_CHECK(false, "run_hybrid_node on another op");
  }
}

}  // namespace minfer
