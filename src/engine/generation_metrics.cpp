#include "engine/generation_metrics.h"

#include <algorithm>

#include <fmt/format.h>

namespace minfer::engine {

double GenerationMetrics::prefill_tok_s() const {
  return prefill_ms > 0.0 ? static_cast<double>(n_prefilled) * 1000.0 / prefill_ms : 0.0;
}

double GenerationMetrics::decode_tok_s() const {
  return decode_ms > 0.0 ? static_cast<double>(n_decoded) * 1000.0 / decode_ms : 0.0;
}

GenerationMetrics generation_metrics(const RequestStats& stats, const RequestForwards& forwards) {
  GenerationMetrics m;
  m.n_prompt = stats.n_prompt;
  m.n_reused = stats.n_cached;
  m.n_prefilled = stats.n_prompt - stats.n_cached;
  m.prefill_ms = forwards.prefill.total_ms;
  m.ttft_ms = stats.ttft_ms;
  m.n_generated = stats.n_generated;
  m.decode_ms = stats.n_generated > 0 ? std::max(0.0, stats.total_ms - stats.ttft_ms) : 0.0;
  m.n_decoded = forwards.decode.count;
  m.n_shifts = stats.n_shifts;
  m.n_drafted = stats.n_drafted;
  m.n_accepted = stats.n_draft_accepted;
  m.n_verified = forwards.n_verified;
  m.prefill_forwards = forwards.prefill;
  m.decode_forwards = forwards.decode;
  return m;
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
  if (m.n_shifts > 0) out += fmt::format("context shifts:      {}\n", m.n_shifts);
  if (m.n_verified > 0) {
    out += fmt::format("speculative:         {} drafted, {} accepted ({:.1f}%) in {} forwards\n",
                       m.n_drafted, m.n_accepted,
                       100.0 * static_cast<double>(m.n_accepted) /
                           static_cast<double>(std::max<int64_t>(1, m.n_drafted)),
                       m.n_verified);
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
