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

using minfer::GenerateParams;
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
  // The prompt left a <think> block open (Qwen3.5's generation prompt): a forced call closes it.
  bool prompt_opens_reasoning = false;

  // The parser's options for these settings.
  ReplyParserOptions parser_options() const {
    ReplyParserOptions o;
    o.tool_calls = parse_tool_calls ? format.tool_calls : chat::ToolCallFormat::kNone;
    o.drop_tool_calls = tool_choice == ToolChoice::kNone;  // read, so never content; not returned
    o.extract_reasoning = extract_reasoning && format.reasoning;
    o.channels = format.channels;
    if (o.tool_calls == chat::ToolCallFormat::kQwenXml) {
      o.xml_tools = std::make_shared<const XmlToolSchemas>(XmlToolSchemas::from_tools(tools));
    }
    return o;
  }
};

// One request: its prompt and the public request as given (GenerateParams: sampling, limits,
// stops, logprobs, slot, context shift, speculation, how the reply is split) — read where the
// engine needs each field, never restated — with what the engine made of it.
//  * generate.max_tokens 0: the prompt is computed (its cells stay in the slot with keep_slots)
//    and the request ends kLength with no token sampled.
//  * generate.json_object / grammar / tools: compiled into `constraint` by whoever submits (one
//    per request: it holds the request's matcher state); the engine reads only the constraint.
//  * generate.cancel, when set, is checked before each step, as the handle's cancel() is.
//  * Speculation: prompt lookup by generate.spec_ngram, or the scheduler's draft model when
//    spec_draft_model (SchedulerOptions::draft_model; not with spec_ngram): engine/speculative.h.
struct RequestParams {
  std::vector<int32_t> prompt;  // [n_prompt] ≥ 1 token, every id < n_vocab
  GenerateParams generate;
  chat::ReplyFormat format;  // the model's reply formats, from its chat template
  std::shared_ptr<TokenConstraint> constraint;
  bool spec_draft_model = false;

  // The reply settings over the model's formats (under tool_choice none, calls are parsed so that
  // their markup is not content, and dropped).
  ReplyRequest reply() const {
    ReplyRequest r;
    static_cast<ReplyParams&>(r) = generate;
    r.format = format;
    return r;
  }
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
  // The model has recurrent layers (Qwen3.5's gated delta nets): their state cannot drop its
  // oldest tokens, so context shift is refused.
  bool recurrent = false;
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
