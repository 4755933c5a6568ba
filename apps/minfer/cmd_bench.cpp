// minfer bench: prompt-processing and generation throughput, as llama-bench measures them
// (engine/bench.h).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "engine/bench.h"
#include "generation_flags.h"
#include "model_source.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

// A bound on -t that keeps a typo (-t 50000) from starting tens of thousands of threads (ggml's own
// bound, GGML_MAX_N_THREADS, is 512).
constexpr int64_t kMaxThreads = 1024;

struct BenchCli {
  std::string model;
  ModelSourceFlags source;
  std::string output = "md";
  std::string cache_type;
  engine::BenchOptions options;
  // llama-bench's comma lists (engine::parse_bench_list); empty threads: all cores.
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string n_depth = "0";
  std::string n_threads;
  MapOptions map;
  // Speculative rows (engine::BenchSpeculative): --spec-ngram, -md, --draft-max, --spec-prompt.
  int spec_ngram = 0;
  std::string draft_model;
  int draft_max = 16;
  std::string spec_prompt_file;
};

Result<engine::BenchGrid> grid_from_flags(const BenchCli& o) {
  engine::BenchGrid grid;
  MINFER_ASSIGN_OR_RETURN(grid.n_prompt, engine::parse_bench_list(o.n_prompt, "-p", 0));
  MINFER_ASSIGN_OR_RETURN(grid.n_gen, engine::parse_bench_list(o.n_gen, "-n", 0));
  MINFER_ASSIGN_OR_RETURN(grid.n_depth, engine::parse_bench_list(o.n_depth, "-d", 0));
  if (!o.n_threads.empty()) {
    MINFER_ASSIGN_OR_RETURN(std::vector<int64_t> threads,
                            engine::parse_bench_list(o.n_threads, "-t", 1));
    grid.n_threads.clear();
    for (int64_t t : threads) {
      if (t > kMaxThreads) {
        return make_error(ErrorCode::kInvalidArgument, "[bench] -t '{}': {} threads, expected ≤ {}",
                          o.n_threads, t, kMaxThreads);
      }
      grid.n_threads.push_back(static_cast<int>(t));
    }
  }
  return grid;
}

Status run_bench_command(BenchCli& o) {
  MINFER_RETURN_IF_ERROR(resolve_model_path(o.model, o.source, "bench"));
  if (o.output != "md" && o.output != "json") {
    return make_error(ErrorCode::kInvalidArgument, "[bench] -o '{}': expected md or json",
                      o.output);
  }
  MINFER_ASSIGN_OR_RETURN(engine::BenchGrid grid, grid_from_flags(o));
  engine::BenchOptions options = o.options;
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, o.cache_type));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model, o.map));
  std::unique_ptr<Model> draft;
  if (!o.draft_model.empty()) {
    MINFER_ASSIGN_OR_RETURN(draft, Model::load(o.draft_model, o.map));
  }
  options.speculative.ngram = o.spec_ngram;
  options.speculative.draft = draft.get();
  options.speculative.draft_max = o.draft_max;
  if (!o.spec_prompt_file.empty()) {
    MINFER_ASSIGN_OR_RETURN(options.speculative.prompt_text,
                            read_flag_file(o.spec_prompt_file, "bench", "--spec-prompt file"));
    if (options.speculative.prompt_text.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[bench] --spec-prompt '{}' is empty: expected a prompt text",
                        o.spec_prompt_file);
    }
  }
  MINFER_ASSIGN_OR_RETURN(engine::BenchReport report,
                          engine::run_bench(*model, o.model, options, grid));
  const std::string text =
      o.output == "json" ? engine::bench_json(report) : engine::bench_markdown(report);
  std::fputs(text.c_str(), stdout);
  std::fputs(report.profile.c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_bench_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<BenchCli>(
      app, "bench",
      "Measure prompt processing (pp: N random tokens in forwards of -b) and generation (tg: N "
      "tokens one at a time) in tokens/s, mean ± sd over -r runs after a warm-up, like "
      "llama-bench; -p, -n, -d and -t take comma lists and every combination is measured");
  cmd->add_option("-m,--model", opts->model, "GGUF model (or ollama:NAME[:TAG])");
  add_model_source_flags(cmd, opts->source);
  add_weight_memory_flags(cmd, opts->map.use_mmap, opts->map.use_mlock);
  cmd->add_option("-p,--n-prompt", opts->n_prompt, "prompt tokens, a comma list (0: no pp test)")
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", opts->n_gen, "generated tokens, a comma list (0: no tg test)")
      ->capture_default_str();
  cmd->add_option("-d,--n-depth", opts->n_depth,
                  "tokens already in the KV cache when each test begins (prefilled untimed), a "
                  "comma list")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", opts->options.n_batch, "tokens per prompt forward")
      ->capture_default_str();
  cmd->add_option("-t,--threads", opts->n_threads, "threads, a comma list (default: all cores)");
  cmd->add_option("-r,--repetitions", opts->options.repetitions, "measured runs per test")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "md or json")->capture_default_str();
  cmd->add_option("--cache-type", opts->cache_type,
                  "KV cell type: f32, f16, q8_0 (default MINFER_CACHE_TYPE, else f16 as "
                  "llama-bench, run and serve)");
  cmd->add_flag("--roofline", opts->options.roofline,
                "also measure the read bandwidth and report the decode roofline (weight bytes "
                "per token / bandwidth), and beside it the roofline with each weight type at "
                "min(bandwidth, its one-token matmul's rate on a cache-resident matrix)");
  cmd->add_flag("--interleave", opts->options.interleave,
                "run each thread count's tests in rounds (every warm-up, then the first timed "
                "run of each test, then the second, ...) instead of each test's runs together: on "
                "a machine whose speed drifts, the tests' ratios hold");
  cmd->add_option("--spec-ngram", opts->spec_ngram,
                  "also measure speculative decoding by prompt lookup of N tokens: each tg test "
                  "adds rows 'tg<n> plain' and 'tg<n> ngram<N>' (greedy after a prompt, "
                  "acceptance rate)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--model-draft", opts->draft_model,
                  "also measure speculative decoding with this draft model (also -md; same "
                  "vocabulary): rows 'tg<n> plain' and 'tg<n> draft'");
  cmd->add_option("--draft-max", opts->draft_max, "tokens drafted per forward, at most")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--spec-prompt", opts->spec_prompt_file,
                  "text file: the prompt of the speculative rows (default: 32 random tokens "
                  "repeated to 256, a text that repeats)");
  add_observe_flags(*cmd, opts->options.observe);
  registry.add_status(cmd, [opts = opts]() { return run_bench_command(*opts); });
}

}  // namespace minfer::app
