#include "graph/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/check.h"
#include "kernels/matmul.h"

namespace minfer {

namespace {

kernels::MatmulWeights expert_matrix(const WeightTensor& w, int64_t e) {
  const WeightTensor m = w.matrix(e);
  return {m.type, m.data, m.n_rows, m.n_cols, m.layout};
}

template <typename T>
T* sized(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Copies rows (ids into `src`, row_bytes each) one after the other into dst.
void gather(const uint8_t* src, size_t row_bytes, const int32_t* ids, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(i) * row_bytes,
                src + static_cast<size_t>(ids[i]) * row_bytes, row_bytes);
  }
}

// rows, grouped by expert: for each expert e, the (token · n_used + j) slots that chose it in
// token order, at rows[first_row[e] .. first_row[e + 1]).
void group_by_expert(int64_t n_tokens, int64_t n_used, int64_t n_expert, MoeScratch& s) {
  const int64_t n_slots = n_tokens * n_used;
  s.first_row.assign(static_cast<size_t>(n_expert + 1), 0);
  for (int64_t k = 0; k < n_slots; ++k) ++s.first_row[static_cast<size_t>(s.chosen[k] + 1)];
  for (int64_t e = 0; e < n_expert; ++e) {
    s.first_row[static_cast<size_t>(e + 1)] += s.first_row[static_cast<size_t>(e)];
  }
  std::vector<int64_t> next(s.first_row.begin(), s.first_row.end() - 1);
  int32_t* rows = sized(s.rows, static_cast<size_t>(n_slots));
  for (int64_t k = 0; k < n_slots; ++k) {
    rows[next[static_cast<size_t>(s.chosen[k])]++] = static_cast<int32_t>(k);
  }
}

// Adds expert e's row of the biases b (nullptr: none; n_expert rows of width) to the m rows of y,
// as ggml's add_id.
void add_expert_bias(const kernels::KernelTable& table, const WeightTensor* b, int64_t e, int64_t m,
                     int64_t width, float* y) {
  if (b == nullptr) return;
  const float* bias = b->f32() + e * width;
  for (int64_t r = 0; r < m; ++r) table.add(y + r * width, bias, width, y + r * width);
}

// ggml's swiglu_oai (ops.cpp) with llama.cpp's alpha for gpt-oss: y = g' / (1 + e^(alpha · -g'))
// · (u' + 1), g' = min(g, limit), u' = clamp(u, -limit, limit). y may be g.
void swiglu_oai(const float* g, const float* u, int64_t n, float limit, float* y) {
  constexpr float kAlpha = 1.702f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(g[i], limit);
    const float v = std::clamp(u[i], -limit, limit);
    y[i] = x / (1.0f + std::exp(kAlpha * -x)) * (v + 1.0f);
  }
}

// Expert e's down over its m rows of activations act [m, n_ff_exp], plus its bias (gpt-oss),
// scattered to expert_out at each row's (token, j) slot, times expert_scale[e] where there is
// one.
void run_down(const kernels::KernelTable& table, kernels::ThreadPool& pool, const MoeArgs& a,
              int64_t e, const float* act, const int32_t* slots, int64_t m, MoeScratch& s) {
  const kernels::MatmulWeights down = expert_matrix(*a.down, e);
  const int64_t n_embd = down.n_out;
  float* d_out = sized(s.down_out, static_cast<size_t>(m * n_embd));  // [m, n_embd]
  sized(s.down_act, kernels::matmul_scratch_bytes(down.type, m, down.n_in));
  kernels::matmul(table, pool, down, act, m, d_out, s.down_act);
  add_expert_bias(table, a.variant.biases[2], e, m, n_embd, d_out);
  for (int64_t i = 0; i < m; ++i) {
    float* out = s.expert_out.data() + static_cast<size_t>(slots[i]) * n_embd;
    if (a.expert_scale != nullptr) {
      table.scale(d_out + i * n_embd, a.expert_scale[e], n_embd, out);
    } else {
      std::memcpy(out, d_out + i * n_embd, static_cast<size_t>(n_embd) * sizeof(float));
    }
  }
}

