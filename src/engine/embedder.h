// Embeddings (DESIGN.md §4 "Engine"): the last hidden state of a text's tokens (after the final
// norm, before the output matrix) pooled into one vector — the mean of its rows, its first row
// (cls) or its last (Qwen3-Embedding) — and L2-normalized. An Embedder runs its own runtime (a KV
// cache of its own, freed after every call), so it never touches a generator's sequences; calls
// are serialized by a mutex. Several inputs share a forward step, each in a sequence of its own.
//
//   auto e = Embedder::create(model, runtime_options, {});
//   auto vectors = (*e)->embed(inputs);   // [n_inputs][n_embd]
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "engine/runtime.h"
#include "models/model.h"

namespace minfer::engine {

// llama.cpp's pooling_type numbers.
enum class Pooling : int32_t { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };

const char* pooling_name(Pooling p);
// "mean", "cls", "last"; anything else is an error naming it and the supported ones.
Result<Pooling> parse_pooling(std::string_view name);
// The pooling a model's embeddings use: its <arch>.pooling_type, or last when the file has none
// (a generative model). Errors: none (per-token embeddings) and rank (a reranker's score head),
// which minfer does not compute.
Result<Pooling> model_pooling(const ModelConfig& c);

// hidden: the rows of one text, [n_rows, n_embd] (all of its tokens for mean; for cls and last
// the rows given are pooled the same way: first or last). Returns [n_embd].
std::vector<float> pool_rows(std::span<const float> hidden, int64_t n_rows, int64_t n_embd,
                             Pooling pooling);
// v / ‖v‖₂ in place (a zero vector stays zero).
void l2_normalize(std::span<float> v);

struct EmbedderOptions {
  Pooling pooling = Pooling::kLast;  // mean, cls or last
  bool normalize = true;
  int64_t n_batch = kDefaultBatch;  // most tokens per forward step
  int n_seq = 16;                   // most inputs per forward step
};

class Embedder : NonCopyable {
 public:
  // `runtime.n_ctx`: the longest input. `model` must outlive the embedder. `logit_columns`
  // non-empty: each input's vector holds these columns of its last token's logits instead of a
  // hidden state (pooling last, not normalized: a reranker's yes/no logits). Errors: a pooling
  // other than mean, cls, last; a column outside the vocabulary; bad runtime options.
  static Result<std::unique_ptr<Embedder>> create(const Model& model, RuntimeOptions runtime,
                                                  const EmbedderOptions& options,
                                                  std::vector<int32_t> logit_columns = {});

  // One vector [n_values()] per input, in order. Errors (nothing computed): an empty input, a token
  // id outside the vocabulary, an input longer than n_ctx. Thread-safe (one call at a time).
  Result<std::vector<std::vector<float>>> embed(std::span<const std::vector<int32_t>> inputs);

  int64_t n_embd() const { return model_.config().n_embd; }
  // The length of each vector embed() returns: n_embd, or the logit columns asked for.
  int64_t n_values() const;
  int64_t n_ctx() const { return runtime_->n_ctx(); }
  Pooling pooling() const { return options_.pooling; }

 private:
  Embedder(const Model& model, const EmbedderOptions& options) : model_(model), options_(options) {}
  Status check_inputs(std::span<const std::vector<int32_t>> inputs) const;
  Status run_inputs(std::span<const std::vector<int32_t>> inputs,
                    std::vector<std::vector<float>>& out);
  // One step's output rows into their inputs' vectors (row r belongs to input row_input[r]).
  Status read_rows(const Batch& batch, std::span<const size_t> row_input,
                   std::vector<std::vector<float>>& out);

  const Model& model_;
  EmbedderOptions options_;
  std::vector<int32_t> logit_columns_;  // see create()
  std::unique_ptr<Runtime> runtime_;
  std::mutex mu_;
};

}  // namespace minfer::engine
