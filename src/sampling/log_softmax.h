// Log-softmax of one row of logits, the model's distribution before the sampler chain: for
// perplexity (−log p of the text's next token) and for the logprobs a request asks for. The max
// is subtracted before exponentiating (invariant 7). Two arithmetics, each pinned by what it is
// compared with:
//   log_softmax_at   each exp in float (expf), the sum in double: llama-perplexity's, so that
//                    perplexities match llama.cpp's digit for digit;
//   log_normalizer   each exp and the sum in double: the server's logprobs (what its tests and
//                    the node suite pin bit for bit).
#pragma once

#include <cstdint>
#include <span>

namespace minfer {

// logits[token] − max − log Σ exp(logits − max), each term exp'ed in float, summed in double.
// logits is [n_vocab]; 0 ≤ token < n_vocab.
double log_softmax_at(std::span<const float> logits, int32_t token);

// log Z = max + log Σ exp(logits − max), every step in double: log p(t) = logits[t] − log Z.
// logits is [n_vocab], not empty.
double log_normalizer(std::span<const float> logits);

}  // namespace minfer
