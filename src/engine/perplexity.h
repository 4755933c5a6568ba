// Perplexity of a model over a text, by llama.cpp's method (tools/perplexity, `perplexity()`),
// so that the numbers can be compared with llama-perplexity's:
//
//  1. The whole text is tokenized once, with BOS when the model adds one (no special-token
//     parsing). At least 2 · n_ctx tokens are required; the text is cut into
//     n_chunk = n_tokens / n_ctx chunks of n_ctx tokens (the remainder is dropped).
//  2. Each chunk is evaluated from an empty sequence at positions 0 … n_ctx−1, in forwards of
//     n_batch tokens; when the model adds BOS, the chunk's first token is replaced by BOS.
//  3. Only the second half is scored: for positions i = n_ctx/2 … n_ctx−2, the log-softmax of
//     the logits at i for the text's token at i+1 (first = n_ctx/2, so n_ctx − 1 − first tokens
//     per chunk). nll accumulates −log p, nll2 its square.
//  4. After each chunk, the running perplexity exp(nll / count) is reported ("[1]12.3456,").
//     Final: PPL = exp(mean nll) and its error ppl · sqrt((mean nll² − mean nll²) / (count − 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "sampling/log_softmax.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// The runtime's options (n_ctx: tokens per chunk, 512 unless set) and the chunking.
struct PerplexityOptions : RuntimeOptions {
  PerplexityOptions() { n_ctx = kDefaultPerplexityContext; }
  int64_t n_batch = kDefaultBatch;  // tokens per forward; capped at n_ctx (as llama.cpp does)
  int64_t max_chunks = -1;          // < 0: every chunk
};

struct PerplexityResult {
  int64_t n_tokens = 0;  // of the whole text, BOS included
  int64_t n_chunks = 0;
  int64_t n_scored = 0;             // tokens that entered the mean
  std::vector<double> running_ppl;  // [n_chunks]
  double ppl = 0.0;
  double ppl_error = 0.0;  // llama.cpp's "+/-" value
  double seconds = 0.0;
  std::string profile;  // the per-op profile table when options.observe.profile, else ""
};

// Calls on_chunk(chunk_index_from_1, n_chunks, running_ppl) after each chunk when given.
Result<PerplexityResult> compute_perplexity(
    const Model& model, const Tokenizer& tokenizer, std::string_view text,
    const PerplexityOptions& options,
    const std::function<void(int64_t, int64_t, double)>& on_chunk = {});

// Scored with sampling/log_softmax.h's log_softmax_at (llama-perplexity's arithmetic).
using minfer::log_softmax_at;

}  // namespace minfer::engine
