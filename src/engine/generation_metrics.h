// The figures of one generation (`minfer run`'s, GenerateReply::metrics): what the prompt cost,
// the time to the first token, the decode rate and the forwards behind them.
#pragma once

#include <cstdint>
#include <string>

#include "engine/request.h"

namespace minfer::engine {

struct GenerationMetrics {
  int64_t n_prompt = 0;     // prompt tokens
  int64_t n_reused = 0;     // of those, found in the cache
  int64_t n_prefilled = 0;  // of those, computed
  double prefill_ms = 0.0;  // the prefill forwards
  double ttft_ms = 0.0;     // the request's start to its first token sampled
  int64_t n_generated = 0;  // tokens sampled, an end-of-generation token included
  double decode_ms = 0.0;   // first token sampled to the end
  int64_t n_decoded = 0;    // forwards in that time
  int64_t n_shifts = 0;     // context shifts
  int64_t n_drafted = 0;    // speculative decoding: tokens drafted,
  int64_t n_accepted = 0;   // of those sampled as drafted,
  int64_t n_verified = 0;   // in this many forwards
  ForwardTimes prefill_forwards;
  ForwardTimes decode_forwards;

  double prefill_tok_s() const;
  double decode_tok_s() const;
};

// The figures of a finished request (its final event's stats and forwards).
GenerationMetrics generation_metrics(const RequestStats& stats, const RequestForwards& forwards);

// The metrics as lines for people, each ending in '\n'.
std::string format_metrics(const GenerationMetrics& m);

}  // namespace minfer::engine
