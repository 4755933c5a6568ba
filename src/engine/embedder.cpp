#include "engine/embedder.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace minfer::engine {

namespace {

// Adds one hidden row [n_embd] of a text to its pooled vector: summed for mean, kept for cls and
// last (the caller gives cls only the first row, last only the last).
void accumulate_row(std::span<float> acc, std::span<const float> row, Pooling pooling) {
  if (pooling == Pooling::kMean) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += row[i];
  } else {
    std::copy(row.begin(), row.end(), acc.begin());
  }
}

void finish_pool(std::span<float> acc, int64_t n_rows, Pooling pooling, bool normalize) {
  if (pooling == Pooling::kMean && n_rows > 0) {
    const float inv = 1.0f / static_cast<float>(n_rows);
    for (float& x : acc) x *= inv;
  }
  if (normalize) l2_normalize(acc);
}

// Whether token t of a text of n tokens is a row the pooling reads.
bool wanted_row(Pooling pooling, int64_t t, int64_t n) {
  switch (pooling) {
    case Pooling::kMean:
      return true;
    case Pooling::kCls:
      return t == 0;
    default:
      return t == n - 1;
  }
}

}  // namespace

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kNone:
      return "none";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
    case Pooling::kRank:
      return "rank";
  }
  return "?";
}

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "last") return Pooling::kLast;
  return make_error(ErrorCode::kInvalidArgument,
                    "[embed] unknown pooling '{}': expected mean, cls or last", name);
}

Result<Pooling> model_pooling(const ModelConfig& c) {
  if (c.pooling_type < 0) return Pooling::kLast;
  const auto p = static_cast<Pooling>(c.pooling_type);
  if (p == Pooling::kMean || p == Pooling::kCls || p == Pooling::kLast) return p;
  return make_error(ErrorCode::kUnsupported,
                    "[embed] the model's {}.pooling_type is {} ({}): minfer pools mean, cls or "
                    "last (--pooling chooses one)",
                    c.arch, c.pooling_type, pooling_name(p));
}

std::vector<float> pool_rows(std::span<const float> hidden, int64_t n_rows, int64_t n_embd,
                             Pooling pooling) {
  std::vector<float> acc(static_cast<size_t>(n_embd), 0.0f);  // [n_embd]
  for (int64_t r = 0; r < n_rows; ++r) {
    if (!wanted_row(pooling, r, n_rows)) continue;
    accumulate_row(
        acc, hidden.subspan(static_cast<size_t>(r * n_embd), static_cast<size_t>(n_embd)), pooling);
  }
  finish_pool(acc, n_rows, pooling, /*normalize=*/false);
  return acc;
}

void l2_normalize(std::span<float> v) {
  double sum = 0.0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

Result<std::unique_ptr<Embedder>> Embedder::create(const Model& model, RuntimeOptions runtime,
                                                   const EmbedderOptions& options,
                                                   std::vector<int32_t> logit_columns) {
  if (options.pooling != Pooling::kMean && options.pooling != Pooling::kCls &&
      options.pooling != Pooling::kLast) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[embed] pooling {} is not computed: expected mean, cls or last",
                      pooling_name(options.pooling));
  }
  const int64_t n_vocab = model.config().n_vocab;
  for (const int32_t column : logit_columns) {
    if (options.pooling != Pooling::kLast || options.normalize || column < 0 || column >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[embed] logit column {} (n_vocab {}) needs last pooling, not normalized",
                        column, n_vocab);
    }
  }
  if (options.n_batch < 1 || options.n_seq < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[embed] bad options: n_batch {} (expected ≥ 1), n_seq {} (≥ 1)",
                      options.n_batch, options.n_seq);
  }
  // Positions held at once: one input carried over from an earlier step (≤ n_ctx), the step's
  // tokens, and each sequence's last partly used block.
  runtime.n_ctx_total = runtime.n_ctx + options.n_batch + options.n_seq * runtime.block_size;
  // Each sequence of a step (and one carried over) may hold a recurrent state.
  runtime.n_seq_max = options.n_seq + 1;
  std::unique_ptr<Embedder> e(new Embedder(model, options));
  e->logit_columns_ = std::move(logit_columns);
  MINFER_ASSIGN_OR_RETURN(e->runtime_, Runtime::create(model, runtime));
  return e;
}

