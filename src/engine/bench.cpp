#include "engine/bench.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/cpu_features.h"
#include "engine/scheduler.h"
#include "engine/speculative.h"
#include "kernels/read_rate.h"
#include "tokenizer/tokenizer.h"

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

// A test's means and standard deviations from its samples.
void summarize(BenchTest& test) {
  const Stats ns = stats_of(test.samples_ns);
  const Stats ts = stats_of(test.samples_ts);
  test.avg_ns = ns.mean;
  test.stddev_ns = ns.stddev;
  test.avg_ts = ts.mean;
  test.stddev_ts = ts.stddev;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// One pp run: prompt ids at positions first_pos.. in forwards of n_batch, last row's logits
// only.
Status run_prompt(Runtime& runtime, std::span<const int32_t> prompt, int64_t first_pos,
                  int64_t n_batch) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  for (int64_t b = 0; b < n; b += n_batch) {
    Batch batch;
    const int64_t end = std::min(n, b + n_batch);
    for (int64_t i = b; i < end; ++i) {
      batch.add(prompt[static_cast<size_t>(i)], static_cast<int32_t>(first_pos + i), 0,
                i == end - 1);
    }
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime.step(batch));
    (void)logits;
  }
  return Status::ok();
}

// One tg run: n tokens at positions first_pos.., one forward each, each fed the previous
// argmax; `tokens` gets the argmaxes.
Status run_gen(Runtime& runtime, int64_t n, int64_t first_pos, int32_t first_token,
               std::vector<int32_t>& tokens) {
  tokens.clear();
  int32_t token = first_token;
  for (int64_t i = 0; i < n; ++i) {
    Batch batch;
    batch.add(token, static_cast<int32_t>(first_pos + i), 0, true);
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime.step(batch));
    token = argmax(logits);
    tokens.push_back(token);
    if (runtime.trace() != nullptr) runtime.trace()->end_step(token, logits);
  }
  return Status::ok();
}

// Leaves exactly the first n_depth depth tokens in sequence 0's cache: positions past them are
// forgotten, missing ones prefilled (untimed). A truncation that loses sliding-window cells
// keeps nothing, and the depth is prefilled again.
Status fill_depth(Runtime& runtime, std::span<const int32_t> depth, int64_t n_depth,
                  int64_t n_batch) {
  KvCache& cache = runtime.cache();
  if (n_depth == 0) {
    cache.free_sequence(0);
    return Status::ok();
  }
  cache.truncate(0, n_depth);
  const int64_t have = cache.length(0);
  MINFER_RETURN_IF_ERROR(run_prompt(
      runtime, depth.subspan(static_cast<size_t>(have), static_cast<size_t>(n_depth - have)), have,
      n_batch));
  MINFER_CHECK(cache.length(0) == n_depth, "bench: the depth prefill left a different length");
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
    case 38:
      return "MXFP4 MoE";
    default:
      return "unknown, may not work";
  }
}

double measure_read_bandwidth(kernels::ThreadPool& pool, int64_t bytes) {
  constexpr int64_t kChunk = int64_t{1} << 17;  // words per task: 1 MiB
  const int64_t n_chunks = std::max<int64_t>(1, bytes / (kChunk * 8));
  std::vector<uint64_t> buffer(static_cast<size_t>(n_chunks * kChunk), 1);  // [n_chunks * kChunk]
  std::vector<uint64_t> sums(static_cast<size_t>(n_chunks));                // [n_chunks]
  double best = 0.0;
  for (int pass = 0; pass < 5; ++pass) {
    for (kernels::ReadWidth width : {kernels::ReadWidth::kPlain, kernels::ReadWidth::kWidest}) {
      const auto t0 = std::chrono::steady_clock::now();
      pool.parallel_for(n_chunks, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          sums[static_cast<size_t>(c)] =
              kernels::sum_words(width, buffer.data() + c * kChunk, static_cast<size_t>(kChunk));
        }
      });
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(n_chunks * kChunk * 8) / seconds);
    }
  }
  // Every word is 1: a sum that is not the count means the reads were skipped.
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  MINFER_CHECK(total == static_cast<uint64_t>(n_chunks * kChunk), "read bandwidth: a bad sum");
  return best;
}

