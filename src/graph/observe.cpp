#include "graph/observe.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "graph/weight_tensor.h"

namespace minfer {

TensorStats tensor_stats(std::span<const float> x, size_t max_samples) {
  TensorStats s;
  s.count = static_cast<int64_t>(x.size());
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  double sum = 0.0;
  double sum_abs = 0.0;
  int64_t n_finite = 0;
  for (float v : x) {
    if (std::isnan(v)) {
      ++s.n_nan;
    } else if (std::isinf(v)) {
      ++s.n_inf;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      sum_abs += std::fabs(v);
      ++n_finite;
    }
  }
  if (n_finite > 0) {
    s.min = lo;
    s.max = hi;
    s.mean = sum / static_cast<double>(n_finite);
    s.mean_abs = sum_abs / static_cast<double>(n_finite);
  }
  const size_t n = std::min(max_samples, x.size());
  for (size_t i = 0; i < n; ++i) s.samples.push_back(x[i * x.size() / n]);
  return s;
}

namespace {

// JSON has no NaN or infinity: those samples become null.
nlohmann::json json_number(float v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

nlohmann::json to_json(const TensorStats& s) {
  nlohmann::json samples = nlohmann::json::array();
  for (float v : s.samples) samples.push_back(json_number(v));
  return {{"min", s.min},     {"max", s.max},     {"mean", s.mean},   {"mean_abs", s.mean_abs},
          {"n_nan", s.n_nan}, {"n_inf", s.n_inf}, {"count", s.count}, {"samples", samples}};
}

nlohmann::json graph_to_json(const Graph& graph) {
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    nlohmann::json j = {{"id", i},
                        {"name", n.name},
                        {"op", op_name(n.op)},
                        {"shape", {n.rows, n.cols}},
                        {"inputs", n.inputs}};
    if (n.weight != nullptr && n.weight->name != nullptr) {
      j["weight"] = {{"name", n.weight->name},
                     {"type", ggml_type_info(n.weight->type).name},
                     {"shape", {n.weight->n_rows, n.weight->n_cols}}};
    }
    if (n.il >= 0) j["layer"] = n.il;
    nodes.push_back(std::move(j));
  }
  return {{"nodes", nodes}, {"output", graph.output}};
}

namespace {

enum class GraphFormat { kDot, kJson };

// The format a dump file's extension asks for; anything but .dot and .json is an error.
Result<GraphFormat> graph_format(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".dot") return GraphFormat::kDot;
  if (ext == ".json") return GraphFormat::kJson;
  return make_error(ErrorCode::kInvalidArgument,
                    "[graph] cannot dump a graph to '{}': expected a .dot or .json file", path);
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return make_error(ErrorCode::kIo, "[graph] cannot write '{}'", path);
  return Status::ok();
}

}  // namespace

Status write_graph(const Graph& graph, const std::string& path) {
  MINFER_ASSIGN_OR_RETURN(const GraphFormat format, graph_format(path));
  return write_text(path, format == GraphFormat::kDot ? graph_to_dot(graph)
                                                      : graph_to_json(graph).dump(1) + "\n");
}

namespace {

std::string dot_body(const Graph& graph, const std::string& prefix) {
  std::string out;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    std::string label = fmt::format("{}\\n{} [{}, {}]", n.name, op_name(n.op), n.rows, n.cols);
    if (n.weight != nullptr && n.weight->name != nullptr) {
      label += fmt::format("\\n{} {}", n.weight->name, ggml_type_info(n.weight->type).name);
    }
    out += fmt::format("  {}{} [label=\"{}\"{}];\n", prefix, i, label,
                       static_cast<NodeId>(i) == graph.output ? ", style=bold" : "");
    for (NodeId in : n.inputs) out += fmt::format("  {}{} -> {}{};\n", prefix, in, prefix, i);
  }
  return out;
}

}  // namespace

std::string graph_to_dot(const Graph& graph) {
  return "digraph minfer {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n" +
         dot_body(graph, "n") + "}\n";
}

Status write_step_graphs(const Graph* prefill, const Graph* decode, const std::string& path) {
  MINFER_ASSIGN_OR_RETURN(const GraphFormat format, graph_format(path));
  if (format == GraphFormat::kJson) {
    nlohmann::json j = {{"prefill", prefill ? graph_to_json(*prefill) : nlohmann::json()},
                        {"decode", decode ? graph_to_json(*decode) : nlohmann::json()}};
    return write_text(path, j.dump(1) + "\n");
  }
  std::string text = "digraph minfer {\n  node [shape=box, fontname=monospace];\n";
  if (prefill) {
    text +=
        "  subgraph cluster_prefill {\n  label=\"prefill\";\n" + dot_body(*prefill, "p") + "  }\n";
  }
  if (decode) {
    text += "  subgraph cluster_decode {\n  label=\"decode\";\n" + dot_body(*decode, "d") + "  }\n";
  }
  return write_text(path, text + "}\n");
}

