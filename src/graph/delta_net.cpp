#include "graph/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "graph/for_tasks.h"

namespace minfer {

namespace {

// The batch's tokens grouped by sequence, each group in batch order (positions ascending: the
// step runner checks that each sequence continues at its length, one position per token).
struct SequenceRun {
  int32_t seq;
  std::vector<int32_t> tokens;  // batch indices
};

std::vector<SequenceRun> sequence_runs(const Batch& batch) {
  std::vector<SequenceRun> runs;
  for (int32_t t = 0; t < static_cast<int32_t>(batch.n_tokens()); ++t) {
    const int32_t seq = batch.seq_ids[static_cast<size_t>(t)];
    auto it = std::find_if(runs.begin(), runs.end(),
                           [seq](const SequenceRun& r) { return r.seq == seq; });
    if (it == runs.end()) {
      runs.push_back({seq, {}});
      it = runs.end() - 1;
    }
    it->tokens.push_back(t);
  }
  return runs;
}

float softplus(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

}  // namespace

void ssm_conv(const kernels::KernelTable& table, kernels::ThreadPool& pool, KvCache& cache,
              const Batch& batch, const SsmConvArgs& args, DeltaNetScratch& scratch) {
  const int64_t d_conv = args.taps->n_cols;
  const int64_t ch = args.channels;
  MINFER_CHECK(d_conv >= 2 && d_conv <= kMaxConvTaps, "ssm_conv: bad kernel length");
  scratch.taps.resize(static_cast<size_t>(d_conv * ch));
  const float* taps = args.taps->f32();  // [ch][d_conv]
  for (int64_t c = 0; c < ch; ++c) {
    for (int64_t k = 0; k < d_conv; ++k) scratch.taps[k * ch + c] = taps[c * d_conv + k];
  }
  const std::vector<SequenceRun> runs = sequence_runs(batch);
  // in[m] of a run: its conv state's rows, then its tokens' x rows.
  auto in_row = [&](const SequenceRun& run, const float* state, int64_t m) -> const float* {
    if (m < d_conv - 1) return state + m * ch;
    return args.x + run.tokens[static_cast<size_t>(m - (d_conv - 1))] * ch;
  };
  std::vector<const float*> states;  // [n_runs]
  std::vector<std::pair<int32_t, int32_t>> where(static_cast<size_t>(batch.n_tokens()));
  for (size_t r = 0; r < runs.size(); ++r) {
    states.push_back(cache.conv_state(runs[r].seq, args.il));
    for (size_t j = 0; j < runs[r].tokens.size(); ++j) {
      where[static_cast<size_t>(runs[r].tokens[j])] = {static_cast<int32_t>(r),
                                                       static_cast<int32_t>(j)};
    }
  }
  for_tasks(pool, batch.n_tokens(), ch * d_conv, [&](int64_t begin, int64_t end) {
    const float* rows[kMaxConvTaps];
    for (int64_t t = begin; t < end; ++t) {
      const auto [r, j] = where[static_cast<size_t>(t)];
      for (int64_t k = 0; k < d_conv; ++k) {
        rows[k] = in_row(runs[static_cast<size_t>(r)], states[static_cast<size_t>(r)], j + k);
      }
      float* y = args.y + t * ch;
      table.ssm_conv(rows, scratch.taps.data(), d_conv, ch, y);
      table.silu(y, ch, y);
    }
  });
  // Each state becomes the last d_conv - 1 rows of its in.
  scratch.rows.resize(static_cast<size_t>((d_conv - 1) * ch));
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto n = static_cast<int64_t>(runs[r].tokens.size());
    for (int64_t i = 0; i < d_conv - 1; ++i) {
      std::memcpy(scratch.rows.data() + i * ch, in_row(runs[r], states[r], n + i),
                  static_cast<size_t>(ch) * sizeof(float));
    }
    std::memcpy(cache.conv_state(runs[r].seq, args.il), scratch.rows.data(),
                scratch.rows.size() * sizeof(float));
  }
}

void delta_net(const kernels::KernelTable& table, kernels::ThreadPool& pool, KvCache& cache,
               const Batch& batch, const DeltaNetArgs& args) {
  const int64_t d = args.d_state;
  const int64_t n_v = args.n_v_heads;
  const int64_t kd = args.n_k_heads * d;
  const int64_t width = 2 * kd + n_v * d;  // a qkv row
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d));
  const std::vector<SequenceRun> runs = sequence_runs(batch);
  std::vector<float*> states;  // [n_runs]
  for (const SequenceRun& run : runs) states.push_back(cache.delta_state(run.seq, args.il));
  const auto n_tasks = static_cast<int64_t>(runs.size()) * n_v;
  for_tasks(pool, n_tasks, d * d, [&](int64_t begin, int64_t end) {
    std::vector<float> qk(static_cast<size_t>(2 * d));  // the normalised q, k of one token
    for (int64_t task = begin; task < end; ++task) {
      const auto r = static_cast<size_t>(task / n_v);
      const int64_t h = task % n_v;
      const int64_t kh = h % args.n_k_heads;
      float* state = states[r] + h * d * d;
      for (const int32_t t : runs[r].tokens) {
        const float* row = args.qkv + t * width;
        table.l2_norm(row + kh * d, args.eps, d, qk.data());
        table.scale(qk.data(), q_scale, d, qk.data());
        table.l2_norm(row + kd + kh * d, args.eps, d, qk.data() + d);
        const float g = args.a[h] * softplus(args.alpha[t * n_v + h] + args.dt_bias[h]);
        const float beta = 1.0f / (1.0f + std::exp(-args.beta[t * n_v + h]));
        table.delta_rule_step(state, qk.data(), qk.data() + d, row + 2 * kd + h * d, std::exp(g),
                              beta, d, d, args.out + t * n_v * d + h * d);
      }
    }
  });
}

}  // namespace minfer