// One expert whose gate and up are one matrix (MoeArgs::up null): [m, 2 n_ff_exp] from the
// converted activations, the activation of its halves, down.
void run_fused_expert(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                      const MoeArgs& a, int64_t e, const int32_t* slots, int64_t m, MoeScratch& s) {
  const kernels::MatmulWeights gate_up = expert_matrix(*a.gate, e);
  const int64_t n_embd = gate_up.n_in;
  const int64_t n_ff = gate_up.n_out / 2;
  const size_t act_row = kernels::matmul_act_row_bytes(gate_up.type, n_embd);
  int32_t* tokens = sized(s.tokens, static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) tokens[i] = static_cast<int32_t>(slots[i] / a.n_used);
  uint8_t* act = sized(s.gathered, static_cast<size_t>(m) * act_row);
  gather(s.act_gate.data(), act_row, tokens, m, act);
  float* gu = sized(s.up_out, static_cast<size_t>(m * 2 * n_ff));  // [m, 2 n_ff_exp]
  kernels::matmul_converted(table, pool, gate_up, act, m, gu);
  float* g_out = sized(s.gate_out, static_cast<size_t>(m * n_ff));  // [m, n_ff_exp]
  const auto act_fn = a.gelu ? table.geglu : table.swiglu;
  pool.parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      act_fn(gu + r * 2 * n_ff, gu + r * 2 * n_ff + n_ff, n_ff, g_out + r * n_ff);
    }
  });
  run_down(table, pool, a, e, g_out, slots, m, s);
}

// One expert over its m rows: gate and up from the converted activations, SwiGLU, down, and the
// results scattered to expert_out at each row's (token, j) slot.
void run_expert(const kernels::KernelTable& table, kernels::ThreadPool& pool, const MoeArgs& a,
                int64_t e, const int32_t* slots, int64_t m, MoeScratch& s) {
  if (a.up == nullptr) {
    run_fused_expert(table, pool, a, e, slots, m, s);
    return;
  }
  const kernels::MatmulWeights gate = expert_matrix(*a.gate, e);
  const kernels::MatmulWeights up = expert_matrix(*a.up, e);
  const int64_t n_embd = gate.n_in;
  const int64_t n_ff = gate.n_out;
  const size_t gate_row = kernels::matmul_act_row_bytes(gate.type, n_embd);
  const size_t up_row = kernels::matmul_act_row_bytes(up.type, n_embd);
  const bool shared = kernels::matmul_shares_act(gate.type, up.type);

  // The tokens of the slots (slot / n_used), whose converted rows are gathered.
  int32_t* tokens = sized(s.tokens, static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) tokens[i] = static_cast<int32_t>(slots[i] / a.n_used);
  uint8_t* g_act = sized(s.gathered, static_cast<size_t>(m) * gate_row);
  gather(s.act_gate.data(), gate_row, tokens, m, g_act);
  const uint8_t* u_act = g_act;
  if (!shared) {
    uint8_t* dst = sized(s.gathered_up, static_cast<size_t>(m) * up_row);
    gather(s.act_up.data(), up_row, tokens, m, dst);
    u_act = dst;
  }
  float* g_out = sized(s.gate_out, static_cast<size_t>(m * n_ff));  // [m, n_ff_exp]
  float* u_out = sized(s.up_out, static_cast<size_t>(m * n_ff));    // [m, n_ff_exp]
  kernels::matmul_converted(table, pool, gate, g_act, m, g_out);
  kernels::matmul_converted(table, pool, up, u_act, m, u_out);
  const MoeVariant& v = a.variant;
  add_expert_bias(table, v.biases[0], e, m, n_ff, g_out);
  add_expert_bias(table, v.biases[1], e, m, n_ff, u_out);
  // The activation row by row, as the dense FFN (kernels treat a row's first elements in groups).
  pool.parallel_for(m, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* g = g_out + r * n_ff;
      if (v.swiglu_limit > 0.0f) {
        swiglu_oai(g, u_out + r * n_ff, n_ff, v.swiglu_limit, g);
      } else {
        (a.gelu ? table.geglu : table.swiglu)(g, u_out + r * n_ff, n_ff, g);
      }
    }
  });
  run_down(table, pool, a, e, g_out, slots, m, s);
}

}  // namespace

namespace {

// The n_used largest of scores[0 .. order.size()) first in order (ties: the lower id first).
void top_k(const float* scores, int64_t n_used, std::vector<int32_t>& order) {
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&](int32_t a, int32_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
}

// gpt-oss's routing: the n_used largest logits, weighted by the softmax of those alone.
void route_softmax_chosen(const float* router_logits, int64_t n_tokens, int64_t n_expert,
                          int64_t n_used, MoeScratch& s) {
  int32_t* chosen = s.chosen.data();
  float* weights = s.weights.data();
  float* picked = sized(s.probs, static_cast<size_t>(n_expert));  // [n_used] chosen logits
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* logits = router_logits + t * n_expert;
    top_k(logits, n_used, order);
    for (int64_t j = 0; j < n_used; ++j) {
      chosen[t * n_used + j] = order[static_cast<size_t>(j)];
      picked[j] = logits[order[static_cast<size_t>(j)]];
    }
    kernels::ref_table.softmax(picked, n_used, weights + t * n_used);
  }
}

}  // namespace

