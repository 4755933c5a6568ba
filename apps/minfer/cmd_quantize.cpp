// minfer quantize: convert a model file's weights to another type with llama.cpp's per-tensor
// choices (quantize_model, minfer/tools.h).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

void register_quantize_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<QuantizeOptions>(
      app, "quantize",
      "Convert IN.gguf to OUT.gguf with weights of TYPE, choosing per-tensor types as "
      "llama-quantize does (q6_K output and, for _M mixes, q6_K attn_v/ffn_down in some layers; "
      "fallback types for rows that are not a multiple of the block)");
  cmd->add_option("input", opts->input, "input GGUF file")->required();
  cmd->add_option("output", opts->output, "output GGUF file")->required();
  cmd->add_option("type", opts->type, "target: " + quant_mix_names())->required();
  add_threads_flag(cmd, opts->n_threads);
  registry.add_status(cmd, [opts = opts]() -> Status {
    MINFER_ASSIGN_OR_RETURN(const QuantizeReport r, quantize_model(*opts));
    std::fprintf(stderr,
                 "quantize: %lld tensors (%lld converted, %lld with a fallback type), %.2f MiB -> "
                 "%.2f MiB\n",
                 static_cast<long long>(r.n_tensors), static_cast<long long>(r.n_converted),
                 static_cast<long long>(r.n_fallback),
                 static_cast<double>(r.bytes_in) / (1024.0 * 1024.0),
                 static_cast<double>(r.bytes_out) / (1024.0 * 1024.0));
    return Status::ok();
  });
}

}  // namespace minfer::app