std::vector<BenchCase> bench_cases(const BenchGrid& grid) {
  std::vector<BenchCase> cases;
  for (int n_threads : grid.n_threads) {
    for (int64_t n_depth : grid.n_depth) {
      for (int64_t n_prompt : grid.n_prompt) {
        if (n_prompt > 0) cases.push_back({n_prompt, 0, n_depth, n_threads});
      }
      for (int64_t n_gen : grid.n_gen) {
        if (n_gen > 0) cases.push_back({0, n_gen, n_depth, n_threads});
      }
    }
  }
  return cases;
}

double BenchTest::cells_roofline_ts() const {
  const double weights_ts = hot.ts(read_bandwidth);
  if (weights_ts <= 0.0 || read_bandwidth <= 0.0) return 0.0;
  return 1.0 / (1.0 / weights_ts + kv_bytes_per_token / read_bandwidth);
}

std::vector<BenchRun> bench_run_order(size_t n_tests, int repetitions, bool interleave) {
  std::vector<BenchRun> order;
  if (interleave) {
    for (int r = 0; r <= repetitions; ++r) {
      for (size_t t = 0; t < n_tests; ++t) order.push_back({t, r});
    }
  } else {
    for (size_t t = 0; t < n_tests; ++t) {
      for (int r = 0; r <= repetitions; ++r) order.push_back({t, r});
    }
  }
  return order;
}

Result<std::vector<int64_t>> parse_bench_list(std::string_view text, std::string_view flag,
                                              int64_t min) {
  std::vector<int64_t> values;
  size_t item = 0;
  for (size_t at = 0; at <= text.size(); ++item) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view piece = text.substr(at, comma - at);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || ec != std::errc() || end != piece.data() + piece.size()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[bench] {} '{}': item {} is '{}', expected a comma-separated list of "
                        "integers ≥ {}",
                        flag, text, item + 1, piece, min);
    }
    if (value < min) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[bench] {} '{}': item {} is {}, expected ≥ {}", flag, text, item + 1,
                        value, min);
    }
    values.push_back(value);
    at = comma + 1;
  }
  return values;
}

std::string bench_test_name(int64_t n_prompt, int64_t n_gen, int64_t n_depth) {
  std::string name = n_gen == 0      ? fmt::format("pp{}", n_prompt)
                     : n_prompt == 0 ? fmt::format("tg{}", n_gen)
                                     : fmt::format("pp{}+tg{}", n_prompt, n_gen);
  if (n_depth > 0) name += fmt::format(" @ d{}", n_depth);
  return name;
}

BenchTokens bench_tokens(uint64_t seed, int64_t n_vocab, int64_t n_prompt, int64_t n_depth) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab - 1));
  BenchTokens t;
  t.prompt.resize(static_cast<size_t>(n_prompt));
  for (int32_t& id : t.prompt) id = pick(rng);
  t.first_gen = pick(rng);
  t.depth.resize(static_cast<size_t>(n_depth));
  for (int32_t& id : t.depth) id = pick(rng);
  return t;
}

Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& o) {
  BenchGrid grid;
  grid.n_prompt = {o.n_prompt};
  grid.n_gen = {o.n_gen};
  grid.n_depth = {o.n_depth};
  grid.n_threads = {o.n_threads};
  return run_bench(model, model_filename, o, grid);
}

