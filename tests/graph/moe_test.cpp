// The mixture-of-experts op (graph/moe.h): routing against hand-computed probabilities (top-2 of
// 3 experts, renormalized, ties to the lower id), the FFN against a plain double-precision
// forward, and bit-identical results for any batch split, thread count and kernel table.
#include "graph/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "kernels/kernel_test_util.h"
#include "kernels/thread_pool.h"
#include "quant/quant_traits.h"

namespace minfer {
namespace {

using kernels::test::all_tables;
using kernels::test::random_floats;

// Router logits chosen so that the softmax is a ratio of small integers: log-weights.
// token 0: [1, 3, 6] / 10  → experts 2, 1 with 6/9, 3/9
// token 1: [4, 1, 4] / 9   → experts 0, 2 (a tie: lower id first), 1/2 each
// token 2: [5, 3, 1] / 9   → experts 0, 1 with 5/8, 3/8
const std::vector<float> kRouterLogits = {
    0.0f,           std::log(3.0f), std::log(6.0f),  //
    std::log(4.0f), 0.0f,           std::log(4.0f),  //
    std::log(5.0f), std::log(3.0f), 0.0f,
};

TEST(Moe, RoutesToTheTopTwoWithRenormalizedWeights) {
  MoeScratch s;
  moe_route(kRouterLogits.data(), 3, 3, 2, s);
  const std::vector<int32_t> chosen(s.chosen.begin(), s.chosen.begin() + 6);
  EXPECT_EQ(chosen, (std::vector<int32_t>{2, 1, 0, 2, 0, 1}));
  const float expected[6] = {6.0f / 9, 3.0f / 9, 0.5f, 0.5f, 5.0f / 8, 3.0f / 8};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s.weights[i], expected[i], 1e-6f) << i;
}

// gpt-oss's routing: the top two raw logits, weighted by the softmax of those two alone (ties to
// the lower id).
TEST(Moe, SoftmaxOfTheChosenLogits) {
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.0f,    //
                                     0.0f, 3.0f,  3.0f, -2.0f};  // [2 tokens, 4 experts]
  MoeScratch s;
  moe_route(logits.data(), 2, 4, 2, s, /*softmax_chosen=*/true);
  const std::vector<int32_t> chosen(s.chosen.begin(), s.chosen.begin() + 4);
  EXPECT_EQ(chosen, (std::vector<int32_t>{0, 3, 1, 2}));
  const double e = std::exp(1.0);
  const double expected[4] = {e / (e + 1), 1 / (e + 1), 0.5, 0.5};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(s.weights[i], expected[i], 1e-7) << i;
}

WeightTensor stacked(const std::vector<uint8_t>& bytes, GgmlType type, int64_t n_cols,
                     int64_t n_rows, int64_t n_mats) {
  WeightTensor w;
  w.type = type;
  w.n_cols = n_cols;
  w.n_rows = n_rows;
  w.n_mats = n_mats;
  w.data = bytes.data();
  w.row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(n_cols));
  return w;
}

std::vector<uint8_t> converted(const std::vector<float>& x, GgmlType type, int64_t n_cols) {
  const size_t row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(n_cols));
  const int64_t n_rows = static_cast<int64_t>(x.size()) / n_cols;
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    if (type == GgmlType::kF32) {
      std::memcpy(out.data() + r * row_bytes, x.data() + r * n_cols, row_bytes);
    } else {
      quantize_row(type, x.data() + r * n_cols, out.data() + r * row_bytes, n_cols);
    }
  }
  return out;
}

// Random experts (f32), tokens and router logits; seeds from `seed` on.
struct RandomProblem {
  RandomProblem(int64_t n_embd, int64_t n_ff, int64_t n_expert, int64_t n_tokens, uint32_t seed)
      : gate(random_floats(n_expert * n_ff * n_embd, seed, -0.1f, 0.1f)),
        up(random_floats(n_expert * n_ff * n_embd, seed + 1, -0.1f, 0.1f)),
        down(random_floats(n_expert * n_embd * n_ff, seed + 2, -0.1f, 0.1f)),
        x(random_floats(n_tokens * n_embd, seed + 3)),
        logits(random_floats(n_tokens * n_expert, seed + 4, -2.0f, 2.0f)) {}
  std::vector<float> gate, up, down;  // [n_expert][rows][cols]
  std::vector<float> x;               // [n_tokens, n_embd]
  std::vector<float> logits;          // [n_tokens, n_expert]
};

