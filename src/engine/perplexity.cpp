#include "engine/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"

namespace minfer::engine {

double log_softmax_at(std::span<const float> logits, int32_t token) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum_exp = 0.0;
  // As llama-perplexity: each exponential in float (expf), the sum in double.
  for (float l : logits) sum_exp += static_cast<double>(std::exp(l - max_logit));
  return static_cast<double>(logits[static_cast<size_t>(token)] - max_logit) - std::log(sum_exp);
}

Result<PerplexityResult> compute_perplexity(
    const Model& model, const Tokenizer& tokenizer, std::string_view text,
    const PerplexityOptions& o, const std::function<void(int64_t, int64_t, double)>& on_chunk) {
  const auto start = std::chrono::steady_clock::now();
  if (o.n_ctx < 4) {
    return make_error(ErrorCode::kInvalidArgument, "[perplexity] context {} is too small (≥ 4)",
                      o.n_ctx);
  }
  const std::vector<int32_t> tokens = tokenizer.encode(text, /*add_special=*/true,
                                                       /*parse_special=*/false);
  PerplexityResult result;
  result.n_tokens = static_cast<int64_t>(tokens.size());
  if (result.n_tokens < 2 * o.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[perplexity] the text has {} tokens, expected at least 2 × n_ctx = {} "
                      "(use a longer text or a smaller -c)",
                      result.n_tokens, 2 * o.n_ctx);
  }
  int64_t n_chunks = result.n_tokens / o.n_ctx;
  if (o.max_chunks >= 0) n_chunks = std::min(n_chunks, o.max_chunks);
  result.n_chunks = n_chunks;
  const int64_t n_batch = std::clamp<int64_t>(o.n_batch, 1, o.n_ctx);
  const int64_t first = o.n_ctx / 2;
  const bool add_bos = tokenizer.add_bos() && tokenizer.bos_id() != kNoToken;
  const int64_t n_vocab = model.config().n_vocab;

  const int64_t block_size = 32;
  MINFER_ASSIGN_OR_RETURN(
      std::unique_ptr<KvCache> cache,
      model.make_cache(o.cache_type, o.n_ctx, (o.n_ctx + block_size - 1) / block_size, block_size));
  kernels::ThreadPool pool(o.n_threads > 0 ? o.n_threads : kernels::default_thread_count());
  Forward forward(model, *cache, kernels::active_table(), pool);
  forward.executor().set_attention_options({.flash_attn_numerics = o.flash_attn});

  double nll = 0.0;
  double nll2 = 0.0;
  int64_t count = 0;
  std::vector<float> logits;  // [n_ctx - 1 - first, n_vocab]: the scored positions' rows
  for (int64_t chunk = 0; chunk < n_chunks; ++chunk) {
    const int64_t begin = chunk * o.n_ctx;
    cache->free_sequence(0);  // every chunk starts from an empty sequence
    logits.clear();
    for (int64_t b = 0; b < o.n_ctx; b += n_batch) {
      Batch batch;
      for (int64_t pos = b; pos < std::min(o.n_ctx, b + n_batch); ++pos) {
        int32_t token = tokens[static_cast<size_t>(begin + pos)];
        if (pos == 0 && add_bos) token = tokenizer.bos_id();
        const bool scored = pos >= first && pos < o.n_ctx - 1;
        batch.add(token, static_cast<int32_t>(pos), 0, scored);
      }
      if (batch.output_rows.empty()) {
        // Forward computes at least the last row; it is not scored.
        batch.output_rows.push_back(static_cast<int32_t>(batch.n_tokens() - 1));
        MINFER_ASSIGN_OR_RETURN(std::span<const float> unused, forward.step(batch));
        (void)unused;
        continue;
      }
      MINFER_ASSIGN_OR_RETURN(std::span<const float> out, forward.step(batch));
      logits.insert(logits.end(), out.begin(), out.end());
    }
    const int64_t n_scored = o.n_ctx - 1 - first;
    MINFER_CHECK(static_cast<int64_t>(logits.size()) == n_scored * n_vocab,
                 "perplexity: scored rows do not match the chunk");
    for (int64_t i = 0; i < n_scored; ++i) {
      const std::span<const float> row(logits.data() + i * n_vocab, static_cast<size_t>(n_vocab));
      const int32_t target = tokens[static_cast<size_t>(begin + first + i + 1)];
      const double v = -log_softmax_at(row, target);
      nll += v;
      nll2 += v * v;
    }
    count += n_scored;
    const double running = std::exp(nll / static_cast<double>(count));
    result.running_ppl.push_back(running);
    if (on_chunk) on_chunk(chunk + 1, n_chunks, running);
  }
  cache->free_sequence(0);
  const double mean = nll / static_cast<double>(count);
  const double mean_sq = nll2 / static_cast<double>(count);
  result.n_scored = count;
  result.ppl = std::exp(mean);
  const double var = mean_sq - mean * mean;
  result.ppl_error =
      var > 0.0 && count > 1 ? std::sqrt(var / static_cast<double>(count - 1)) * result.ppl : 0.0;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace minfer::engine