namespace {

Status check_bench_options(const BenchOptions& o, const BenchGrid& grid) {
  auto below = [](const auto& list, int64_t min) {
    return std::any_of(list.begin(), list.end(), [&](auto v) { return v < min; });
  };
  if (o.repetitions < 1 || o.n_batch < 1 || below(grid.n_prompt, 0) || below(grid.n_gen, 0) ||
      below(grid.n_depth, 0) || grid.n_threads.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[bench] repetitions {} / n_prompt {} / n_gen {} / n_depth {} / n_batch {} "
                      "/ {} thread counts: expected ≥ 1 / ≥ 0 / ≥ 0 / ≥ 0 / ≥ 1 / ≥ 1",
                      o.repetitions, fmt::join(grid.n_prompt, ","), fmt::join(grid.n_gen, ","),
                      fmt::join(grid.n_depth, ","), o.n_batch, grid.n_threads.size());
  }
  const BenchSpeculative& spec = o.speculative;
  if (spec.ngram < 0 || spec.draft_max < 1 || (spec.ngram > 0 && spec.draft != nullptr)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[bench] speculative ngram {} / draft_max {} / a draft model {}: expected "
                      "≥ 0 / ≥ 1, and prompt lookup or a draft model, not both",
                      spec.ngram, spec.draft_max, spec.draft != nullptr ? "given" : "none");
  }
  const bool several_threads = std::any_of(grid.n_threads.begin(), grid.n_threads.end(),
                                           [&](int t) { return t != grid.n_threads.front(); });
  if (several_threads && (!o.observe.trace_path.empty() || !o.observe.dump_dir.empty())) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[bench] a trace or dump directory with {} thread counts: each builds its "
                      "own runtime, which would overwrite the other's files; expected one -t value",
                      grid.n_threads.size());
  }
  return Status::ok();
}

// The report's model fields (llama-bench's model_type, model_size, model_n_params).
void describe_model(const Model& model, BenchReport& report) {
  for (const GgufTensorInfo& t : model.file().tensors()) {
    report.model_size += t.n_bytes;
    report.model_n_params += t.n_elements;
  }
  int64_t file_type = -1;
  if (Result<int64_t> ft = model.file().get_integer("general.file_type"); ft.is_ok()) {
    file_type = *ft;
  }
  report.model_type = fmt::format("{} {} {}", model.config().arch,
                                  size_label(report.model_n_params), file_type_name(file_type));
}

// The roofline's rates for one thread count (options.roofline): taken before its tests and
// again after them, keeping the higher of each, since this machine's speed can change in between;
// the higher rates give the higher roofline, so the fractions reported are the lower ones.
struct RooflineRates {
  double read_bandwidth = 0.0;
  HotRoofline hot;

  // `decode` is the model's one-token graph (Model::build_graph(1, 1)).
  static RooflineRates measure(Runtime& runtime, const Graph& decode, const BenchOptions& o) {
    return {measure_read_bandwidth(runtime.pool(), o.roofline_bytes),
            measure_hot_roofline(runtime.kernels(), runtime.pool(), decode)};
  }
  // Both measured on the same graph: the same types in the same order.
  void keep_best(const RooflineRates& later) {
    read_bandwidth = std::max(read_bandwidth, later.read_bandwidth);
    for (size_t i = 0; i < hot.types.size() && i < later.hot.types.size(); ++i) {
      hot.types[i].hot_rate = std::max(hot.types[i].hot_rate, later.hot.types[i].hot_rate);
    }
  }
};

// Runs the tests of one runtime (one thread count): each a warm-up and o.repetitions timed runs
// from a cache holding exactly its depth, in bench_run_order.
class BenchRunner {
 public:
  BenchRunner(Runtime& runtime, const BenchOptions& o, const BenchTokens& tokens,
              Progress& progress, int64_t& runs_done)
      : runtime_(runtime), o_(o), tokens_(tokens), progress_(progress), runs_done_(runs_done) {}