Status Embedder::check_inputs(std::span<const std::vector<int32_t>> inputs) const {
  const int64_t n_vocab = model_.config().n_vocab;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t>& in = inputs[i];
    if (in.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "[embed] input {} has no tokens", i);
    }
    if (static_cast<int64_t>(in.size()) > n_ctx()) {
      return make_error(ErrorCode::kOutOfRange,
                        "[embed] input {} has {} tokens, more than the context of {} (-c)", i,
                        in.size(), n_ctx());
    }
    for (const int32_t id : in) {
      if (id < 0 || id >= n_vocab) {
        return make_error(ErrorCode::kInvalidArgument,
                          "[embed] input {}: token id {} is outside the vocabulary (n_vocab {})", i,
                          id, n_vocab);
      }
    }
  }
  return Status::ok();
}

Result<std::vector<std::vector<float>>> Embedder::embed(
    std::span<const std::vector<int32_t>> inputs) {
  MINFER_RETURN_IF_ERROR(check_inputs(inputs));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::vector<float>> out(inputs.size(),
                                      std::vector<float>(static_cast<size_t>(n_values()), 0.0f));
  const Status st = run_inputs(inputs, out);
  for (int32_t s = 0; s < options_.n_seq; ++s) runtime_->cache().free_sequence(s);
  if (!st.is_ok()) return st;
  return out;
}

int64_t Embedder::n_values() const {
  return logit_columns_.empty() ? n_embd() : static_cast<int64_t>(logit_columns_.size());
}

Status Embedder::read_rows(const Batch& batch, std::span<const size_t> row_input,
                           std::vector<std::vector<float>>& out) {
  if (!logit_columns_.empty()) {
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits,
                            runtime_->step(batch));  // [n_rows, n_vocab]
    const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
    for (size_t r = 0; r < row_input.size(); ++r) {
      std::vector<float>& v = out[row_input[r]];
      for (size_t c = 0; c < v.size(); ++c) {
        v[c] = logits[r * n_vocab + static_cast<size_t>(logit_columns_[c])];
      }
    }
    return Status::ok();
  }
  const auto n_embd_u = static_cast<size_t>(n_embd());
  MINFER_ASSIGN_OR_RETURN(std::span<const float> hidden,
                          runtime_->step_hidden(batch));  // [n_rows, n_embd]
  for (size_t r = 0; r < row_input.size(); ++r) {
    accumulate_row(out[row_input[r]], hidden.subspan(r * n_embd_u, n_embd_u), options_.pooling);
  }
  return Status::ok();
}

Status Embedder::run_inputs(std::span<const std::vector<int32_t>> inputs,
                            std::vector<std::vector<float>>& out) {
  const Pooling pooling = options_.pooling;
  std::vector<int32_t> free_seqs;  // sequence ids not holding an input
  for (int32_t s = options_.n_seq - 1; s >= 0; --s) free_seqs.push_back(s);
  size_t next = 0;  // the next input to start
  struct Feeding {
    size_t input = 0;
    int32_t seq = 0;
    int64_t fed = 0;  // tokens already in the cache or the batch
  };
  std::optional<Feeding> open;  // the input whose tokens continue in the next step
  Batch batch;
  std::vector<size_t> row_input;                      // [n_outputs] the input of each output row
  std::vector<std::pair<size_t, int32_t>> finishing;  // inputs whose last token is in the batch
  while (true) {
    while (batch.n_tokens() < options_.n_batch) {
      if (!open) {
        if (next == inputs.size() || free_seqs.empty()) break;
        open = Feeding{next++, free_seqs.back(), 0};
        free_seqs.pop_back();
      }
      const std::vector<int32_t>& in = inputs[open->input];
      const auto n = static_cast<int64_t>(in.size());
      const int64_t take = std::min(n - open->fed, options_.n_batch - batch.n_tokens());
      for (int64_t t = open->fed; t < open->fed + take; ++t) {
        const bool want = wanted_row(pooling, t, n);
        batch.add(in[static_cast<size_t>(t)], static_cast<int32_t>(t), open->seq, want);
        if (want) row_input.push_back(open->input);
      }
      open->fed += take;
      if (open->fed < n) break;  // the step is full; the input goes on in the next one
      finishing.emplace_back(open->input, open->seq);
      open.reset();
    }
    if (batch.n_tokens() == 0) break;
    MINFER_RETURN_IF_ERROR(read_rows(batch, row_input, out));
    for (const auto& [input, seq] : finishing) {
      finish_pool(out[input], static_cast<int64_t>(inputs[input].size()), pooling,
                  options_.normalize);
      runtime_->cache().free_sequence(seq);
      free_seqs.push_back(seq);
    }
    batch.clear();
    row_input.clear();
    finishing.clear();
  }
  return Status::ok();
}

}  // namespace minfer::engine
