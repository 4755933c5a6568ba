#include "engine/token_pipeline.h"

#include <algorithm>
#include <utility>

#include "chat/reply_format.h"
#include "sampling/log_softmax.h"

namespace minfer {

namespace {

struct FinishReasonNames {
  FinishReason reason;
  const char* name;
  const char* text;
};

constexpr FinishReasonNames kFinishReasonNames[] = {
    {FinishReason::kEog, "eog", "end-of-generation token"},
    {FinishReason::kStop, "stop", "stop string"},
    {FinishReason::kLength, "length", "token limit (-n) reached"},
    {FinishReason::kContext, "context", "context full"},
    {FinishReason::kCancelled, "cancelled", "cancelled"},
    {FinishReason::kToolCalls, "tool_calls", "tool call"},
};

const FinishReasonNames* names_of(FinishReason reason) {
  for (const FinishReasonNames& names : kFinishReasonNames) {
    if (names.reason == reason) return &names;
  }
  return nullptr;
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  const FinishReasonNames* names = names_of(reason);
  return names != nullptr ? names->name : "unknown";
}

const char* finish_reason_text(FinishReason reason) {
  const FinishReasonNames* names = names_of(reason);
  return names != nullptr ? names->text : "unknown";
}

}  // namespace minfer

namespace minfer::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return "";
  held_ += text;
  // The earliest full match wins (ties: the longer stop string, which starts at the same place).
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at != std::string::npos && (at < first || (at == first && stop.size() > matched_.size()))) {
      first = at;
      matched_ = stop;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest suffix of held_ that is a proper prefix of some stop string: every place a
  // later match could start lies inside it, so everything before it is safe.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out = stopped_ ? "" : held_;
  held_.clear();
  return out;
}

bool prompt_opens_reasoning(const Tokenizer& tokenizer, std::span<const int32_t> prompt) {
  constexpr size_t kTail = 8;
  const std::span<const int32_t> tail =
      prompt.subspan(prompt.size() - std::min(prompt.size(), kTail));
  // Ids outside the vocabulary say nothing (the request is refused for them: check_request).
  if (!tokenizer.check_ids(tail).is_ok()) return false;
  return chat::prompt_opens_reasoning(tokenizer.decode(tail, /*render_special=*/true));
}

namespace {

ReplyParserOptions parser_options(const Tokenizer& tokenizer, ReplyParserOptions reply,
                                  std::span<const int32_t> prompt) {
  if (reply.extract_reasoning && !reply.starts_in_reasoning) {
    reply.starts_in_reasoning = prompt_opens_reasoning(tokenizer, prompt);
  }
  return reply;
}

}  // namespace

TokenPipeline::TokenPipeline(const Tokenizer& tokenizer, int32_t n_vocab,
                             TokenPipelineOptions options, std::span<const int32_t> prompt)
    : tokenizer_(tokenizer),
      sampler_(std::move(options.sampling), n_vocab),
      constraint_(options.constraint),
      decoder_(tokenizer, options.render_special),
      stops_(std::move(options.stops)),
      max_tokens_(options.max_tokens),
      top_logprobs_(options.top_logprobs),
      parser_(parser_options(tokenizer, options.reply, prompt)),
      channels_(options.reply.channels),
      reasoning_budget_(options.reasoning_budget) {
  for (const int32_t t : prompt) sampler_.accept(t);
}

