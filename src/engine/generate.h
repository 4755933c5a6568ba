// The generation loop (DESIGN.md §4 "Sampler", "Engine"): prompt → Session::set_prompt (reusing
// the cached prefix) → sample, stream, decode, until an end-of-generation token, a stop string,
// n_predict tokens, a full context or a cancel request — and the metrics of the run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "engine/token_pipeline.h"
#include "graph/observe.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

struct GenerateOptions {
  SamplerParams sampling;
  int64_t n_predict = -1;                     // < 0: until eog or the context is full
  std::vector<std::string> stops;             // empty strings are ignored
  bool render_special = false;                // print the text of control tokens
  const std::atomic<bool>* cancel = nullptr;  // checked between tokens when set
  TraceWriter* trace = nullptr;  // when set, each sampled token ends its step's trace line
  // When set (not owned), only tokens it allows are sampled and generation ends when it is
  // complete.
  TokenConstraint* constraint = nullptr;
  ReplyParserOptions reply;       // how the reply is split (default: all content)
  int32_t reasoning_budget = -1;  // < 0: unlimited (TokenPipelineOptions::reasoning_budget)
  // Context shift (Session::shift_context): when the next token has no position left, the older
  // half of the tokens after the first n_keep is discarded and generation goes on; false: a full
  // context ends generation (FinishReason::kContext).
  bool context_shift = false;
  int64_t n_keep = 0;  // < 0: the whole prompt; must leave 2 positions of n_ctx after it
  // Speculative decoding (engine/speculative.h): prompt lookup or a draft model, none when
  // neither is set. Greedy output is plain decoding's; sampled output is distributed as plain
  // decoding's (a draft model's samples go through the accept/resample rule). Not with
  // context_shift or a model with sliding-window layers (an error).
  SpeculativeOptions speculative;
};

struct GenerationMetrics {
  int64_t n_prompt = 0;          // prompt tokens
  int64_t n_reused = 0;          // of those, found in the cache
  int64_t n_prefilled = 0;       // of those, computed
  double prefill_ms = 0.0;       // set_prompt's forwards
  double ttft_ms = 0.0;          // start of generate() to the first token sampled
  int64_t n_generated = 0;       // tokens sampled, an end-of-generation token included
  double decode_ms = 0.0;        // first token sampled to the end
  int64_t n_decoded = 0;         // single-token forwards in that time
  int64_t n_shifts = 0;          // context shifts (GenerateOptions::context_shift)
  int64_t n_discarded = 0;       // tokens they discarded
  SpeculativeStats speculative;  // GenerateOptions::speculative
  ForwardTimes prefill_forwards;
  ForwardTimes decode_forwards;

  double prefill_tok_s() const;
  double decode_tok_s() const;
};

struct GenerateResult {
  FinishReason finish = FinishReason::kLength;
  std::string stop;       // the stop string that matched (kStop)
  std::string text;       // the content emitted through the callback
  std::string reasoning;  // the reasoning emitted
  std::vector<ToolCall> tool_calls;
  std::vector<int32_t> tokens;  // every token sampled, a final eog included
  GenerationMetrics metrics;
};

// Called with each piece of text as it becomes safe to print (never part of a UTF-8 character,
// never part of a stop string); returns false to stop generating (finish kCancelled).
using TextCallback = std::function<bool(std::string_view)>;
// The same with the text split into reasoning, content and tool calls (GenerateOptions::reply).
using ReplyCallback = std::function<bool(const ReplyDelta&)>;

// Generates after `prompt` (the whole prompt: what the session already holds of it is reused).
// The sampler is seeded from options.sampling and has every prompt token accepted into its
// penalty history first, as llama.cpp does. The session afterwards holds the prompt and every
// sampled token that was fed back (all but the last).
Result<GenerateResult> generate(Session& session, const Tokenizer& tokenizer,
                                std::span<const int32_t> prompt, const GenerateOptions& options,
                                const TextCallback& on_text);
Result<GenerateResult> generate_reply(Session& session, const Tokenizer& tokenizer,
                                      std::span<const int32_t> prompt,
                                      const GenerateOptions& options,
                                      const ReplyCallback& on_reply);

// The metrics as lines for people, each ending in '\n'.
std::string format_metrics(const GenerationMetrics& m);

}  // namespace minfer::engine