// Experts converted to their types (gate, up, down) and the 3-D weights over those bytes.
struct ExpertSet {
  std::vector<uint8_t> gate_bytes, up_bytes, down_bytes;
  WeightTensor gate, up, down;
};

ExpertSet make_experts(const std::vector<float>& gate, const std::vector<float>& up,
                       const std::vector<float>& down, std::array<GgmlType, 3> types,
                       int64_t n_embd, int64_t n_ff, int64_t n_expert) {
  ExpertSet e;
  e.gate_bytes = converted(gate, types[0], n_embd);
  e.up_bytes = converted(up, types[1], n_embd);
  e.down_bytes = converted(down, types[2], n_ff);
  e.gate = stacked(e.gate_bytes, types[0], n_embd, n_ff, n_expert);
  e.up = stacked(e.up_bytes, types[1], n_embd, n_ff, n_expert);
  e.down = stacked(e.down_bytes, types[2], n_ff, n_embd, n_expert);
  return e;
}

struct ExpertWeights {
  const WeightTensor &gate, &up, &down;
};

void run_moe(const kernels::KernelTable& table, kernels::ThreadPool& pool, const ExpertWeights& w,
             const float* x, const float* logits, int64_t n_tokens, int64_t n_used, float* y,
             MoeScratch& s) {
  const MoeArgs args{.x = x,
                     .router_logits = logits,
                     .gate = &w.gate,
                     .up = &w.up,
                     .down = &w.down,
                     .n_tokens = n_tokens,
                     .n_used = n_used,
                     .y = y,
                     .variant = {}};
  moe_ffn(table, pool, args, s);
}

// The same op in double from the f32 weights (experts in f32).
std::vector<double> reference(const std::vector<float>& x, int64_t n_tokens, int64_t n_embd,
                              int64_t n_ff, const std::vector<float>& gate,
                              const std::vector<float>& up, const std::vector<float>& down,
                              const std::vector<int32_t>& chosen,
                              const std::vector<double>& weights, int64_t n_used) {
  std::vector<double> y(static_cast<size_t>(n_tokens * n_embd), 0.0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < n_used; ++j) {
      const int64_t e = chosen[static_cast<size_t>(t * n_used + j)];
      std::vector<double> h(static_cast<size_t>(n_ff));
      for (int64_t f = 0; f < n_ff; ++f) {
        double g = 0.0, u = 0.0;
        for (int64_t i = 0; i < n_embd; ++i) {
          g += double{gate[static_cast<size_t>((e * n_ff + f) * n_embd + i)]} *
               x[static_cast<size_t>(t * n_embd + i)];
          u += double{up[static_cast<size_t>((e * n_ff + f) * n_embd + i)]} *
               x[static_cast<size_t>(t * n_embd + i)];
        }
        h[static_cast<size_t>(f)] = g / (1.0 + std::exp(-g)) * u;
      }
      for (int64_t o = 0; o < n_embd; ++o) {
        double d = 0.0;
        for (int64_t f = 0; f < n_ff; ++f) {
          d += double{down[static_cast<size_t>((e * n_embd + o) * n_ff + f)]} *
               h[static_cast<size_t>(f)];
        }
        y[static_cast<size_t>(t * n_embd + o)] += weights[static_cast<size_t>(t * n_used + j)] * d;
      }
    }
  }
  return y;
}