  Result<std::vector<BenchTest>> run(std::span<const BenchCase> cases, double read_bandwidth) {
    std::vector<BenchTest> tests;
    for (const BenchCase& c : cases) {
      BenchTest& test = tests.emplace_back();
      test.name = bench_test_name(c.n_prompt, c.n_gen, c.n_depth);
      test.n_prompt = c.n_prompt;
      test.n_gen = c.n_gen;
      test.n_depth = c.n_depth;
      test.n_threads = runtime_.n_threads();
      test.read_bandwidth = read_bandwidth;
      for (int64_t pos = c.n_depth; pos < c.n_depth + c.n_gen; ++pos) {
        test.kv_bytes_per_token += static_cast<double>(runtime_.cache().seen_bytes(pos + 1)) /
                                   static_cast<double>(c.n_gen);
      }
    }
    for (const BenchRun& run : bench_run_order(cases.size(), o_.repetitions, o_.interleave)) {
      const BenchCase& c = cases[run.test];
      BenchTest& test = tests[run.test];
      MINFER_ASSIGN_OR_RETURN(double ns, timed(c, test.tokens));
      if (run.round == 0) continue;  // the warm-up
      test.samples_ns.push_back(ns);
      test.samples_ts.push_back(static_cast<double>(c.n_prompt + c.n_gen) * 1e9 / ns);
    }
    for (BenchTest& test : tests) summarize(test);
    return tests;
  }

 private:
  Result<double> timed(const BenchCase& c, std::vector<int32_t>& generated) {
    MINFER_RETURN_IF_ERROR(fill_depth(runtime_, tokens_.depth, c.n_depth, o_.n_batch));
    const auto t0 = std::chrono::steady_clock::now();
    if (c.n_prompt > 0) {
      MINFER_RETURN_IF_ERROR(
          run_prompt(runtime_, std::span(tokens_.prompt).first(static_cast<size_t>(c.n_prompt)),
                     c.n_depth, o_.n_batch));
    } else {
      MINFER_RETURN_IF_ERROR(run_gen(runtime_, c.n_gen, c.n_depth, tokens_.first_gen, generated));
    }
    const auto t1 = std::chrono::steady_clock::now();
    progress_.update(++runs_done_);
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
  }

  Runtime& runtime_;
  const BenchOptions& o_;
  const BenchTokens& tokens_;
  Progress& progress_;
  int64_t& runs_done_;
};

}  // namespace

Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& o, const BenchGrid& grid) {
  MINFER_RETURN_IF_ERROR(check_bench_options(o, grid));
  const std::vector<BenchCase> cases = bench_cases(grid);
  // The context holds the deepest test: its depth and its own tokens.
  int64_t n_ctx = 1, max_prompt = 0, max_depth = 0;
  for (const BenchCase& c : cases) {
    n_ctx = std::max(n_ctx, c.n_depth + c.n_prompt + c.n_gen);
    max_prompt = std::max(max_prompt, c.n_prompt);
    max_depth = std::max(max_depth, c.n_depth);
  }
  BenchReport report;
  report.model_filename = model_filename;
  describe_model(model, report);
  report.n_batch = o.n_batch;
  report.cache_type = kv_cell_type_name(o.cache_type);
  const Graph decode = model.build_graph(1, 1);
  report.decode_weight_bytes = weight_bytes_read(decode);
  const BenchTokens tokens = bench_tokens(o.seed, model.config().n_vocab, max_prompt, max_depth);

  Progress progress("bench", static_cast<int64_t>(cases.size()) * (o.repetitions + 1), o.progress);
  int64_t runs_done = 0;
  std::unique_ptr<Runtime> runtime;
  // One runtime per thread count, for its tests cases[first, end).
  for (size_t first = 0, end = 0; first < cases.size(); first = end) {
    end = first;
    while (end < cases.size() && cases[end].n_threads == cases[first].n_threads) ++end;
    if (runtime != nullptr) report.profile += runtime->profile_table();
    runtime.reset();  // one pool at a time
    RuntimeOptions runtime_options = o;
    runtime_options.n_threads = cases[first].n_threads;
    runtime_options.n_ctx = n_ctx;
    runtime_options.n_ctx_total = n_ctx;
    MINFER_ASSIGN_OR_RETURN(runtime, Runtime::create(model, runtime_options));
    if (first == 0) {
      report.isa = runtime->isa_name();
      report.n_threads = runtime->n_threads();
    }
    RooflineRates rates;
    if (o.roofline) rates = RooflineRates::measure(*runtime, decode, o);
    BenchRunner runner(*runtime, o, tokens, progress, runs_done);
    MINFER_ASSIGN_OR_RETURN(
        std::vector<BenchTest> tests,
        runner.run(std::span(cases).subspan(first, end - first), rates.read_bandwidth));
    if (o.roofline) {
      rates.keep_best(RooflineRates::measure(*runtime, decode, o));
      for (BenchTest& t : tests) {
        t.read_bandwidth = rates.read_bandwidth;
        t.hot = rates.hot;
      }
      if (first == 0) report.read_bandwidth = rates.read_bandwidth;
    }
    for (BenchTest& t : tests) report.tests.push_back(std::move(t));
  }
  if (runtime != nullptr) {
    runtime->cache().free_sequence(0);
    report.profile += runtime->profile_table();
  }
  runtime.reset();  // the speculative rows' schedulers have pools of their own
  progress.finish();
  if (o.speculative.enabled()) {
    for (const BenchCase& c : cases) {
      if (c.n_gen == 0) continue;
      MINFER_ASSIGN_OR_RETURN(std::vector<BenchTest> rows,
                              run_speculative_bench(model, o, c.n_gen, c.n_threads));
      for (BenchTest& t : rows) report.tests.push_back(std::move(t));
    }
  }
  return report;
}

