// write_logits, compute_perplexity and run_bench (minfer/tools.h): the measuring tools over the
// engine's runtime (engine/runtime.h), perplexity (engine/perplexity.h) and bench
// (engine/bench.h), from the public options.
#include <algorithm>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/bench.h"
#include "engine/logits.h"
#include "engine/perplexity.h"
#include "engine/runtime.h"
#include "minfer/tools.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer {

namespace {

// A bound on bench's -t that keeps a typo (-t 50000) from starting tens of thousands of threads
// (ggml's own bound, GGML_MAX_N_THREADS, is 512).
constexpr int64_t kMaxBenchThreads = 1024;

engine::ObserveOptions engine_observe(const ObserveOptions& o) {
  engine::ObserveOptions out;
  out.trace_path = o.trace_path;
  out.dump_graph = o.dump_graph;
  out.profile = o.profile;
  return out;
}

Result<engine::BenchGrid> bench_grid(const BenchOptions& o) {
  engine::BenchGrid grid;
  MINFER_ASSIGN_OR_RETURN(grid.n_prompt, engine::parse_bench_list(o.n_prompt, "-p", 0));
  MINFER_ASSIGN_OR_RETURN(grid.n_gen, engine::parse_bench_list(o.n_gen, "-n", 0));
  MINFER_ASSIGN_OR_RETURN(grid.n_depth, engine::parse_bench_list(o.n_depth, "-d", 0));
  if (!o.n_threads.empty()) {
    MINFER_ASSIGN_OR_RETURN(std::vector<int64_t> threads,
                            engine::parse_bench_list(o.n_threads, "-t", 1));
    grid.n_threads.clear();
    for (int64_t t : threads) {
      if (t > kMaxBenchThreads) {
        return make_error(ErrorCode::kInvalidArgument, "[bench] -t '{}': {} threads, expected ≤ {}",
                          o.n_threads, t, kMaxBenchThreads);
      }
      grid.n_threads.push_back(static_cast<int>(t));
    }
  }
  return grid;
}

}  // namespace

Result<std::string> write_logits(const LogitsOptions& o) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model));
  engine::RuntimeOptions options;
  options.observe = engine_observe(o.observe);
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, o.cache_type, GgmlType::kF32));
  options.n_threads = o.n_threads;
  std::ofstream out(o.output, std::ios::binary);
  if (!out) return make_error(ErrorCode::kIo, "[logits] cannot create '{}'", o.output);
  MINFER_ASSIGN_OR_RETURN(std::string profile,
                          engine::teacher_forced_logits(
                              *model, options, o.ids, o.batch, [&](std::span<const float> rows) {
                                out.write(reinterpret_cast<const char*>(rows.data()),
                                          static_cast<std::streamsize>(rows.size_bytes()));
                                return Status::ok();
                              }));
  if (!out) return make_error(ErrorCode::kIo, "[logits] short write to '{}'", o.output);
  return profile;
}

Result<PerplexityReport> compute_perplexity(
    const PerplexityOptions& o, std::string_view text,
    const std::function<void(int64_t, int64_t, double)>& on_chunk) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model, o.map));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer,
                          Tokenizer::from_gguf(model->file()));
  engine::PerplexityOptions options;
  options.n_ctx = o.n_ctx;
  options.n_batch = o.n_batch;
  options.max_chunks = o.max_chunks;
  options.n_threads = o.n_threads;
  options.observe = engine_observe(o.observe);
  // As llama-perplexity by default: f16 cells and flash attention (llama.cpp's "auto" is on for
  // the CPU), reproduced operation for operation; cache_type or MINFER_CACHE_TYPE override.
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, o.cache_type));
  options.attention.flash_attn_numerics = o.flash_attn;
  MINFER_ASSIGN_OR_RETURN(engine::PerplexityResult r,
                          engine::compute_perplexity(*model, *tokenizer, text, options, on_chunk));
  return PerplexityReport{r.n_tokens, r.n_chunks,  options.n_ctx, r.n_scored,
                          r.ppl,      r.ppl_error, r.seconds,     std::move(r.profile)};
}

Result<BenchResult> run_bench(const BenchOptions& o) {
  MINFER_ASSIGN_OR_RETURN(engine::BenchGrid grid, bench_grid(o));
  engine::BenchOptions options;
  options.n_batch = o.n_batch;
  options.repetitions = o.repetitions;
  options.roofline = o.roofline;
  options.interleave = o.interleave;
  options.observe = engine_observe(o.observe);
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, o.cache_type));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model, o.map));
  std::unique_ptr<Model> draft;
  if (!o.draft_model.empty()) {
    MINFER_ASSIGN_OR_RETURN(draft, Model::load(o.draft_model, o.map));
  }
  options.speculative.ngram = o.spec_ngram;
  options.speculative.draft = draft.get();
  options.speculative.draft_max = o.draft_max;
  options.speculative.prompt_text = o.spec_prompt;
  MINFER_ASSIGN_OR_RETURN(engine::BenchReport report,
                          engine::run_bench(*model, o.model, options, grid));
  return BenchResult{o.json ? engine::bench_json(report) : engine::bench_markdown(report),
                     std::move(report.profile)};
}

}  // namespace minfer