// y against the double forward of the experts' dequantized weights, within 2% of the largest
// output (the activations' 8-bit quantization).
void expect_dequantized_forward(const ExpertSet& e, const std::vector<float>& x,
                                const std::vector<float>& logits, int64_t n_tokens, int64_t n_used,
                                const std::vector<float>& y, const std::string& what) {
  const int64_t n_embd = e.gate.n_cols, n_ff = e.gate.n_rows, n_expert = e.gate.n_mats;
  auto dequantized = [](const WeightTensor& w) {
    std::vector<float> out(static_cast<size_t>(w.n_mats * w.n_rows * w.n_cols));
    for (int64_t r = 0; r < w.n_mats * w.n_rows; ++r) {
      dequantize_row(w.type, w.row(r), out.data() + r * w.n_cols, w.n_cols);
    }
    return out;
  };
  MoeScratch s;
  moe_route(logits.data(), n_tokens, n_expert, n_used, s);
  const std::vector<int32_t> chosen(s.chosen.begin(), s.chosen.begin() + n_tokens * n_used);
  const std::vector<double> w(s.weights.begin(), s.weights.begin() + n_tokens * n_used);
  const std::vector<double> expected =
      reference(x, n_tokens, n_embd, n_ff, dequantized(e.gate), dequantized(e.up),
                dequantized(e.down), chosen, w, n_used);
  double max_ref = 0.0;
  for (double v : expected) max_ref = std::max(max_ref, std::fabs(v));
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(y[i], expected[i], 0.02 * max_ref) << what << " element " << i;
  }
}

// 3 experts of [2 → 2 → 2] in f32, three tokens routed as above: each output is the hand
// weights (6/9 and 3/9, …) times the chosen experts' SwiGLU.
TEST(Moe, TwoOfThreeExpertsMatchThePlainForward) {
  const int64_t n_embd = 2, n_ff = 2, n_expert = 3, n_tokens = 3;
  // Expert e's gate rows are (e+1)·[[1, 0], [0, 1]], up rows [[1, 1], [1, -1]], down the
  // identity: e's output is silu((e+1)·x) ⊙ (x0 + x1, x0 - x1).
  std::vector<float> gate, up, down;
  for (int64_t e = 0; e < n_expert; ++e) {
    const float k = static_cast<float>(e + 1);
    gate.insert(gate.end(), {k, 0.0f, 0.0f, k});
    up.insert(up.end(), {1.0f, 1.0f, 1.0f, -1.0f});
    down.insert(down.end(), {1.0f, 0.0f, 0.0f, 1.0f});
  }
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 1.0f, -0.25f, 0.75f};  // [3, 2]
  const ExpertSet experts = make_experts(
      gate, up, down, {GgmlType::kF32, GgmlType::kF32, GgmlType::kF32}, n_embd, n_ff, n_expert);
  const WeightTensor &gw = experts.gate, &uw = experts.up, &dw = experts.down;
  const std::vector<double> expected =
      reference(x, n_tokens, n_embd, n_ff, gate, up, down, {2, 1, 0, 2, 0, 1},
                {6.0 / 9, 3.0 / 9, 0.5, 0.5, 5.0 / 8, 3.0 / 8}, 2);
  // Token 0 by hand: x = (0.5, -1); expert 2: silu(1.5, -3) ⊙ (-0.5, 1.5), expert 1:
  // silu(1, -2) ⊙ (-0.5, 1.5).
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  EXPECT_NEAR(expected[0], 6.0 / 9 * silu(1.5) * -0.5 + 3.0 / 9 * silu(1.0) * -0.5, 1e-12);
  EXPECT_NEAR(expected[1], 6.0 / 9 * silu(-3.0) * 1.5 + 3.0 / 9 * silu(-2.0) * 1.5, 1e-12);
  kernels::ThreadPool pool(2);
  for (const kernels::KernelTable* table : all_tables()) {
    MoeScratch s;
    std::vector<float> y(static_cast<size_t>(n_tokens * n_embd));
    run_moe(*table, pool, {gw, uw, dw}, x.data(), kRouterLogits.data(), n_tokens, 2, y.data(), s);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], expected[i], 1e-6) << table->name << " element " << i;
    }
  }
}

