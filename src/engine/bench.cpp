#include "engine/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/cpu_features.h"

namespace minfer::engine {

namespace {

struct Stats {
  double mean = 0.0;
  double stddev = 0.0;  // sample standard deviation (n − 1), 0 for one sample
};

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double sq = 0.0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(v.size() - 1));
  }
  return s;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// One pp run: prompt ids at positions 0.. in forwards of n_batch, last row's logits only.
Status run_prompt(Runtime& runtime, const std::vector<int32_t>& prompt, int64_t n_batch) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  for (int64_t b = 0; b < n; b += n_batch) {
    Batch batch;
    const int64_t end = std::min(n, b + n_batch);
    for (int64_t pos = b; pos < end; ++pos) {
      batch.add(prompt[static_cast<size_t>(pos)], static_cast<int32_t>(pos), 0, pos == end - 1);
    }
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime.step(batch));
    (void)logits;
  }
  return Status::ok();
}

// One tg run: n tokens, one forward each, each fed the previous argmax.
Status run_gen(Runtime& runtime, int64_t n, int32_t first_token) {
  int32_t token = first_token;
  for (int64_t pos = 0; pos < n; ++pos) {
    Batch batch;
    batch.add(token, static_cast<int32_t>(pos), 0, true);
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime.step(batch));
    token = argmax(logits);
    if (runtime.trace() != nullptr) runtime.trace()->end_step(token, logits);
  }
  return Status::ok();
}

std::string size_label(uint64_t n_params) {
  // llama.cpp names types by layer count ("0.5B", "1B"); the parameter count rounded to one
  // decimal gives the same names for the presets here.
  const double b = static_cast<double>(n_params) / 1e9;
  if (b < 0.1) return fmt::format("{:.0f}M", static_cast<double>(n_params) / 1e6);
  return fmt::format("{:.1f}B", b);
}

}  // namespace

std::string file_type_name(int64_t file_type) {
  switch (file_type) {
    case 0:
      return "all F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 10:
      return "Q2_K - Medium";
    case 11:
      return "Q3_K - Small";
    case 12:
      return "Q3_K - Medium";
    case 13:
      return "Q3_K - Large";
    case 14:
      return "Q4_K - Small";
    case 15:
      return "Q4_K - Medium";
    case 16:
      return "Q5_K - Small";
    case 17:
      return "Q5_K - Medium";
    case 18:
      return "Q6_K";
    case 32:
      return "BF16";
    default:
      return "unknown, may not work";
  }
}

double measure_read_bandwidth(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                              int64_t bytes) {
  constexpr int64_t kChunk = int64_t{1} << 18;  // floats per task: 1 MiB
  const int64_t n_chunks = std::max<int64_t>(1, bytes / (kChunk * 4));
  std::vector<float> buffer(static_cast<size_t>(n_chunks * kChunk), 1.0f);  // [n_chunks * kChunk]
  std::vector<float> sums(static_cast<size_t>(n_chunks));                   // [n_chunks]
  double best = 0.0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n_chunks, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        // x · x reads each cache line once.
        const float* x = buffer.data() + c * kChunk;
        sums[static_cast<size_t>(c)] = table.dot_f32(x, x, kChunk);
      }
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n_chunks * kChunk * 4) / seconds);
  }
  return best;
}

Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& o) {
  if (o.repetitions < 1 || o.n_prompt < 0 || o.n_gen < 0 || o.n_batch < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[bench] repetitions {} / n_prompt {} / n_gen {} / n_batch {}: expected "
                      "≥ 1 / ≥ 0 / ≥ 0 / ≥ 1",
                      o.repetitions, o.n_prompt, o.n_gen, o.n_batch);
  }
  const ModelConfig& c = model.config();
  const int64_t n_ctx = std::max<int64_t>({o.n_prompt, o.n_gen, 1});
  BenchReport report;
  report.model_filename = model_filename;
  for (const GgufTensorInfo& t : model.file().tensors()) {
    report.model_size += t.n_bytes;
    report.model_n_params += t.n_elements;
  }
  int64_t file_type = -1;
  if (Result<int64_t> ft = model.file().get_integer("general.file_type"); ft.is_ok()) {
    file_type = *ft;
  }
  report.model_type =
      fmt::format("{} {} {}", c.arch, size_label(report.model_n_params), file_type_name(file_type));
  RuntimeOptions runtime_options = o;
  runtime_options.n_ctx = n_ctx;
  runtime_options.n_ctx_total = n_ctx;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> runtime,
                          Runtime::create(model, runtime_options));
  KvCache& cache = runtime->cache();
  report.n_batch = o.n_batch;
  report.cache_type = kv_cell_type_name(o.cache_type);
  report.isa = runtime->isa_name();
  report.n_threads = runtime->n_threads();
  report.decode_weight_bytes = weight_bytes_read(model.build_graph(1, 1));
  if (o.roofline) {
    report.read_bandwidth =
        measure_read_bandwidth(runtime->kernels(), runtime->pool(), o.roofline_bytes);
  }

  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(c.n_vocab - 1));
  std::vector<int32_t> prompt(static_cast<size_t>(o.n_prompt));  // [n_prompt]
  for (int32_t& t : prompt) t = pick(rng);
  const int32_t first_gen_token = pick(rng);

  const int64_t n_runs =
      (o.n_prompt > 0 ? o.repetitions + 1 : 0) + (o.n_gen > 0 ? o.repetitions + 1 : 0);
  Progress progress("bench", n_runs, o.progress);
  int64_t runs_done = 0;
  auto timed = [&](auto&& fn) -> Result<double> {
    cache.free_sequence(0);  // each run starts from an empty cache
    const auto t0 = std::chrono::steady_clock::now();
    MINFER_RETURN_IF_ERROR(fn());
    const auto t1 = std::chrono::steady_clock::now();
    cache.free_sequence(0);
    progress.update(++runs_done);
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
  };

  auto add_test = [&](std::string name, int64_t n_prompt, int64_t n_gen, auto&& fn) -> Status {
    BenchTest test;
    test.name = std::move(name);
    test.n_prompt = n_prompt;
    test.n_gen = n_gen;
    MINFER_ASSIGN_OR_RETURN(double warmup_ns, timed(fn));
    (void)warmup_ns;
    const double n_tokens = static_cast<double>(n_prompt + n_gen);
    for (int r = 0; r < o.repetitions; ++r) {
      MINFER_ASSIGN_OR_RETURN(double ns, timed(fn));
      test.samples_ns.push_back(ns);
      test.samples_ts.push_back(n_tokens * 1e9 / ns);
    }
    const Stats ns = stats_of(test.samples_ns);
    const Stats ts = stats_of(test.samples_ts);
    test.avg_ns = ns.mean;
    test.stddev_ns = ns.stddev;
    test.avg_ts = ts.mean;
    test.stddev_ts = ts.stddev;
    report.tests.push_back(std::move(test));
    return Status::ok();
  };
  if (o.n_prompt > 0) {
    MINFER_RETURN_IF_ERROR(add_test(fmt::format("pp{}", o.n_prompt), o.n_prompt, 0,
                                    [&] { return run_prompt(*runtime, prompt, o.n_batch); }));
  }
  if (o.n_gen > 0) {
    MINFER_RETURN_IF_ERROR(add_test(fmt::format("tg{}", o.n_gen), 0, o.n_gen,
                                    [&] { return run_gen(*runtime, o.n_gen, first_gen_token); }));
  }
  progress.finish();
  report.profile = runtime->profile_table();
  return report;
}

