// Server metrics in the Prometheus text format (https://prometheus.io/docs/instrumenting/
// exposition_formats/), with vLLM's metric names where vLLM has one (vllm:num_requests_running,
// vllm:prompt_tokens_total, vllm:time_to_first_token_seconds, ...) so existing dashboards work.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "minfer/minfer.h"

namespace minfer::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The _bucket (cumulative, le labels), _sum and _count lines of `name`.
  std::string format(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;   // [n_buckets] upper bounds, ascending; +Inf is implicit
  std::vector<int64_t> counts_;  // [n_buckets + 1] per bucket, not cumulative
  double sum_ = 0.0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);

  void on_request_done(const RequestStats& stats, const char* finished_reason);
  void on_first_token(double seconds);
  void on_output_token(double seconds_since_previous);
  void on_http_status(int status);
  void set_model_name(std::string name);

  // The exposition text, with the scheduler's gauges at this moment.
  std::string format(const BatchStats& sched) const;

 private:
  mutable std::mutex mu_;
  std::string model_name_;
  int64_t prompt_tokens_ = 0;
  int64_t cached_prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  std::map<std::string, int64_t> finished_;  // finished_reason → requests
  std::map<int, int64_t> http_statuses_;     // status → responses
  Histogram ttft_;
  Histogram tpot_;
  Histogram e2e_;
  Histogram prompt_len_;
  Histogram generation_len_;
};

}  // namespace minfer::server
