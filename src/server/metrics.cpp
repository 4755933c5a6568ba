#include "server/metrics.h"

#include <fmt/format.h>

namespace minfer::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::format(const std::string& name, const std::string& labels) const {
  std::string out;
  int64_t cumulative = 0;
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out +=
        fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, bounds_[i], cumulative);
  }
  cumulative += counts_.back();
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cumulative);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
  return out;
}

Metrics::Metrics(std::string model_name)
    : model_name_(std::move(model_name)),
      // vLLM's bucket bounds for these histograms.
      ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
             10.0}),
      tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}),
      e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0}),
      prompt_len_({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}),
      generation_len_({1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}) {}

void Metrics::set_model_name(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  model_name_ = std::move(name);
}

void Metrics::on_request_done(const RequestStats& s, const char* finished_reason) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += s.n_prompt;
  cached_prompt_tokens_ += s.n_cached;
  generation_tokens_ += s.n_generated;
  ++finished_[finished_reason];
  e2e_.observe(s.total_ms / 1000.0);
  prompt_len_.observe(static_cast<double>(s.n_prompt));
  generation_len_.observe(static_cast<double>(s.n_generated));
}

void Metrics::on_first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(seconds);
}

void Metrics::on_output_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  tpot_.observe(seconds);
}

void Metrics::on_http_status(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_statuses_[status];
}

std::string Metrics::format(const BatchStats& sched) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string labels = fmt::format("model_name=\"{}\"", model_name_);
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{{}}} {}\n", name, help, name, type, name,
                       labels, value);
  };
  metric("vllm:num_requests_running", "gauge", "Requests in the running batch.", sched.n_running);
  metric("vllm:num_requests_waiting", "gauge", "Requests waiting to be admitted.", sched.n_waiting);
  metric("vllm:prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         prompt_tokens_);
  metric("vllm:generation_tokens_total", "counter", "Generated tokens of finished requests.",
         generation_tokens_);
  metric("minfer_prompt_tokens_cached_total", "counter",
         "Prompt tokens taken from the prefix cache instead of computed.", cached_prompt_tokens_);
  metric("vllm:num_preemptions_total", "counter",
         "Times a running request gave its KV blocks back to be recomputed.", sched.n_preemptions);
  metric("minfer_step_errors_total", "counter",
         "Exceptions caught in scheduler steps; each failed its own requests, not the server.",
         sched.n_step_errors);
  out +=
      "# HELP vllm:request_success_total Finished requests by finish reason.\n"
      "# TYPE vllm:request_success_total counter\n";
  for (const char* reason : {"stop", "length", "abort"}) {
    auto it = finished_.find(reason);
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels,
                       reason, it == finished_.end() ? 0 : it->second);
  }
  out +=
      "# HELP minfer_http_responses_total HTTP responses by status code.\n"
      "# TYPE minfer_http_responses_total counter\n";
  for (const auto& [status, n] : http_statuses_) {
    out += fmt::format("minfer_http_responses_total{{code=\"{}\"}} {}\n", status, n);
  }
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    out += h.format(name, labels);
  };
  histogram("vllm:time_to_first_token_seconds", "Time from request to its first token.", ttft_);
  histogram("vllm:time_per_output_token_seconds", "Time between a request's output tokens.", tpot_);
  histogram("vllm:e2e_request_latency_seconds", "Time from request to its end.", e2e_);
  histogram("vllm:request_prompt_tokens", "Prompt tokens per request.", prompt_len_);
  histogram("vllm:request_generation_tokens", "Generated tokens per request.", generation_len_);
  metric("minfer_kv_blocks_used", "gauge", "KV blocks held by sequences.", sched.kv_blocks_used);
  metric("minfer_kv_blocks_free", "gauge", "KV blocks free (cached prefix blocks included).",
         sched.kv_blocks_free);
  metric("minfer_kv_blocks_cached", "gauge", "Free KV blocks that keep a reusable prefix.",
         sched.kv_blocks_cached);
  metric("minfer_kv_blocks_total", "gauge", "The KV block budget.", sched.kv_blocks_total);
  metric("minfer_kv_bytes_used", "gauge", "Bytes of the KV cells in blocks sequences hold.",
         sched.kv_bytes_used);
  metric("minfer_kv_bytes_total", "gauge", "Bytes the KV cache may grow to (the block budget).",
         sched.kv_bytes_total);
  out += fmt::format(
      "# HELP minfer_kv_bytes_per_position Bytes one cached position takes (every global "
      "layer's K and V) by cell type.\n"
      "# TYPE minfer_kv_bytes_per_position gauge\n"
      "minfer_kv_bytes_per_position{{{},cell_type=\"{}\"}} {}\n",
      labels, sched.kv_cell_type, sched.kv_bytes_per_position);
  metric("minfer_scheduler_steps_total", "counter", "Forward steps run.", sched.n_steps);
  metric("vllm:spec_decode_num_drafts_total", "counter",
         "Sequences' steps that verified drafted tokens (speculative decoding).",
         sched.n_spec_steps);
  metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Tokens drafted.",
         sched.n_draft_tokens);
  metric("vllm:spec_decode_num_accepted_tokens_total", "counter",
         "Drafted tokens sampled as drafted.", sched.n_draft_accepted);
  return out;
}

}  // namespace minfer::server