std::string bench_markdown(const BenchReport& r) {
  const double mib = static_cast<double>(r.model_size) / (1024.0 * 1024.0);
  const std::string size =
      mib < 1024.0 ? fmt::format("{:.2f} MiB", mib) : fmt::format("{:.2f} GiB", mib / 1024.0);
  const double p = static_cast<double>(r.model_n_params);
  const std::string params =
      p < 1e9 ? fmt::format("{:.2f} M", p / 1e6) : fmt::format("{:.2f} B", p / 1e9);
  std::string out;
  out += fmt::format("| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |\n", "model",
                     "size", "params", "backend", "threads", "test", "t/s");
  // Right-aligned columns end in ':' (markdown alignment), dashes filling the rest.
  out += fmt::format("| {} | {}: | {}: | {} | {}: | {}: | {}: |\n", std::string(30, '-'),
                     std::string(9, '-'), std::string(9, '-'), std::string(10, '-'),
                     std::string(6, '-'), std::string(14, '-'), std::string(19, '-'));
  for (const BenchTest& t : r.tests) {
    out += fmt::format("| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |\n",
                       r.model_type, size, params, "CPU", r.n_threads, t.name,
                       fmt::format("{:.2f} ± {:.2f}", t.avg_ts, t.stddev_ts));
  }
  if (r.read_bandwidth > 0.0) {
    out += fmt::format(
        "\ndecode reads {:.2f} MiB of weights per token; read bandwidth {:.2f} GB/s ({} "
        "threads): roofline {:.2f} t/s\n",
        static_cast<double>(r.decode_weight_bytes) / (1024.0 * 1024.0), r.read_bandwidth / 1e9,
        r.n_threads, r.roofline_ts());
    for (const BenchTest& t : r.tests) {
      if (t.n_gen > 0) {
        out +=
            fmt::format("{} reaches {:.2f} of the roofline\n", t.name, t.avg_ts / r.roofline_ts());
      }
    }
  }
  return out;
}

std::string bench_json(const BenchReport& r) {
  nlohmann::json array = nlohmann::json::array();
  for (const BenchTest& t : r.tests) {
    array.push_back({
        {"model_filename", r.model_filename},
        {"model_type", r.model_type},
        {"model_size", r.model_size},
        {"model_n_params", r.model_n_params},
        {"backends", "CPU"},
        {"isa", r.isa},
        {"n_batch", r.n_batch},
        {"n_threads", r.n_threads},
        {"type_k", r.cache_type},
        {"type_v", r.cache_type},
        {"test", t.name},
        {"n_prompt", t.n_prompt},
        {"n_gen", t.n_gen},
        {"avg_ns", static_cast<uint64_t>(t.avg_ns)},
        {"stddev_ns", static_cast<uint64_t>(t.stddev_ns)},
        {"avg_ts", t.avg_ts},
        {"stddev_ts", t.stddev_ts},
        {"samples_ns", t.samples_ns},
        {"samples_ts", t.samples_ts},
    });
    if (r.read_bandwidth > 0.0) {
      array.back()["decode_weight_bytes"] = r.decode_weight_bytes;
      array.back()["read_bandwidth"] = r.read_bandwidth;
      array.back()["roofline_ts"] = r.roofline_ts();
    }
  }
  return array.dump(2) + "\n";
}

}  // namespace minfer::engine
