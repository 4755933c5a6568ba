// minfer bench: prompt-processing and generation throughput, as llama-bench measures them
// (run_bench, minfer/tools.h).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "generation_flags.h"
#include "minfer/tools.h"
#include "model_source.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

struct BenchCli {
  BenchOptions options;
  ModelSourceFlags source;
  std::string output = "md";
  std::string spec_prompt_file;  // --spec-prompt: the speculative rows' prompt text
};

Status run_bench_command(BenchCli& o) {
  MINFER_RETURN_IF_ERROR(resolve_model_path(o.options.model, o.source, "bench"));
  if (o.output != "md" && o.output != "json") {
    return make_error(ErrorCode::kInvalidArgument, "[bench] -o '{}': expected md or json",
                      o.output);
  }
  o.options.json = o.output == "json";
  if (!o.spec_prompt_file.empty()) {
    MINFER_ASSIGN_OR_RETURN(o.options.spec_prompt,
                            read_flag_file(o.spec_prompt_file, "bench", "--spec-prompt file"));
    if (o.options.spec_prompt.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[bench] --spec-prompt '{}' is empty: expected a prompt text",
                        o.spec_prompt_file);
    }
  }
  MINFER_ASSIGN_OR_RETURN(const BenchResult result, run_bench(o.options));
  std::fputs(result.table.c_str(), stdout);
  std::fputs(result.profile.c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_bench_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<BenchCli>(
      app, "bench",
      "Measure prompt processing (pp: N random tokens in forwards of -b) and generation (tg: N "
      "tokens one at a time) in tokens/s, mean ± sd over -r runs after a warm-up, like "
      "llama-bench; -p, -n, -d and -t take comma lists and every combination is measured");
  add_model_flags(cmd, opts->options.model, opts->source);
  add_weight_memory_flags(cmd, opts->options.map.use_mmap, opts->options.map.use_mlock);
  cmd->add_option("-p,--n-prompt", opts->options.n_prompt,
                  "prompt tokens, a comma list (0: no pp test)")
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", opts->options.n_gen,
                  "generated tokens, a comma list (0: no tg test)")
      ->capture_default_str();
  cmd->add_option("-d,--n-depth", opts->options.n_depth,
                  "tokens already in the KV cache when each test begins (prefilled untimed), a "
                  "comma list")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", opts->options.n_batch, "tokens per prompt forward")
      ->capture_default_str();
  cmd->add_option("-t,--threads", opts->options.n_threads,
                  "threads, a comma list (default: all cores)");
  cmd->add_option("-r,--repetitions", opts->options.repetitions, "measured runs per test")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "md or json")->capture_default_str();
  cmd->add_option("--cache-type", opts->options.cache_type,
                  "KV cell type: f32, f16, bf16, q8_0 (default MINFER_CACHE_TYPE, else f16 as "
                  "llama-bench, run and serve)");
  cmd->add_flag("--roofline", opts->options.roofline,
                "also measure the read bandwidth and report the decode roofline (weight bytes "
                "per token / bandwidth), and beside it the roofline with each weight type at "
                "min(bandwidth, its one-token matmul's rate on a cache-resident matrix)");
  cmd->add_flag("--interleave", opts->options.interleave,
                "run each thread count's tests in rounds (every warm-up, then the first timed "
                "run of each test, then the second, ...) instead of each test's runs together: on "
                "a machine whose speed drifts, the tests' ratios hold");
  cmd->add_option("--spec-ngram", opts->options.spec_ngram,
                  "also measure speculative decoding by prompt lookup of N tokens: each tg test "
                  "adds rows 'tg<n> plain' and 'tg<n> ngram<N>' (greedy after a prompt, "
                  "acceptance rate)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--model-draft", opts->options.draft_model,
                  "also measure speculative decoding with this draft model (also -md; same "
                  "vocabulary): rows 'tg<n> plain' and 'tg<n> draft'");
  cmd->add_option("--draft-max", opts->options.draft_max, "tokens drafted per forward, at most")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--spec-prompt", opts->spec_prompt_file,
                  "text file: the prompt of the speculative rows (default: 32 random tokens "
                  "repeated to 256, a text that repeats)");
  add_observe_flags(*cmd, opts->options.observe);
  registry.add_status(cmd, [opts = opts]() { return run_bench_command(*opts); });
}

}  // namespace minfer::app
