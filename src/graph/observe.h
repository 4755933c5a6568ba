// Seeing inside a run (DESIGN.md §4 "Graph"): per-node statistics for traces, per-op time
// profiles, graph dumps (DOT / JSON) and per-layer tensor dumps for comparing two runs.
// Everything here reads what the executor's NodeObserver hands it; nothing changes the numbers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/non_copyable.h"
#include "core/status.h"
#include "graph/graph.h"

namespace minfer {

struct TensorStats {
  float min = 0.0f;
  float max = 0.0f;
  double mean = 0.0;
  double mean_abs = 0.0;
  int64_t n_nan = 0;
  int64_t n_inf = 0;
  int64_t count = 0;
  std::vector<float> samples;  // up to max_samples values, evenly spaced
};

// Statistics over the finite values (NaN and ±inf are counted, not averaged).
TensorStats tensor_stats(std::span<const float> x, size_t max_samples = 64);
nlohmann::json to_json(const TensorStats& stats);

// The graph as JSON ({"nodes": [{id, name, op, shape, inputs, weight}], "output"}) or Graphviz DOT.
nlohmann::json graph_to_json(const Graph& graph);
std::string graph_to_dot(const Graph& graph);
// Writes by the file's extension: .dot or .json; anything else is an error naming it.
Status write_graph(const Graph& graph, const std::string& path);
// --dump-graph: the first prefill graph and a decode graph in one file: JSON
// {"prefill": …, "decode": …} or one DOT digraph with a cluster for each. Either may be null.
Status write_step_graphs(const Graph* prefill, const Graph* decode, const std::string& path);

enum class StepKind { kPrefill, kDecode };
const char* step_kind_name(StepKind kind);

// MINFER_TRACE / --trace: one JSON object per step, one line each, flushed as it goes:
// {"step", "kind", "n_tokens", "nodes": [{name, op, shape, ms, stats}], "token", "top5"}.
// kv_store nodes appear by name and time, without data.
class TraceWriter : NonCopyable {
 public:
  static Result<std::unique_ptr<TraceWriter>> open(const std::string& path);
  ~TraceWriter();

  // Starts a step; a previous step nobody ended (a prefill chunk whose logits were not sampled)
  // is written first, with "token": null.
  void begin_step(StepKind kind, int64_t n_tokens);
  void on_node(const Node& node, std::span<const float> output, double seconds);
  // Ends the step with the sampled token and the top 5 (id, logit) of its logits row.
  void end_step(int32_t token, std::span<const float> logits);

 private:
  explicit TraceWriter(FILE* file) : file_(file) {}
  void write_current();
  FILE* file_;
  int64_t step_ = 0;
  nlohmann::json current_;
};

// --profile: time and calls per op, separately for prefill and decode steps.
class OpProfile {
 public:
  void begin_step(StepKind kind) { kind_ = kind; }
  void on_node(const Node& node, double seconds);
  void end_step(double step_seconds);
  // A table per step kind: op, total ms, calls, mean µs, share of the step time.
  std::string table() const;
  double total_node_seconds(StepKind kind) const;
  double total_step_seconds(StepKind kind) const;
  // Steps of a kind seen, and nodes of an op run in them (0 for an op never seen).
  int64_t n_steps(StepKind kind) const { return part(kind).steps; }
  int64_t n_calls(StepKind kind, const std::string& op) const;

 private:
  struct Entry {
    double seconds = 0.0;
    int64_t calls = 0;
  };
  struct Part {
    std::map<std::string, Entry> ops;
    double step_seconds = 0.0;
    int64_t steps = 0;
  };
  Part& part(StepKind kind) { return kind == StepKind::kPrefill ? prefill_ : decode_; }
  const Part& part(StepKind kind) const { return kind == StepKind::kPrefill ? prefill_ : decode_; }
  StepKind kind_ = StepKind::kPrefill;
  Part prefill_;
  Part decode_;
};

// MINFER_DUMP_DIR: every node's output of every step as raw little-endian float32 files,
// DIR/step_NNNN/<node name>.f32, plus DIR/index.json listing {step, kind, name, op, shape, file}.
class TensorDumper {
 public:
  static Result<std::unique_ptr<TensorDumper>> open(const std::string& dir);
  void begin_step(StepKind kind);
  void on_node(const Node& node, std::span<const float> output);
  // Rewrites index.json (after every step, so an interrupted run still has a valid index).
  Status end_step();

 private:
  explicit TensorDumper(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  int64_t step_ = -1;
  StepKind kind_ = StepKind::kPrefill;
  nlohmann::json index_ = nlohmann::json::array();
};

// --dump-graph: keeps a copy of the first prefill graph and the first decode graph it is shown
// and writes both to one file (write_step_graphs) each time it first sees one of them.
class GraphDumper {
 public:
  explicit GraphDumper(std::string path) : path_(std::move(path)) {}
  // The graph a step of `kind` runs; a kind already written is ignored.
  Status on_step_graph(StepKind kind, const Graph& graph);

 private:
  std::string path_;
  std::optional<Graph> prefill_;
  std::optional<Graph> decode_;
};

// What a run asks to observe; the step runner feeds each one that is set. The caller ends
// each step's trace with the token it sampled (TraceWriter::end_step).
struct RunObservers {
  TraceWriter* trace = nullptr;
  OpProfile* profile = nullptr;
  TensorDumper* dump = nullptr;
  GraphDumper* graphs = nullptr;
};

}  // namespace minfer