// gpt-oss's experts on the hand example's weights: each expert's gate, up and down add their
// biases, and the SwiGLU is clamped (gate ≤ 7, up in [-7, 7]) with σ(1.702 g); inputs large
// enough to hit both clamps.
TEST(Moe, GptOssVariantAddsBiasesAndClampsTheSwiglu) {
  const int64_t n_embd = 2, n_ff = 2, n_expert = 3, n_tokens = 3;
  std::vector<float> gate, up, down, gate_b, up_b, down_b;
  for (int64_t e = 0; e < n_expert; ++e) {
    const float k = static_cast<float>(e + 1);
    gate.insert(gate.end(), {k, 0.0f, 0.0f, k});
    up.insert(up.end(), {1.0f, 1.0f, 1.0f, -1.0f});
    down.insert(down.end(), {1.0f, 0.0f, 0.0f, 1.0f});
    gate_b.insert(gate_b.end(), {0.5f * k, -0.25f});
    up_b.insert(up_b.end(), {0.1f, 0.2f * k});
    down_b.insert(down_b.end(), {1.0f + k, -k});
  }
  const std::vector<float> x = {5.0f, -4.0f, 2.0f, 1.0f, -0.25f, 9.0f};  // [3, 2]
  const ExpertSet ex = make_experts(
      gate, up, down, {GgmlType::kF32, GgmlType::kF32, GgmlType::kF32}, n_embd, n_ff, n_expert);
  const std::vector<uint8_t> gb = converted(gate_b, GgmlType::kF32, n_ff);
  const std::vector<uint8_t> ub = converted(up_b, GgmlType::kF32, n_ff);
  const std::vector<uint8_t> db = converted(down_b, GgmlType::kF32, n_embd);
  const WeightTensor gbw = stacked(gb, GgmlType::kF32, n_ff, 1, n_expert);
  const WeightTensor ubw = stacked(ub, GgmlType::kF32, n_ff, 1, n_expert);
  const WeightTensor dbw = stacked(db, GgmlType::kF32, n_embd, 1, n_expert);
  // Routing as kRouterLogits: experts (2, 1), (0, 2), (0, 1).
  const int32_t chosen[6] = {2, 1, 0, 2, 0, 1};
  const double weights[6] = {6.0 / 9, 3.0 / 9, 0.5, 0.5, 5.0 / 8, 3.0 / 8};
  std::vector<double> expected(static_cast<size_t>(n_tokens * n_embd), 0.0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const double x0 = x[static_cast<size_t>(2 * t)], x1 = x[static_cast<size_t>(2 * t + 1)];
    for (int j = 0; j < 2; ++j) {
      const int32_t e = chosen[2 * t + j];
      const double k = e + 1;
      const double g[2] = {std::min(k * x0 + 0.5 * k, 7.0), std::min(k * x1 - 0.25, 7.0)};
      const double u[2] = {std::clamp(x0 + x1 + 0.1, -7.0, 7.0),
                           std::clamp(x0 - x1 + 0.2 * k, -7.0, 7.0)};
      for (int f = 0; f < 2; ++f) {
        const double a = g[f] / (1.0 + std::exp(-1.702 * g[f])) * (u[f] + 1.0);
        const double out = a + (f == 0 ? 1.0 + k : -k);  // down is the identity, plus its bias
        expected[static_cast<size_t>(t * n_embd + f)] += weights[2 * t + j] * out;
      }
    }
  }
  kernels::ThreadPool pool(2);
  for (const kernels::KernelTable* table : all_tables()) {
    MoeScratch s;
    std::vector<float> y(static_cast<size_t>(n_tokens * n_embd));
    MoeArgs args{
        .x = x.data(),
        .router_logits = kRouterLogits.data(),
        .gate = &ex.gate,
        .up = &ex.up,
        .down = &ex.down,
        .n_tokens = n_tokens,
        .n_used = 2,
        .y = y.data(),
        .variant = {.softmax_chosen = true, .swiglu_limit = 7.0f, .biases = {&gbw, &ubw, &dbw}}};
    moe_ffn(*table, pool, args, s);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], expected[i], 1e-5 * (1.0 + std::fabs(expected[i])))
          << table->name << " element " << i;
    }
  }
}