Status GraphDumper::on_step_graph(StepKind kind, const Graph& graph) {
  std::optional<Graph>& slot = kind == StepKind::kPrefill ? prefill_ : decode_;
  if (slot.has_value()) return Status::ok();
  slot = graph;
  return write_step_graphs(prefill_ ? &*prefill_ : nullptr, decode_ ? &*decode_ : nullptr, path_);
}

const char* step_kind_name(StepKind kind) {
  return kind == StepKind::kPrefill ? "prefill" : "decode";
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::open(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return make_error(ErrorCode::kIo, "[trace] cannot create '{}': {}", path, std::strerror(errno));
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(f));
}

TraceWriter::~TraceWriter() {
  if (!current_.is_null()) write_current();
  std::fclose(file_);
}

void TraceWriter::write_current() {
  if (!current_.contains("token")) current_["token"] = nullptr;
  const std::string line = current_.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
  current_ = nullptr;
  ++step_;
}

void TraceWriter::begin_step(StepKind kind, int64_t n_tokens) {
  if (!current_.is_null()) write_current();
  current_ = {{"step", step_},
              {"kind", step_kind_name(kind)},
              {"n_tokens", n_tokens},
              {"nodes", nlohmann::json::array()}};
}

void TraceWriter::on_node(const Node& node, std::span<const float> output, double seconds) {
  nlohmann::json j = {{"name", node.name},
                      {"op", op_name(node.op)},
                      {"shape", {node.rows, node.cols}},
                      {"ms", seconds * 1e3}};
  if (!output.empty()) j["stats"] = to_json(tensor_stats(output));
  current_["nodes"].push_back(std::move(j));
}

void TraceWriter::end_step(int32_t token, std::span<const float> logits) {
  current_["token"] = token;
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(5, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) {
                      return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
                    });
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < k; ++i) {
    top.push_back({ids[i], json_number(logits[static_cast<size_t>(ids[i])])});
  }
  current_["top5"] = top;
  write_current();
}

void OpProfile::on_node(const Node& node, double seconds) {
  Entry& e = part(kind_).ops[op_name(node.op)];
  e.seconds += seconds;
  ++e.calls;
}

void OpProfile::end_step(double step_seconds) {
  Part& p = part(kind_);
  p.step_seconds += step_seconds;
  ++p.steps;
}

int64_t OpProfile::n_calls(StepKind kind, const std::string& op) const {
  const auto& ops = part(kind).ops;
  const auto it = ops.find(op);
  return it == ops.end() ? 0 : it->second.calls;
}

double OpProfile::total_node_seconds(StepKind kind) const {
  double total = 0.0;
  for (const auto& [op, e] : part(kind).ops) total += e.seconds;
  return total;
}

double OpProfile::total_step_seconds(StepKind kind) const {
  return part(kind).step_seconds;
}

std::string OpProfile::table() const {
  std::string out;
  for (StepKind kind : {StepKind::kPrefill, StepKind::kDecode}) {
    const Part& p = part(kind);
    if (p.steps == 0) continue;
    out +=
        fmt::format("{} ({} steps, {:.2f} ms in all, {:.3f} ms per step)\n", step_kind_name(kind),
                    p.steps, p.step_seconds * 1e3, p.step_seconds * 1e3 / p.steps);
    out += fmt::format("  {:<12} {:>10} {:>8} {:>10} {:>7}\n", "op", "total ms", "calls", "mean µs",
                       "share");
    std::vector<std::pair<std::string, Entry>> rows(p.ops.begin(), p.ops.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    for (const auto& [op, e] : rows) {
      out += fmt::format("  {:<12} {:>10.3f} {:>8} {:>10.1f} {:>6.1f}%\n", op, e.seconds * 1e3,
                         e.calls, e.seconds * 1e6 / static_cast<double>(e.calls),
                         p.step_seconds > 0 ? 100.0 * e.seconds / p.step_seconds : 0.0);
    }
  }
  return out;
}

Result<std::unique_ptr<TensorDumper>> TensorDumper::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "[dump] cannot create directory '{}': {}", dir, ec.message());
  }
  return std::unique_ptr<TensorDumper>(new TensorDumper(dir));
}

void TensorDumper::begin_step(StepKind kind) {
  ++step_;
  kind_ = kind;
  std::filesystem::create_directories(fmt::format("{}/step_{:04}", dir_, step_));
}

void TensorDumper::on_node(const Node& node, std::span<const float> output) {
  if (output.empty()) return;
  const std::string file = fmt::format("step_{:04}/{}.f32", step_, node.name);
  std::ofstream out(dir_ + "/" + file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(output.data()),
            static_cast<std::streamsize>(output.size_bytes()));
  index_.push_back({{"step", step_},
                    {"kind", step_kind_name(kind_)},
                    {"name", node.name},
                    {"op", op_name(node.op)},
                    {"shape", {node.rows, node.cols}},
                    {"file", file}});
}

Status TensorDumper::end_step() {
  std::ofstream out(dir_ + "/index.json");
  out << index_.dump(1) << "\n";
  if (!out) return make_error(ErrorCode::kIo, "[dump] cannot write '{}/index.json'", dir_);
  return Status::ok();
}

}  // namespace minfer