Result<int32_t> TokenPipeline::pick(std::span<const float> logits, const DraftProposal* draft) {
  if (reasoning_budget_ >= 0 && !reasoning_closed_ && parser_.in_reasoning() &&
      n_reasoning_ >= reasoning_budget_) {
    // The budget is spent: the engine writes the close itself and the answer follows.
    reasoning_closed_ = true;
    forced_ = tokenizer_.encode(chat::reasoning_close_forced(channels_), /*add_special=*/false,
                                /*parse_special=*/true);
    std::reverse(forced_.begin(), forced_.end());
  }
  if (!forced_.empty()) {
    const int32_t token = forced_.back();
    forced_.pop_back();
    if (constraint_ == nullptr || constraint_->accept(token).is_ok()) return token;
    // A grammar holds the whole reply, reasoning included, and does not let it close here: the
    // grammar decides (refusing the close used to fail the request).
    forced_.clear();
  }
  // A forced call's opening (TokenConstraint::forced_prefix), written at the answer's start.
  if (constraint_ != nullptr && !parser_.in_reasoning() && !prefix_taken_) {
    prefix_taken_ = true;
    prefix_ = tokenizer_.encode(constraint_->forced_prefix(), /*add_special=*/false,
                                /*parse_special=*/true);
    std::reverse(prefix_.begin(), prefix_.end());
  }
  if (!prefix_.empty()) {
    const int32_t token = prefix_.back();
    prefix_.pop_back();
    if (constraint_->accept(token).is_ok()) return token;
    prefix_.clear();  // the tokenizer spells it in a way the grammar does not read: sample it
  }
  if (constraint_ == nullptr) {
    return draft != nullptr ? sampler_.sample(logits, *draft) : sampler_.sample(logits);
  }
  // The constrained distribution (sampler.h: the chain, masked and run again when its pick is
  // not allowed) is not the chain's p: the draft is left to the caller's compare rule.
  Result<int32_t> sampled = sampler_.sample(logits, *constraint_);
  Status accepted = sampled.is_ok() ? constraint_->accept(sampled.value()) : sampled.status();
  if (!accepted.is_ok()) return accepted;
  return sampled.value();
}

Result<TokenStep> TokenPipeline::next(std::span<const float> logits) {
  return next(logits, nullptr);
}

Result<TokenStep> TokenPipeline::next(std::span<const float> logits, const DraftProposal* draft) {
  MINFER_ASSIGN_OR_RETURN(const int32_t token, pick(logits, draft));
  sampler_.accept(token);
  TokenStep step;
  step.sampled = logprobs_of(logits, token);
  ++n_generated_;
  if (tokenizer_.is_eog(token)) {
    step.finish = FinishReason::kEog;
    return step;
  }
  step.text = stops_.push(decoder_.push(token));
  if (parser_.in_reasoning()) ++n_reasoning_;
  step.delta = parser_.push(step.text);
  if (stops_.stopped()) {
    step.finish = FinishReason::kStop;
  } else if (constraint_ != nullptr && constraint_->complete()) {
    // Nothing but an end-of-generation token may follow: end here instead of computing it.
    step.finish = FinishReason::kEog;
  } else if (at_limit()) {
    step.finish = FinishReason::kLength;
  }
  return step;
}

TokenEnding TokenPipeline::finish(FinishReason reason) {
  TokenEnding end;
  end.finish = reason;
  if (!stops_.stopped()) {
    end.flushed = stops_.push(decoder_.flush());
    end.held = stops_.flush();
  }
  if (stops_.stopped()) {
    end.finish = FinishReason::kStop;
    end.stop = stops_.matched();
  }
  end.delta = parser_.push(end.flushed + end.held);
  append_delta(end.delta, parser_.finish());
  if (parser_.n_tool_calls() > 0 &&
      (end.finish == FinishReason::kEog || end.finish == FinishReason::kStop)) {
    end.finish = FinishReason::kToolCalls;
  }
  return end;
}

SampledToken TokenPipeline::logprobs_of(std::span<const float> logits, int32_t token) {
  SampledToken out;
  out.token = token;
  if (top_logprobs_ < 0) return out;
  // The model's distribution: log-softmax of the raw logits, in double.
  const double log_z = log_normalizer(logits);
  out.logprob = static_cast<float>(logits[static_cast<size_t>(token)] - log_z);
  if (top_logprobs_ == 0) return out;
  top_ids_.resize(logits.size());
  for (size_t i = 0; i < top_ids_.size(); ++i) top_ids_[i] = static_cast<int32_t>(i);
  const size_t n = std::min(static_cast<size_t>(top_logprobs_), top_ids_.size());
  // Most likely first; equal logits by id, so the order does not depend on the sort.
  std::partial_sort(top_ids_.begin(), top_ids_.begin() + static_cast<std::ptrdiff_t>(n),
                    top_ids_.end(), [&](int32_t a, int32_t b) {
                      const float la = logits[static_cast<size_t>(a)];
                      const float lb = logits[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  out.top.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = top_ids_[i];
    out.top.push_back({id, static_cast<float>(logits[static_cast<size_t>(id)] - log_z)});
  }
  return out;
}

}  // namespace minfer::engine
