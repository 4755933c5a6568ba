#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/elapsed.h"

namespace minfer::engine {

double GenerationMetrics::prefill_tok_s() const {
  return prefill_ms > 0.0 ? static_cast<double>(n_prefilled) * 1000.0 / prefill_ms : 0.0;
}

double GenerationMetrics::decode_tok_s() const {
  return decode_ms > 0.0 ? static_cast<double>(n_decoded) * 1000.0 / decode_ms : 0.0;
}

Result<GenerateResult> generate(Session& session, const Tokenizer& tokenizer,
                                std::span<const int32_t> prompt, const GenerateOptions& options,
                                const TextCallback& on_text) {
  ReplyCallback on_reply;
  if (on_text) {
    on_reply = [&on_text](const ReplyDelta& delta) {
      return delta.content.empty() || on_text(delta.content);
    };
  }
  return generate_reply(session, tokenizer, prompt, options, on_reply);
}

Result<GenerateResult> generate_reply(Session& session, const Tokenizer& tokenizer,
                                      std::span<const int32_t> prompt,
                                      const GenerateOptions& options,
                                      const ReplyCallback& on_reply) {
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().n_vocab);
  MINFER_RETURN_IF_ERROR(validate(options.sampling, n_vocab));
  MINFER_RETURN_IF_ERROR(tokenizer.check_ids(prompt));
  const auto t_start = std::chrono::steady_clock::now();
  session.reset_times();
  const int64_t n_keep = options.n_keep < 0 ? static_cast<int64_t>(prompt.size()) : options.n_keep;
  if (options.context_shift && n_keep + 2 > session.n_ctx()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[generate] context shift keeps {} tokens: expected at most {} (n_ctx {} "
                      "less 2 positions to shift)",
                      n_keep, session.n_ctx() - 2, session.n_ctx());
  }
  const bool speculate = options.speculative.enabled();
  if (speculate && (options.context_shift || session.model().config().n_swa > 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[generate] speculative decoding does not run with {}",
                      options.context_shift ? "a context shift" : "sliding-window layers");
  }
  MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, session.set_prompt(prompt));
  SpeculativeDecoder speculator(session, options.speculative, &options.sampling);
  // Positions taken by sampled tokens (with speculation the cache may hold drafts beyond them;
  // without, it is the session's n_past).
  auto n_held = [&] { return speculator.n_held(); };

  GenerateResult result;
  GenerationMetrics& m = result.metrics;
  const PrefillReport& report = session.last_prefill();
  m.n_prompt = report.n_prompt;
  m.n_reused = report.n_reused;
  m.n_prefilled = report.n_prefilled;
  m.prefill_ms = report.ms;

  TokenPipeline pipeline(tokenizer, n_vocab,
                         {.sampling = options.sampling,
                          .stops = options.stops,
                          .render_special = options.render_special,
                          .max_tokens = options.n_predict,
                          .constraint = options.constraint,
                          .reply = options.reply,
                          .reasoning_budget = options.reasoning_budget},
                         prompt);
  // The callback's false stops generation as a cancel does (checked before the next token).
  bool callback_stopped = false;
  auto emit = [&](const ReplyDelta& delta) {
    if (delta.empty()) return;
    result.text += delta.content;
    result.reasoning += delta.reasoning;
    append_tool_calls(result.tool_calls, delta.tool_calls);
    if (on_reply && !on_reply(delta)) callback_stopped = true;
  };

  std::chrono::steady_clock::time_point t_first;
  while (true) {
    if (callback_stopped ||
        (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed))) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (pipeline.at_limit()) {
      result.finish = FinishReason::kLength;
      break;
    }
    // The next token would sit at position n_past: there must be one (or a shift makes one).
    if (!options.context_shift && n_held() >= session.n_ctx()) {
      result.finish = FinishReason::kContext;
      break;
    }
    // A row that a draft model's sampled token follows takes the accept/resample rule.
    MINFER_ASSIGN_OR_RETURN(const TokenStep step,
                            pipeline.next(logits, speculate ? speculator.proposal() : nullptr));
    const int32_t token = step.sampled.token;
    if (options.trace != nullptr) options.trace->end_step(token, logits);
    if (m.n_generated == 0) {
      t_first = std::chrono::steady_clock::now();
      m.ttft_ms = ms_between(t_start, t_first);
    }
    ++m.n_generated;
    result.tokens.push_back(token);
    emit(step.delta);
    // An end-of-generation token, a stop string or n_predict tokens.
    if (step.finish.has_value()) {
      result.finish = *step.finish;
      break;
    }
    if (options.context_shift && session.n_past() >= session.n_ctx()) {
      MINFER_ASSIGN_OR_RETURN(const int64_t n_discarded, session.shift_context(n_keep));
      ++m.n_shifts;
      m.n_discarded += n_discarded;
    } else if (!options.context_shift && n_held() + 1 >= session.n_ctx()) {
      // Stop here rather than run a forward whose logits nobody would use.
      result.finish = FinishReason::kContext;
      break;
    }
    if (speculate) {
      MINFER_ASSIGN_OR_RETURN(logits, speculator.advance(token));
    } else {
      MINFER_ASSIGN_OR_RETURN(logits, session.decode(token));
    }
  }
  speculator.settle();
  m.speculative = speculator.stats();
  const TokenEnding end = pipeline.finish(result.finish);
  result.finish = end.finish;
  result.stop = end.stop;
  emit(end.delta);
  if (m.n_generated > 0) m.decode_ms = ms_between(t_first, std::chrono::steady_clock::now());
  m.prefill_forwards = session.prefill_times();
  m.decode_forwards = session.decode_times();
  m.n_decoded = m.decode_forwards.count;
  return result;
}

std::string format_metrics(const GenerationMetrics& m) {
  std::string out;
  out += fmt::format("prompt tokens:       {} ({} prefilled, {} reused)\n", m.n_prompt,
                     m.n_prefilled, m.n_reused);
  out += fmt::format("prefill:             {:.2f} ms, {:.2f} tok/s\n", m.prefill_ms,
                     m.prefill_tok_s());
  out += fmt::format("time to first token: {:.2f} ms\n", m.ttft_ms);
  out += fmt::format("generated tokens:    {}\n", m.n_generated);
  out += fmt::format("decode:              {:.2f} ms, {:.2f} tok/s ({} forwards)\n", m.decode_ms,
                     m.decode_tok_s(), m.n_decoded);
  if (m.n_shifts > 0) {
    out +=
        fmt::format("context shifts:      {} ({} tokens discarded)\n", m.n_shifts, m.n_discarded);
  }
  const SpeculativeStats& sp = m.speculative;
  if (sp.n_verified > 0) {
    out += fmt::format("speculative:         {} drafted, {} accepted ({:.1f}%) in {} forwards\n",
                       sp.n_drafted, sp.n_accepted,
                       100.0 * static_cast<double>(sp.n_accepted) /
                           static_cast<double>(std::max<int64_t>(1, sp.n_drafted)),
                       sp.n_verified);
  }
  auto times = [](const char* label, const ForwardTimes& t) {
    if (t.count == 0) return fmt::format("{}none\n", label);
    return fmt::format("{}min {:.3f} / mean {:.3f} / max {:.3f} ms ({} forwards)\n", label,
                       t.min_ms, t.mean_ms(), t.max_ms, t.count);
  };
  out += times("prefill forward:     ", m.prefill_forwards);
  out += times("decode forward:      ", m.decode_forwards);
  return out;
}

}  // namespace minfer::engine
