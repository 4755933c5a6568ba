#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "tokenizer/streaming_decoder.h"

namespace minfer::engine {

namespace {

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEog:
      return "eog";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kContext:
      return "context";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

const char* finish_reason_text(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEog:
      return "end-of-generation token";
    case FinishReason::kStop:
      return "stop string";
    case FinishReason::kLength:
      return "token limit (-n) reached";
    case FinishReason::kContext:
      return "context full";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

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

double GenerationMetrics::prefill_tok_s() const {
  return prefill_ms > 0.0 ? static_cast<double>(n_prefilled) * 1000.0 / prefill_ms : 0.0;
}

double GenerationMetrics::decode_tok_s() const {
  return decode_ms > 0.0 ? static_cast<double>(n_decoded) * 1000.0 / decode_ms : 0.0;
}

Result<GenerateResult> generate(Session& session, const Tokenizer& tokenizer,
                                std::span<const int32_t> prompt, const GenerateOptions& options,
                                const TextCallback& on_text) {
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().n_vocab);
  MINFER_RETURN_IF_ERROR(validate(options.sampling, n_vocab));
  MINFER_RETURN_IF_ERROR(tokenizer.check_ids(prompt));
  const auto t_start = std::chrono::steady_clock::now();
  session.reset_times();
  MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, session.set_prompt(prompt));

  GenerateResult result;
  GenerationMetrics& m = result.metrics;
  const PrefillReport& report = session.last_prefill();
  m.n_prompt = report.n_prompt;
  m.n_reused = report.n_reused;
  m.n_prefilled = report.n_prefilled;
  m.prefill_ms = report.ms;

  Sampler sampler(options.sampling, n_vocab);
  for (const int32_t t : prompt) sampler.accept(t);
  StreamingDecoder decoder(tokenizer, options.render_special);
  StopMatcher stops(options.stops);
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    result.text += text;
    if (on_text) on_text(text);
  };

  std::chrono::steady_clock::time_point t_first;
  bool finished = false;
  while (!finished) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (options.n_predict >= 0 && m.n_generated >= options.n_predict) {
      result.finish = FinishReason::kLength;
      break;
    }
    // The next token would sit at position n_past: there must be one.
    if (session.n_past() >= session.n_ctx()) {
      result.finish = FinishReason::kContext;
      break;
    }
    const int32_t token = sampler.sample(logits);
    sampler.accept(token);
    if (options.trace != nullptr) options.trace->end_step(token, logits);
    if (m.n_generated == 0) {
      t_first = std::chrono::steady_clock::now();
      m.ttft_ms = ms_between(t_start, t_first);
    }
    ++m.n_generated;
    result.tokens.push_back(token);
    if (tokenizer.is_eog(token)) {
      result.finish = FinishReason::kEog;
      break;
    }
    emit(stops.push(decoder.push(token)));
    if (stops.stopped()) {
      result.finish = FinishReason::kStop;
      result.stop = stops.matched();
      break;
    }
    // Stop here rather than run a forward whose logits nobody would use.
    if (options.n_predict >= 0 && m.n_generated >= options.n_predict) {
      result.finish = FinishReason::kLength;
      finished = true;
    } else if (session.n_past() + 1 >= session.n_ctx()) {
      result.finish = FinishReason::kContext;
      finished = true;
    } else {
      MINFER_ASSIGN_OR_RETURN(logits, session.decode(token));
    }
  }
  if (result.finish != FinishReason::kStop) {
    // An unfinished UTF-8 character left in the decoder comes out as U+FFFD, which could still
    // complete a stop string.
    emit(stops.push(decoder.flush()));
    if (stops.stopped()) {
      result.finish = FinishReason::kStop;
      result.stop = stops.matched();
    }
    emit(stops.flush());
  }
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
