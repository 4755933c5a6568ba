#include "sampling/log_softmax.h"

#include <algorithm>
#include <cmath>

namespace minfer {

double log_softmax_at(std::span<const float> logits, int32_t token) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum_exp = 0.0;
  // As llama-perplexity: each exponential in float (expf), the sum in double.
  for (float l : logits) sum_exp += static_cast<double>(std::exp(l - max_logit));
  return static_cast<double>(logits[static_cast<size_t>(token)] - max_logit) - std::log(sum_exp);
}

double log_normalizer(std::span<const float> logits) {
  float max_logit = logits[0];
  for (const float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  return static_cast<double>(max_logit) + std::log(sum);
}

}  // namespace minfer
