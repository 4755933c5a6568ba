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

namespace {

// One (sequence, value head) task's view of the batch: the head's q, k, v columns and gates.
struct HeadView {
  const DeltaNetArgs& args;
  int64_t h;
  int64_t kh;     // its key head
  int64_t kd;     // n_k_heads · d_state
  int64_t width;  // a qkv row
  float q_scale;

  const float* v(int32_t t) const { return args.qkv + t * width + 2 * kd + h * args.d_state; }
  float* out(int32_t t) const {
    return args.out + t * args.n_v_heads * args.d_state + h * args.d_state;
  }
  // Token t's normalised q (scaled) and k into q, k; its log decay and write strength.
  void prepare(const kernels::KernelTable& table, int32_t t, float* q, float* k, float& g,
               float& beta) const {
    const int64_t d = args.d_state;
    const float* row = args.qkv + t * width;
    table.l2_norm(row + kh * d, args.eps, d, q);
    table.scale(q, q_scale, d, q);
    table.l2_norm(row + kd + kh * d, args.eps, d, k);
    const int64_t n_v = args.n_v_heads;
    g = args.a[h] * softplus(args.alpha[t * n_v + h] + args.dt_bias[h]);
    beta = 1.0f / (1.0f + std::exp(-args.beta[t * n_v + h]));
  }
};

// Per-worker buffers: a chunk's normalised q, k, its v and out rows, gates and the kernel's
// scratch, grown on first use (a decode step only needs one token's q and k).
struct ChunkBuffers {
  std::vector<float> q, k, v, out, g, beta, work;

  void fit(int64_t n_tokens, int64_t d) {
    const auto nd = static_cast<size_t>(n_tokens * d);
    if (q.size() < nd) {
      for (std::vector<float>* rows : {&q, &k, &v, &out}) rows->resize(nd);
      g.resize(static_cast<size_t>(n_tokens));
      beta.resize(static_cast<size_t>(n_tokens));
    }
    const int64_t n_work = n_tokens > 1 ? kernels::delta_chunk_work_floats(n_tokens, d, d) : 0;
    if (work.size() < static_cast<size_t>(n_work)) work.resize(static_cast<size_t>(n_work));
  }
};

void run_by_token(const kernels::KernelTable& table, const HeadView& head,
                  const std::vector<int32_t>& tokens, float* state, ChunkBuffers& buf) {
  const int64_t d = head.args.d_state;
  buf.fit(1, d);
  for (const int32_t t : tokens) {
    float g = 0.0f, beta = 0.0f;
    head.prepare(table, t, buf.q.data(), buf.k.data(), g, beta);
    table.delta_rule_step(state, buf.q.data(), buf.k.data(), head.v(t), std::exp(g), beta, d, d,
                          head.out(t));
  }
}

// The run's tokens kDeltaChunkTokens at a time (the last chunk partial), gathered into the
// chunk's rows and scattered back.
void run_by_chunk(const kernels::KernelTable& table, const HeadView& head,
                  const std::vector<int32_t>& tokens, float* state, ChunkBuffers& buf) {
  const int64_t d = head.args.d_state;
  const auto row_bytes = static_cast<size_t>(d) * sizeof(float);
  const auto n_run = static_cast<int64_t>(tokens.size());
  buf.fit(kDeltaChunkTokens, d);
  for (int64_t c0 = 0; c0 < n_run; c0 += kDeltaChunkTokens) {
    const int64_t n = std::min(kDeltaChunkTokens, n_run - c0);
    for (int64_t j = 0; j < n; ++j) {
      const int32_t t = tokens[static_cast<size_t>(c0 + j)];
      head.prepare(table, t, buf.q.data() + j * d, buf.k.data() + j * d, buf.g[j], buf.beta[j]);
      std::memcpy(buf.v.data() + j * d, head.v(t), row_bytes);
    }
    kernels::DeltaChunk c;
    c.q = buf.q.data();
    c.k = buf.k.data();
    c.v = buf.v.data();
    c.v_stride = d;
    c.g = buf.g.data();
    c.beta = buf.beta.data();
    c.n = n;
    c.dk = d;
    c.dv = d;
    c.out = buf.out.data();
    c.out_stride = d;
    c.work = buf.work.data();
    table.delta_rule_chunk(state, c);
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(head.out(tokens[static_cast<size_t>(c0 + j)]), buf.out.data() + j * d, row_bytes);
    }
  }
}

}  // namespace

void delta_net(const kernels::KernelTable& table, kernels::ThreadPool& pool, KvCache& cache,
               const Batch& batch, const DeltaNetArgs& args) {
  const int64_t d = args.d_state;
  const int64_t n_v = args.n_v_heads;
  const int64_t kd = args.n_k_heads * d;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d));
  const std::vector<SequenceRun> runs = sequence_runs(batch);
  std::vector<float*> states;  // [n_runs]
  for (const SequenceRun& run : runs) states.push_back(cache.delta_state(run.seq, args.il));
  const auto n_tasks = static_cast<int64_t>(runs.size()) * n_v;
  for_tasks(pool, n_tasks, d * d, [&](int64_t begin, int64_t end) {
    ChunkBuffers buf;
    for (int64_t task = begin; task < end; ++task) {
      const auto r = static_cast<size_t>(task / n_v);
      const int64_t h = task % n_v;
      const HeadView head{args, h, h % args.n_k_heads, kd, 2 * kd + n_v * d, q_scale};
      float* state = states[r] + h * d * d;
      if (static_cast<int64_t>(runs[r].tokens.size()) >= kDeltaChunkMinTokens) {
        run_by_chunk(table, head, runs[r].tokens, state, buf);
      } else {
        run_by_token(table, head, runs[r].tokens, state, buf);
      }
    }
  });
}

}  // namespace minfer
