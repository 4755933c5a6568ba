// minfer perplexity: llama.cpp's perplexity over a text file (compute_perplexity,
// minfer/tools.h).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "core/progress.h"
#include "minfer/tools.h"
#include "model_source.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

struct PerplexityCli {
  PerplexityOptions options;
  ModelSourceFlags source;
  std::string file;
  std::string flash_attn = "on";
};

Status run_perplexity(PerplexityCli& o) {
  MINFER_RETURN_IF_ERROR(resolve_model_path(o.options.model, o.source, "perplexity"));
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "[perplexity] cannot read '{}'", o.file);
  std::stringstream text;
  text << in.rdbuf();
  if (o.flash_attn != "on" && o.flash_attn != "off") {
    return make_error(ErrorCode::kInvalidArgument,
                      "[perplexity] --flash-attn: expected on or off, got '{}'", o.flash_attn);
  }
  o.options.flash_attn = o.flash_attn == "on";
  // The running values go to stdout as llama-perplexity prints them: "[1]12.3456,[2]…".
  std::unique_ptr<Progress> progress;
  auto on_chunk = [&](int64_t chunk, int64_t n_chunks, double running) {
    if (!progress) progress = std::make_unique<Progress>("perplexity", n_chunks);
    std::printf("[%lld]%.4f,", static_cast<long long>(chunk), running);
    std::fflush(stdout);
    progress->update(chunk);
  };
  MINFER_ASSIGN_OR_RETURN(const PerplexityReport r,
                          compute_perplexity(o.options, text.str(), on_chunk));
  if (progress) progress->finish();
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  std::fprintf(stderr, "perplexity: %lld tokens, %lld chunks of %lld, %lld scored, %.2f s\n",
               static_cast<long long>(r.n_tokens), static_cast<long long>(r.n_chunks),
               static_cast<long long>(r.n_ctx), static_cast<long long>(r.n_scored), r.seconds);
  std::fputs(r.profile.c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_perplexity_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<PerplexityCli>(
      app, "perplexity",
      "Perplexity of a model over a text file, by llama-perplexity's method (chunks of n_ctx "
      "tokens starting with BOS, second half of each chunk scored)");
  add_model_flags(cmd, opts->options.model, opts->source);
  add_weight_memory_flags(cmd, opts->options.map.use_mmap, opts->options.map.use_mlock);
  cmd->add_option("-f,--file", opts->file, "text file")->required();
  cmd->add_option("-c,--ctx-size", opts->options.n_ctx, "tokens per chunk")->capture_default_str();
  cmd->add_option("-b,--batch-size", opts->options.n_batch, "tokens per forward (≤ n_ctx)")
      ->capture_default_str();
  cmd->add_option("--chunks", opts->options.max_chunks, "at most this many chunks (-1: all)")
      ->capture_default_str();
  add_threads_flag(cmd, opts->options.n_threads);
  cmd->add_option("--cache-type", opts->options.cache_type,
                  "KV cell type: f16 (default, as llama-perplexity), f32, bf16, q8_0");
  cmd->add_option("--flash-attn", opts->flash_attn,
                  "on: with f16 cells, attention in llama.cpp's CPU flash-attention arithmetic "
                  "(llama-perplexity's default); off: minfer's own attention")
      ->capture_default_str();
  add_observe_flags(*cmd, opts->options.observe);
  registry.add_status(cmd, [opts = opts]() { return run_perplexity(*opts); });
}

}  // namespace minfer::app