// Quantized experts (q8_0 gate / down, q4_K up: two activation types), 8 experts, 3 used, 9
// tokens: every batch split and thread count gives the same bits, on every kernel table.
TEST(Moe, BitIdenticalForAnyBatchSplitAndThreadCount) {
  const int64_t n_embd = 256, n_ff = 64, n_expert = 8, n_used = 3, n_tokens = 9;
  const RandomProblem p(n_embd, n_ff, n_expert, n_tokens, 1);
  const auto &gate = p.gate, &up = p.up, &down = p.down, &x = p.x, &logits = p.logits;
  const ExpertSet experts = make_experts(
      gate, up, down, {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ8_0}, n_embd, n_ff, n_expert);
  const WeightTensor &gw = experts.gate, &uw = experts.up, &dw = experts.down;
  for (const kernels::KernelTable* table : all_tables()) {
    auto run = [&](int threads, int64_t step) {
      kernels::ThreadPool pool(threads);
      MoeScratch s;
      std::vector<float> y(static_cast<size_t>(n_tokens * n_embd));
      for (int64_t t0 = 0; t0 < n_tokens; t0 += step) {
        const int64_t n = std::min(step, n_tokens - t0);
        run_moe(*table, pool, {gw, uw, dw}, x.data() + t0 * n_embd, logits.data() + t0 * n_expert,
                n, n_used, y.data() + t0 * n_embd, s);
      }
      return y;
    };
    const std::vector<float> all = run(2, n_tokens);
    for (const auto& [threads, step] : {std::pair{1, n_tokens}, {2, 1}, {1, 1}, {2, 4}}) {
      const std::vector<float> other = run(threads, step);
      EXPECT_EQ(0, std::memcmp(all.data(), other.data(), all.size() * sizeof(float)))
          << table->name << " threads " << threads << " step " << step;
    }
    // And the values are those of the dequantized experts (within the activations' Q8 error).
    expect_dequantized_forward(experts, x, logits, n_tokens, n_used, all, table->name);
  }
}

// Every weight type minfer computes with, as the experts' type (all three), on every table.
TEST(Moe, EveryWeightTypeComputesTheDequantizedForward) {
  const int64_t n_embd = 256, n_ff = 256, n_expert = 4, n_used = 2, n_tokens = 3;
  const RandomProblem p(n_embd, n_ff, n_expert, n_tokens, 11);
  const auto &gate = p.gate, &up = p.up, &down = p.down, &x = p.x, &logits = p.logits;
  kernels::ThreadPool pool(2);
  for (GgmlType type :
       {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
        GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kMXFP4}) {
    const ExpertSet experts =
        make_experts(gate, up, down, {type, type, type}, n_embd, n_ff, n_expert);
    for (const kernels::KernelTable* table : all_tables()) {
      MoeScratch s;
      std::vector<float> y(static_cast<size_t>(n_tokens * n_embd));
      run_moe(*table, pool, {experts.gate, experts.up, experts.down}, x.data(), logits.data(),
              n_tokens, n_used, y.data(), s);
      expect_dequantized_forward(
          experts, x, logits, n_tokens, n_used, y,
          std::string(table->name) + " " + std::string(ggml_type_info(type).name));
    }
  }
}

// The decode roofline's weight bytes: a one-token step reads n_used of the experts (gate, up
// and down of each), a batch at most every expert.
TEST(Moe, WeightBytesCountOnlyTheUsedExperts) {
  const int64_t n_embd = 256, n_ff = 64, n_expert = 8;
  const auto values = random_floats(n_expert * n_ff * n_embd, 1);
  const ExpertSet experts =
      make_experts(values, values, values, {GgmlType::kQ8_0, GgmlType::kQ8_0, GgmlType::kQ8_0},
                   n_embd, n_ff, n_expert);
  // One expert's bytes: gate and up 64 rows of 256 q8_0 (272 bytes), down 256 rows of 64 (68).
  const uint64_t per_expert = 2 * 64 * 272 + 256 * 68;
  WeightTensor router;
  router.type = GgmlType::kF32;
  router.n_cols = n_embd;
  router.n_rows = n_expert;
  router.row_bytes = n_embd * 4;
  WeightTensor embedding = router;
  for (const auto& [n_tokens, n_read] : {std::pair<int64_t, int64_t>{1, 2}, {3, 6}, {9, 8}}) {
    GraphBuilder g(n_tokens, n_tokens);
    const NodeId x = g.get_rows("x", embedding);
    const NodeId logits = g.matmul("router", x, router);
    const NodeId y = g.moe_ffn("moe", x, logits, experts.gate, experts.up, experts.down, 2);
    const uint64_t other = n_tokens * router.row_bytes + n_expert * router.row_bytes;
    EXPECT_EQ(weight_bytes_read(g.finish(y)), other + n_read * per_expert) << n_tokens;
  }
}

}  // namespace
}  // namespace minfer
