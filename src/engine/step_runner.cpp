#include "engine/step_runner.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

namespace minfer::engine {

StepRunner::StepRunner(const Model& model, KvCache& cache, const kernels::KernelTable& table,
                       kernels::ThreadPool& pool)
    : model_(model), cache_(cache), executor_(table, pool) {}

Status StepRunner::validate(const Batch& batch) const {
  const int64_t n = batch.n_tokens();
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "[forward] empty batch");
  if (batch.positions.size() != batch.tokens.size() ||
      batch.seq_ids.size() != batch.tokens.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[forward] batch has {} tokens, {} positions and {} sequence ids", n,
                      batch.positions.size(), batch.seq_ids.size());
  }
  const int64_t n_vocab = model_.config().n_vocab;
  const int64_t n_ctx = cache_.config().n_ctx;
  // Each sequence's positions must continue what its cache holds: the next position is at most
  // its length (earlier positions may be recomputed), and within the batch they go up by one.
  std::unordered_map<int32_t, int64_t> next;
  for (int64_t t = 0; t < n; ++t) {
    const int32_t token = batch.tokens[static_cast<size_t>(t)];
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    const int32_t seq = batch.seq_ids[static_cast<size_t>(t)];
    if (token < 0 || token >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[forward] token id {} at batch index {} is out of range (n_vocab {})",
                        token, t, n_vocab);
    }
    if (pos < 0 || pos >= n_ctx) {
      return make_error(ErrorCode::kOutOfRange,
                        "[forward] position {} of sequence {} is past the context (n_ctx {})", pos,
                        seq, n_ctx);
    }
    auto it = next.find(seq);
    if (it == next.end()) {
      const int64_t length = cache_.length(seq);
      if (cache_.has_recurrent() && pos != length) {
        // A recurrent state holds every token before `length`: none can be computed again.
        return make_error(ErrorCode::kInvalidArgument,
                          "[forward] sequence {} starts at position {} but the model has "
                          "recurrent layers whose state holds positions 0..{}: it must continue "
                          "at {}",
                          seq, pos, length - 1, length);
      }
      if (pos > length) {
        return make_error(ErrorCode::kInvalidArgument,
                          "[forward] sequence {} starts at position {} but its cache holds only "
                          "positions 0..{}",
                          seq, pos, length - 1);
      }
    } else if (pos != it->second) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[forward] sequence {}: position {} follows {} in the batch (expected {})",
                        seq, pos, it->second - 1, it->second);
    }
    next[seq] = pos + 1;
  }
  for (size_t i = 0; i < batch.output_rows.size(); ++i) {
    const int32_t r = batch.output_rows[i];
    if (r < 0 || r >= n || (i > 0 && r <= batch.output_rows[i - 1])) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[forward] output row {} is out of range or not ascending", r);
    }
  }
  return Status::ok();
}

Status StepRunner::reserve(const std::map<int32_t, int64_t>& end) {
  std::map<int32_t, int64_t> before;  // seq → positions reserved before this step
  for (const auto& [seq, n] : end) before[seq] = cache_.n_reserved(seq);
  for (const auto& [seq, n] : end) {
    Status st = cache_.reserve(seq, n);
    if (st.is_ok()) continue;
    for (const auto& [s, had] : before) {
      if (had == 0) {
        cache_.free_sequence(s);
      } else {
        cache_.truncate(s, std::max(cache_.length(s), had));
      }
    }
    return st;
  }
  return Status::ok();
}

const StepRunner::Prepared& StepRunner::prepared(Shape shape) {
  if (auto it = by_shape_.find(shape); it != by_shape_.end()) {
    graphs_.splice(graphs_.begin(), graphs_, it->second);  // now the most recently used
    return it->second->second;
  }
  if (graphs_.size() >= kMaxCachedGraphs) {
    by_shape_.erase(graphs_.back().first);
    graphs_.pop_back();
  }
  Prepared p;
  p.graph = model_.build_graph(std::get<0>(shape), std::get<1>(shape), std::get<2>(shape));
  fuse_swiglu(p.graph);
  p.slot_sizes = allocate_buffers(p.graph);
  graphs_.emplace_front(shape, std::move(p));
  by_shape_[shape] = graphs_.begin();
  return graphs_.front().second;
}

void StepRunner::set_observers(const RunObservers* observers) {
  observers_ = observers;
  if (observers_ == nullptr) executor_.set_observer(nullptr);
}

Status StepRunner::begin_observed_step(StepKind kind, const Graph& graph, int64_t n_tokens) {
  const RunObservers& o = *observers_;
  if (o.trace != nullptr) o.trace->begin_step(kind, n_tokens);
  if (o.profile != nullptr) o.profile->begin_step(kind);
  if (o.dump != nullptr) o.dump->begin_step(kind);
  if (o.graphs != nullptr) MINFER_RETURN_IF_ERROR(o.graphs->on_step_graph(kind, graph));
  executor_.set_observer([&o](const Node& node, std::span<const float> out, double seconds) {
    if (o.trace != nullptr) o.trace->on_node(node, out, seconds);
    if (o.profile != nullptr) o.profile->on_node(node, seconds);
    if (o.dump != nullptr) o.dump->on_node(node, out);
  });
  return Status::ok();
}

Result<std::span<const float>> StepRunner::step(const Batch& batch, std::optional<StepKind> kind) {
  return run_step(batch, kind, /*hidden=*/false);
}

Result<std::span<const float>> StepRunner::step_hidden(const Batch& batch) {
  return run_step(batch, StepKind::kPrefill, /*hidden=*/true);
}

Result<std::span<const float>> StepRunner::run_step(const Batch& batch,
                                                    std::optional<StepKind> kind, bool hidden) {
  MINFER_RETURN_IF_ERROR(validate(batch));
  // Reserve every sequence's blocks first, so a budget error leaves the cache as it was.
  std::map<int32_t, int64_t> end;  // seq → last position + 1
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    int64_t& e = end[batch.seq_ids[static_cast<size_t>(t)]];
    e = std::max<int64_t>(e, batch.positions[static_cast<size_t>(t)] + 1);
  }
  MINFER_RETURN_IF_ERROR(reserve(end));
  const Prepared& p =
      prepared({batch.n_tokens(), static_cast<int64_t>(batch.output_rows.size()), hidden});
  if (observers_ != nullptr) {
    MINFER_RETURN_IF_ERROR(begin_observed_step(
        kind.value_or(batch.n_tokens() == 1 ? StepKind::kDecode : StepKind::kPrefill), p.graph,
        batch.n_tokens()));
  }
  const auto start = std::chrono::steady_clock::now();
  std::span<const float> logits = executor_.run(p.graph, p.slot_sizes, batch, cache_);
  if (observers_ != nullptr) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (observers_->profile != nullptr) observers_->profile->end_step(seconds);
    if (observers_->dump != nullptr) MINFER_RETURN_IF_ERROR(observers_->dump->end_step());
  }
  for (const auto& [seq, n] : end) cache_.set_length(seq, std::max(cache_.length(seq), n));
  return logits;
}

}  // namespace minfer::engine