namespace {

// BenchSpeculative's prompt: its text tokenized, else a random pattern repeated.
std::vector<int32_t> speculative_prompt(const BenchOptions& o, const Tokenizer& tokenizer) {
  if (!o.speculative.prompt_text.empty()) {
    return tokenizer.encode(o.speculative.prompt_text, /*add_special=*/true,
                            /*parse_special=*/false);
  }
  const BenchTokens pattern = bench_tokens(o.seed, tokenizer.n_vocab(), kSpecPatternLength, 0);
  std::vector<int32_t> prompt;
  while (static_cast<int64_t>(prompt.size()) < kSpecPromptLength) {
    prompt.insert(prompt.end(), pattern.prompt.begin(), pattern.prompt.end());
  }
  return prompt;
}

// A scheduler of one slot for the speculative rows: the prompt, the tokens and the drafts of the
// last forward fit its context; the slot keeps the prompt between runs.
Result<std::unique_ptr<Scheduler>> bench_scheduler(const Model& model, const Tokenizer& tokenizer,
                                                   const BenchOptions& o, int n_threads,
                                                   int64_t n_ctx) {
  SchedulerOptions s;
  static_cast<RuntimeOptions&>(s) = o;
  s.n_threads = n_threads;
  s.n_ctx = n_ctx;
  s.n_ctx_total = n_ctx;
  s.n_parallel = 1;
  s.token_budget = o.n_batch;
  s.keep_slots = true;
  s.prefix_cache = false;
  s.draft_model = o.speculative.draft;
  s.observe = {};  // the traces and dumps are the tests' runtime's
  return Scheduler::create(model, tokenizer, s);
}

// One generation through the scheduler, stepped here: its tokens and its final event.
struct Generated {
  std::vector<int32_t> tokens;
  RequestEvent last;
};

Result<Generated> generate_once(Scheduler& scheduler, RequestParams request) {
  Generated g;
  auto sink = [&g](RequestEvent&& e) {
    for (const SampledToken& t : e.tokens) g.tokens.push_back(t.token);
    if (e.done) g.last = std::move(e);
  };
  MINFER_RETURN_IF_ERROR(scheduler.submit(std::move(request), sink).status());
  MINFER_RETURN_IF_ERROR(scheduler.run_until_idle());
  MINFER_RETURN_IF_ERROR(g.last.error);
  return g;
}

// One row: a warm-up and o.repetitions timed generations after the prompt, which the slot holds
// from the first on (only its last token is computed again).
Result<BenchTest> speculative_row(Scheduler& scheduler, const RequestParams& request,
                                  const BenchOptions& o) {
  BenchTest t;
  t.n_gen = request.generate.max_tokens;
  t.n_depth = static_cast<int64_t>(request.prompt.size());
  t.n_threads = scheduler.runtime().n_threads();
  for (int r = 0; r <= o.repetitions; ++r) {  // r == 0: the warm-up
    MINFER_ASSIGN_OR_RETURN(Generated result, generate_once(scheduler, request));
    if (r == 0) continue;
    const RequestStats& st = result.last.stats;
    const double ns = std::max(0.0, st.total_ms - st.ttft_ms) * 1e6;
    t.samples_ns.push_back(ns);
    t.samples_ts.push_back(ns > 0.0 ? static_cast<double>(st.n_generated - 1) * 1e9 / ns : 0.0);
    t.n_drafted += st.n_drafted;
    t.n_accepted += st.n_draft_accepted;
    t.tokens = std::move(result.tokens);
  }
  summarize(t);
  return t;
}

}  // namespace

