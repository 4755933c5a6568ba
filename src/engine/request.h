// One generation request as the Scheduler sees it: what to generate (prompt, sampling, limits),
// the events it streams back, and a handle to cancel it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chat/reply_format.h"
#include "core/status.h"
#include "engine/forward_times.h"
#include "engine/token_pipeline.h"
#include "sampling/constraint.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

using minfer::kMaxTopLogprobs;
using minfer::ReplyParams;
using minfer::RequestHandle;
using minfer::RequestStats;
using minfer::ToolChoice;

// How a request's reply is split, and the tools behind it. The grammar hook: a request that
// parses tool calls carries the tools, the tool choice and the model's call format here, from
// which the call's constraint is built (the trigger of a lazy grammar: chat::tool_call_trigger).
struct ReplyRequest : ReplyParams {
  chat::ReplyFormat format;  // the model's, from its chat template

  // The parser's options for these settings.
  ReplyParserOptions parser_options() const {
    ReplyParserOptions o;
    o.tool_calls = parse_tool_calls ? format.tool_calls : chat::ToolCallFormat::kNone;
    o.extract_reasoning = extract_reasoning && format.reasoning;
    return o;
  }
};

struct RequestParams {
  std::vector<int32_t> prompt;  // [n_prompt] ≥ 1 token, every id < n_vocab
  SamplerParams sampling;
  // < 0: until an eog token, a stop string or a full context; 0: the prompt is computed (its
  // cells stay in the slot with keep_slots) and the request ends kLength with no token sampled.
  int64_t max_tokens = -1;
  std::vector<std::string> stops;  // empty strings are ignored
  bool render_special = false;     // emit the text of control tokens
  // < 0: no logprobs; else the sampled token's log-probability plus this many alternatives
  // (≤ kMaxTopLogprobs), from the model's distribution before the sampler chain.
  int32_t top_logprobs = -1;
  // When set, only tokens it allows are sampled (e.g. grammar::JsonConstraint for json_object),
  // and the request ends with kEog as soon as it is complete. One per request: it holds that
  // request's state.
  std::shared_ptr<TokenConstraint> constraint;
  ReplyRequest reply;
  int32_t slot = -1;  // < 0: any free slot; else wait for that one (GenerateParams::id_slot)
  // GenerateParams::context_shift, n_keep (< 0: the whole prompt).
  bool context_shift = false;
  int64_t n_keep = 0;
  // Speculative decoding by prompt lookup (GenerateParams::spec_ngram; 0: off): in each step a
  // decoding sequence also feeds the tokens that followed the last earlier occurrence of its last
  // spec_ngram tokens (engine/speculative.h lookup_draft), at most draft_max, none when fewer than
  // draft_min, and samples from their rows while each is the token sampled before it.
  int32_t spec_ngram = 0;
  int32_t draft_max = 16;
  int32_t draft_min = 0;
  // Speculative decoding by the scheduler's draft model (SchedulerOptions::draft_model; not with
  // spec_ngram): in each step the draft model proposes up to draft_max tokens after the
  // sequence's last one (greedy, or sampled with these settings and kept by the accept/resample
  // rule), stopping before a token whose probability is below draft_p_min.
  bool spec_draft_model = false;
  float draft_p_min = 0.0f;
  // Checked before each step when set (not owned): raised, the request ends kCancelled, as its
  // handle's cancel() does (GenerateParams::cancel).
  const std::atomic<bool>* cancel = nullptr;
};

// The forwards a request took part in: a batch of one's are its own (`minfer run`'s figures).
struct RequestForwards {
  ForwardTimes prefill;    // steps before its first token was sampled
  ForwardTimes decode;     // steps after it
  int64_t n_verified = 0;  // steps that verified its drafts
};

// What a request is checked against: the model's vocabulary, the context, the slots, whether a
// draft model is loaded and the model's sliding window (speculation needs none).
struct RequestBounds {
  int32_t n_vocab = 0;
  int64_t n_ctx = 0;
  int n_slots = 0;
  bool has_draft_model = false;
  int64_t n_swa = 0;
};

// Ok when the request can be queued. Errors: an empty prompt, bad ids or sampling parameters,
// top_logprobs past kMaxTopLogprobs, a slot that does not exist, bad context-shift or speculative
// settings (kInvalidArgument); a prompt longer than n_ctx (kOutOfRange).
Status check_request(const RequestParams& params, const Tokenizer& tokenizer,
                     const RequestBounds& bounds);

// What the scheduler streams to a request, on the scheduler's thread: one event per sampled
// token, then one final event with done set. Sinks must be quick and must not call the scheduler
// (cancelling through the handle is fine).
struct RequestEvent {
  std::string text;  // text that became safe to emit (never part of a stop string): the content
  std::string reasoning;                  // reasoning that became safe to emit
  std::vector<ToolCallDelta> tool_calls;  // pieces of tool calls
  std::vector<SampledToken> tokens;       // tokens sampled since the last event
  bool done = false;
  // When done:
  FinishReason finish = FinishReason::kLength;
  std::string stop;  // the stop string that matched (kStop)
  Status error;      // not ok when the request failed inside the engine
  RequestStats stats;
  RequestForwards forwards;
};

using EventSink = std::function<void(RequestEvent&&)>;

}  // namespace minfer::engine
