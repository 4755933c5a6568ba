// minfer make-model: a random-weight model file with the shapes and metadata of a real one.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

void register_make_model_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<MakeModelOptions>(
      app, "make-model",
      "Write a deterministic random-weight model with the tensor names, shapes and metadata of a "
      "real one. The vocabulary follows the tokenizer: the built-in byte-level BPE has ~600 "
      "tokens (so token_embd is small whatever the preset); --tokenizer-from a real model's GGUF "
      "gives its full vocabulary (e.g. 151,936 for Qwen).");
  cmd->add_option(
         "--arch", opts->arch,
         "architecture: qwen2, qwen3, qwen3moe, llama, gemma3, qwen35, qwen35moe, gpt-oss, "
         "gemma4")
      ->required();
  cmd->add_option("--preset", opts->preset, "shape: " + preset_names())->capture_default_str();
  cmd->add_option("--n-layer", opts->n_layer,
                  "keep only the first N blocks of the preset (a shortened model that fits a small "
                  "machine)");
  cmd->add_option("--type", opts->type, "weight type: " + quant_mix_names())->capture_default_str();
  cmd->add_option("--tokenizer-from", opts->tokenizer_from,
                  "copy the tokenizer (tokenizer.* keys, chat template) from this GGUF file");
  cmd->add_option("--reranker", opts->reranker,
                  "add a reranker head (pooling_type rank): cls (BGE-style classifier: cls.weight, "
                  "cls.bias, cls.output.*) or qwen3 (yes/no rows, as llama.cpp converts "
                  "Qwen3-Reranker)")
      ->check(CLI::IsMember({"cls", "qwen3"}));
  cmd->add_option("--chat-template", opts->chat_template,
                  "write this Jinja file as the chat template (over the tokenizer's)");
  cmd->add_option("--seed", opts->seed, "weight seed")->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "output GGUF file")->required();
  add_threads_flag(cmd, opts->n_threads);
  registry.add_status(cmd, [opts = opts]() -> Status {
    MINFER_ASSIGN_OR_RETURN(const MakeModelReport r, make_model(*opts));
    std::fprintf(stderr,
                 "make-model: wrote %s: %lld tensors, %.2f M parameters, %.2f MiB, n_vocab %lld\n",
                 opts->output.c_str(), static_cast<long long>(r.n_tensors),
                 static_cast<double>(r.n_params) / 1e6,
                 static_cast<double>(r.n_tensor_bytes) / (1024.0 * 1024.0),
                 static_cast<long long>(r.n_vocab));
    return Status::ok();
  });
}

}  // namespace minfer::app