Result<std::vector<BenchTest>> run_speculative_bench(const Model& model, const BenchOptions& o,
                                                     int64_t n_gen, int n_threads) {
  const BenchSpeculative& spec = o.speculative;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model.file()));
  const std::vector<int32_t> prompt = speculative_prompt(o, *tokenizer);
  MINFER_RETURN_IF_ERROR(tokenizer->check_ids(prompt));
  if (spec.draft != nullptr) {
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> draft_tokenizer,
                            Tokenizer::from_gguf(spec.draft->file()));
    MINFER_RETURN_IF_ERROR(check_draft_vocabulary(*tokenizer, *draft_tokenizer));
  }
  // The prompt, the tokens and the drafts of the last forward.
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + n_gen + spec.draft_max + 2;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler,
                          bench_scheduler(model, *tokenizer, o, n_threads, n_ctx));
  RequestParams request;
  request.prompt = prompt;
  request.generate.temperature = 0.0f;  // greedy: both rows generate the same tokens
  request.generate.max_tokens = n_gen;
  for (int32_t id = 0; id < tokenizer->n_vocab(); ++id) {
    if (tokenizer->is_eog(id)) {
      request.generate.logit_bias.emplace_back(id, -std::numeric_limits<float>::infinity());
    }
  }
  std::vector<BenchTest> rows;
  for (const bool speculate : {false, true}) {
    if (speculate) {
      request.generate.spec_ngram = spec.draft != nullptr ? 0 : spec.ngram;
      request.spec_draft_model = spec.draft != nullptr;
      request.generate.draft_max = spec.draft_max;
    }
    MINFER_ASSIGN_OR_RETURN(BenchTest t, speculative_row(*scheduler, request, o));
    t.speculative = !speculate              ? "plain"
                    : spec.draft != nullptr ? "draft"
                                            : fmt::format("ngram{}", spec.ngram);
    t.name = fmt::format("tg{} {}", n_gen, t.speculative);
    rows.push_back(std::move(t));
  }
  return rows;
}

