// minfer gguf-split: split a GGUF model into parts that load together (split_gguf, minfer/tools.h).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

void register_gguf_split_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<GgufSplitOptions>(
      app, "gguf-split",
      "Split IN.gguf into PREFIX-00001-of-0000N.gguf … with at most N tensors per part, as "
      "llama.cpp's gguf-split does; loading the first part loads them all");
  cmd->add_option("input", opts->input, "input GGUF file")->required();
  cmd->add_option("output_prefix", opts->output_prefix, "output path prefix")->required();
  cmd->add_option("--split-max-tensors", opts->max_tensors, "tensors per part (default 128)");
  registry.add_status(cmd, [opts = opts]() -> Status {
    MINFER_ASSIGN_OR_RETURN(const GgufSplitReport r, split_gguf(*opts));
    std::fprintf(stderr, "gguf-split: %lld tensors in %d parts; load %s\n",
                 static_cast<long long>(r.n_tensors), r.n_parts, r.first_part.c_str());
    return Status::ok();
  });
}

}  // namespace minfer::app