void moe_route(const float* router_logits, int64_t n_tokens, int64_t n_expert, int64_t n_used,
               MoeScratch& s, bool softmax_chosen) {
  MINFER_CHECK(n_used >= 1 && n_used <= n_expert, "moe_route: bad n_used");
  float* probs = sized(s.probs, static_cast<size_t>(n_expert));
  int32_t* chosen = sized(s.chosen, static_cast<size_t>(n_tokens * n_used));
  float* weights = sized(s.weights, static_cast<size_t>(n_tokens * n_used));
  if (softmax_chosen) {
    route_softmax_chosen(router_logits, n_tokens, n_expert, n_used, s);
    return;
  }
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n_tokens; ++t) {
    // The reference softmax on every ISA: the choice of experts must not depend on the SIMD
    // table (an ulp can reorder two close experts). Its arithmetic (expf per element, the sum
    // in double, times float(1 / sum)) is ggml's soft_max for rows under 16 on an AVX-512 host,
    // the goldens' (ggml's vector exp takes whole groups of 16: 128 experts differ by ulps).
    kernels::ref_table.softmax(router_logits + t * n_expert, n_expert, probs);
    top_k(probs, n_used, order);
    double sum = 0.0;  // ggml_sum_rows: each float added in double
    for (int64_t j = 0; j < n_used; ++j) sum += static_cast<double>(probs[order[j]]);
    // llama.cpp clamps the sum to f16's smallest normal before dividing.
    const float denom = std::max(static_cast<float>(sum), 6.103515625e-5f);
    for (int64_t j = 0; j < n_used; ++j) {
      chosen[t * n_used + j] = order[j];
      weights[t * n_used + j] = probs[order[j]] / denom;
    }
  }
}

void moe_ffn(const kernels::KernelTable& table, kernels::ThreadPool& pool, const MoeArgs& a,
             MoeScratch& s) {
  const int64_t n_expert = a.gate->n_mats;
  const int64_t n_embd = a.gate->n_cols;
  const int64_t n = a.n_tokens;
  moe_route(a.router_logits, n, n_expert, a.n_used, s, a.variant.softmax_chosen);
  group_by_expert(n, a.n_used, n_expert, s);

  // x converted once for every expert's gate (and up, when up's activations differ).
  const kernels::MatmulWeights gate0 = expert_matrix(*a.gate, 0);
  const kernels::MatmulWeights up0 = expert_matrix(a.up != nullptr ? *a.up : *a.gate, 0);
  sized(s.act_gate, static_cast<size_t>(n) * kernels::matmul_act_row_bytes(gate0.type, n_embd));
  kernels::matmul_convert(table, pool, gate0, a.x, n, s.act_gate);
  if (!kernels::matmul_shares_act(gate0.type, up0.type)) {
    sized(s.act_up, static_cast<size_t>(n) * kernels::matmul_act_row_bytes(up0.type, n_embd));
    kernels::matmul_convert(table, pool, up0, a.x, n, s.act_up);
  }
  sized(s.expert_out, static_cast<size_t>(n * a.n_used * n_embd));
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t begin = s.first_row[static_cast<size_t>(e)];
    const int64_t m = s.first_row[static_cast<size_t>(e + 1)] - begin;
    if (m > 0) run_expert(table, pool, a, e, s.rows.data() + begin, m, s);
  }

  // y[t] = Σ_j e_j · w_j in order of j; each product and each sum rounded on its own.
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* y = a.y + t * n_embd;
      for (int64_t j = 0; j < a.n_used; ++j) {
        float* e = s.expert_out.data() + (t * a.n_used + j) * n_embd;
        const float w = s.weights[static_cast<size_t>(t * a.n_used + j)];
        if (j == 0) {
          table.scale(e, w, n_embd, y);
        } else {
          table.scale(e, w, n_embd, e);
          table.add(y, e, n_embd, y);
        }
      }
    }
  });
}

}  // namespace minfer