namespace {

// "hot one-token matmul (2 threads): q5_0 41.20 GB/s for 231.40 MiB, ...; min(stream, hot
// matmul) roofline 140.20 t/s".
std::string hot_roofline_line(const BenchTest& t) {
  std::string types;
  for (const TypeRate& h : t.hot.types) {
    if (!types.empty()) types += ", ";
    types += fmt::format("{} {:.2f} GB/s for {:.2f} MiB", ggml_type_info(h.type).name,
                         h.hot_rate / 1e9, static_cast<double>(h.bytes) / (1024.0 * 1024.0));
  }
  return fmt::format(
      "hot one-token matmul ({} threads): {}; min(stream, hot matmul) roofline "
      "{:.2f} t/s\n",
      t.n_threads, types, t.hot.ts(t.read_bandwidth));
}

}  // namespace

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
                       r.model_type, size, params, "CPU", t.n_threads, t.name,
                       fmt::format("{:.2f} ± {:.2f}", t.avg_ts, t.stddev_ts));
  }
  // Speculative rows: the acceptance rate, and the speed against the plain row before them.
  std::string speculative;
  for (size_t i = 1; i < r.tests.size(); ++i) {
    const BenchTest& t = r.tests[i];
    const BenchTest& plain = r.tests[i - 1];
    if (t.speculative.empty() || t.speculative == "plain" || plain.speculative != "plain") continue;
    speculative += fmt::format("{}: {} of {} drafts accepted ({:.1f}%), {:.2f}x the t/s of {}\n",
                               t.name, t.n_accepted, t.n_drafted, 100.0 * t.acceptance(),
                               plain.avg_ts > 0.0 ? t.avg_ts / plain.avg_ts : 0.0, plain.name);
  }
  if (!speculative.empty()) out += "\n" + speculative;
  // The roofline of each thread count (its read bandwidth), then each tg test against it.
  for (size_t i = 0; i < r.tests.size(); ++i) {
    const BenchTest& t = r.tests[i];
    if (t.read_bandwidth <= 0.0) continue;
    if (i == 0 || t.n_threads != r.tests[i - 1].n_threads) {
      out += fmt::format(
          "\ndecode reads {:.2f} MiB of weights per token; read bandwidth {:.2f} GB/s ({} "
          "threads): roofline {:.2f} t/s\n",
          static_cast<double>(r.decode_weight_bytes) / (1024.0 * 1024.0), t.read_bandwidth / 1e9,
          t.n_threads, r.roofline_ts(t.read_bandwidth));
      out += hot_roofline_line(t);
    }
    if (t.n_gen > 0) {
      out += fmt::format(
          "{} reaches {:.2f} of the roofline, {:.2f} of min(stream, hot matmul), {:.2f} of the "
          "latter with its {:.2f} MiB of KV cells a token read at the stream rate\n",
          t.name, t.avg_ts / r.roofline_ts(t.read_bandwidth), t.avg_ts / t.hot.ts(t.read_bandwidth),
          t.avg_ts / t.cells_roofline_ts(), t.kv_bytes_per_token / (1024.0 * 1024.0));
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
        {"n_threads", t.n_threads},
        {"type_k", r.cache_type},
        {"type_v", r.cache_type},
        {"test", t.name},
        {"n_prompt", t.n_prompt},
        {"n_gen", t.n_gen},
        {"n_depth", t.n_depth},
        {"avg_ns", static_cast<uint64_t>(t.avg_ns)},
        {"stddev_ns", static_cast<uint64_t>(t.stddev_ns)},
        {"avg_ts", t.avg_ts},
        {"stddev_ts", t.stddev_ts},
        {"samples_ns", t.samples_ns},
        {"samples_ts", t.samples_ts},
    });
    if (!t.speculative.empty()) {
      array.back()["speculative"] = t.speculative;
      array.back()["n_drafted"] = t.n_drafted;
      array.back()["n_accepted"] = t.n_accepted;
      array.back()["acceptance"] = t.acceptance();
    }
    if (t.read_bandwidth > 0.0) {
      array.back()["decode_weight_bytes"] = r.decode_weight_bytes;
      array.back()["read_bandwidth"] = t.read_bandwidth;
      array.back()["roofline_ts"] = r.roofline_ts(t.read_bandwidth);
      array.back()["roofline_hot_ts"] = t.hot.ts(t.read_bandwidth);
      if (t.n_gen > 0) {
        array.back()["kv_bytes_per_token"] = t.kv_bytes_per_token;
        array.back()["roofline_cells_ts"] = t.cells_roofline_ts();
      }
      nlohmann::json types = nlohmann::json::array();
      for (const TypeRate& h : t.hot.types) {
        types.push_back(
            {{"type", ggml_type_info(h.type).name}, {"bytes", h.bytes}, {"hot_rate", h.hot_rate}});
      }
      array.back()["hot_matmul"] = types;
    }
  }
  return array.dump(2) + "\n";
}

}  // namespace minfer::engine
