// The token pipeline (DESIGN.md §4 "Sampler", "Engine"): what the Scheduler does with one row of
// logits of one request:
//
//   logits → sampler (+ constraint) → logprobs → eog? → streaming UTF-8 decoder → stop strings
//          → reply parser (reasoning / content / tool calls) → finish reason;  at the end: flush
//          (an unfinished character as U+FFFD, which may still complete a stop string, then the
//          text held back).
//
// The scheduler keeps the policy of when to stop before sampling (cancellation, a full context).
// The pipeline ends generation for what a token itself decides: an end-of-generation token
// (never decoded), a stop string (it and what follows never emitted), a complete constraint
// (ends as kEog without sampling the eog token), and the token limit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/reply_parser.h"
#include "minfer/minfer.h"
#include "sampling/constraint.h"
#include "sampling/sampler.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// The public API's types (include/minfer/minfer.h) are the engine's.
using minfer::finish_reason_name;
using minfer::finish_reason_text;
using minfer::FinishReason;

// Text held back until it can no longer be the start of a stop string (so that neither a stop
// string nor anything after it is ever emitted).
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text; returns the text that is now safe to emit. After a stop string is
  // found, returns the text before it and stopped() becomes true; later calls return "".
  std::string push(std::string_view text);
  // The end of generation without a stop: whatever is still held back.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that matched ("" before one did).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // the suffix of the text so far that may begin a stop string
  bool stopped_ = false;
  std::string matched_;
};

using minfer::SampledToken;
using minfer::TokenLogprob;

// The reply starts inside reasoning when the prompt ends with an opened <think> (DeepSeek-R1's
// and Qwen3.5's generation prompts): the last few tokens' text, control tokens included, says so.
// False when those ids are not all in the vocabulary.
bool prompt_opens_reasoning(const Tokenizer& tokenizer, std::span<const int32_t> prompt);

struct TokenPipelineOptions {
  SamplerParams sampling;
  std::vector<std::string> stops;  // empty strings are ignored
  bool render_special = false;     // decode the text of control tokens
  int64_t max_tokens = -1;         // < 0: no limit; else the token that reaches it ends kLength
  // < 0: no logprobs; else the sampled token's log-probability plus this many alternatives,
  // from the model's distribution before the sampler chain.
  int32_t top_logprobs = -1;
  // When set (not owned; it must outlive the pipeline), only tokens it allows are sampled, and
  // generation ends with kEog as soon as it is complete.
  TokenConstraint* constraint = nullptr;
  // How the emitted text is split (reply_parser.h); the default passes it all as content.
  // starts_in_reasoning is found from the prompt's end (a <think> left open) when not set.
  ReplyParserOptions reply;
  // < 0: unlimited; else after this many tokens inside the reasoning block the next tokens are
  // those of chat::reasoning_close_forced (</think>; harmony's and Gemma 4's own), forced instead
  // of sampled (0: closed at once).
  int32_t reasoning_budget = -1;
};

// What one row of logits gave.
struct TokenStep {
  SampledToken sampled;  // the token, with its logprobs when they were asked for
  std::string text;      // now safe to emit: never part of a UTF-8 character or a stop string
  ReplyDelta delta;      // the reply parser's split of what is decided so far (content = text
                         // when the reply is not parsed)
  // Set when this token ends generation: kEog (an end-of-generation token, whose text is not
  // decoded, or a complete constraint), kStop or kLength.
  std::optional<FinishReason> finish;
};

// What the end of generation releases.
struct TokenEnding {
  // kStop when the flush completed a stop string; kToolCalls when a reply that ended as kEog or
  // kStop called tools.
  FinishReason finish = FinishReason::kLength;
  std::string stop;  // the stop string that matched (kStop)
  // In order: the decoder's unfinished character as U+FFFD with what it let through the stop
  // matcher, then the text the matcher still held back as a possible start of a stop string.
  std::string flushed;
  std::string held;
  ReplyDelta delta;  // the split of flushed + held and of all the parser still held back
};

class TokenPipeline {
 public:
  // `tokenizer` must outlive the pipeline. The sampler is seeded from options.sampling and has
  // every prompt token accepted into its penalty history first, as llama.cpp does.
  TokenPipeline(const Tokenizer& tokenizer, int32_t n_vocab, TokenPipelineOptions options,
                std::span<const int32_t> prompt);

  // Samples one token from `logits` [n_vocab], advances the constraint and the sampler's
  // history, and decodes it. Error (nothing advanced): the constraint allows no token at all.
  Result<TokenStep> next(std::span<const float> logits);
  // The same for a row that a draft model's sampled token follows (speculative decoding): the
  // sampler's accept/resample rule (Sampler::sample with a DraftProposal), the token distributed
  // as next(logits) would give it. With a constraint or a forced token the draft is ignored and
  // the token is sampled as next(logits) does (the caller then keeps the draft's row only when
  // the token equals it: exact too). Null `draft`: next(logits).
  Result<TokenStep> next(std::span<const float> logits, const DraftProposal* draft);

  // True once max_tokens tokens have been sampled: no further token may be.
  bool at_limit() const { return max_tokens_ >= 0 && n_generated_ >= max_tokens_; }
  int64_t n_generated() const { return n_generated_; }

  // Ends generation for `reason` (the step's or the loop's own). Unless a stop string already
  // ended it, flushes the decoder and the stop matcher; an unfinished UTF-8 character comes out
  // as U+FFFD, which may complete a stop string (the reason becomes kStop). A loop that drops
  // what is left (the scheduler, on a cancelled or failed request) does not call it.
  TokenEnding finish(FinishReason reason);

  // True while the reply is inside its reasoning block.
  bool in_reasoning() const { return parser_.in_reasoning(); }

 private:
  // The next token: a forced one (the reasoning budget's close) or the sampler's pick.
  Result<int32_t> pick(std::span<const float> logits, const DraftProposal* draft);
  // The sampled token's log-probability and the top_logprobs most likely tokens.
  SampledToken logprobs_of(std::span<const float> logits, int32_t token);

  const Tokenizer& tokenizer_;
  Sampler sampler_;
  TokenConstraint* constraint_;
  StreamingDecoder decoder_;
  StopMatcher stops_;
  int64_t max_tokens_;
  int32_t top_logprobs_;
  int64_t n_generated_ = 0;
  std::vector<int32_t> top_ids_;  // [n_vocab] token ids ordered by logit, for logprobs
  ReplyParser parser_;
  chat::ChannelFormat channels_;  // the reply's channel format: how a budget closes reasoning
  int32_t reasoning_budget_;
  int64_t n_reasoning_ = 0;        // tokens sampled inside the reasoning block
  bool reasoning_closed_ = false;  // the budget's close was forced
  std::vector<int32_t> forced_;    // tokens still to emit instead of sampling, in order
  // The constraint's forced prefix (TokenConstraint::forced_prefix), still to emit, last first.
  std::vector<int32_t> prefix_;
  bool prefix_taken_ = false;  // prefix_ was filled (at the answer's first token)
};

}  // namespace minfer::engine
