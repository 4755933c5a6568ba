#include "model_source.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "minfer/tools.h"

namespace minfer::app {

namespace {

// Said when no model is given: the bundled tiny model and a real one from the Hub.
constexpr const char* kHowToGetAModel =
    "  a tiny bundled model (a children's story generator, ~1 MB):\n"
    "    minfer {0} -m models/stories260K.gguf{1}\n"
    "  a real model from the Hugging Face Hub (downloaded once into the shared cache):\n"
    "    minfer {0} -hf Qwen/Qwen3-0.6B-GGUF{1}\n"
    "  a model from Ollama's store:\n"
    "    minfer {0} -m ollama:qwen3:0.6b{1}\n";

}  // namespace

void add_model_source_flags(CLI::App* cmd, ModelSourceFlags& flags) {
  cmd->add_option("--hf-repo", flags.hf_repo,
                  "(also -hf) Hugging Face repository REPO[:QUANT] (e.g. "
                  "Qwen/Qwen3-0.6B-GGUF:Q8_0): "
                  "downloaded once into the shared cache ($HF_HUB_CACHE, $HF_HOME/hub or "
                  "~/.cache/huggingface/hub)");
  cmd->add_flag("--offline", flags.offline,
                "use only the Hugging Face cache, no network (also HF_HUB_OFFLINE=1)");
}

void add_model_flags(CLI::App* cmd, std::string& model, ModelSourceFlags& flags) {
  cmd->add_option("-m,--model", model, "GGUF model file (or ollama:NAME[:TAG])");
  add_model_source_flags(cmd, flags);
}

void add_weight_memory_flags(CLI::App* cmd, bool& use_mmap, bool& use_mlock) {
  cmd->add_flag_callback(
      "--no-mmap", [&use_mmap] { use_mmap = false; },
      "read the weights into private memory (2 MiB pages) instead of mapping the file");
  cmd->add_flag("--mlock", use_mlock,
                "lock the weights in RAM (a failure, e.g. RLIMIT_MEMLOCK, is a warning)");
}

void rewrite_single_dash_flags(int argc, char** argv) {
  static char kHfRepo[] = "--hf-repo";
  static char kModelDraft[] = "--model-draft";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-hf") == 0 || std::strcmp(argv[i], "-hfr") == 0) argv[i] = kHfRepo;
    // CLI11 would read "-md" as -m with the value "d".
    if (std::strcmp(argv[i], "-md") == 0) argv[i] = kModelDraft;
  }
}

Status resolve_model_path(std::string& model, const ModelSourceFlags& flags, const char* command) {
  if (!model.empty() && !flags.hf_repo.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "[{}] give either -m {} or -hf {}, not both",
                      command, model, flags.hf_repo);
  }
  if (model.empty() && flags.hf_repo.empty()) {
    const std::string example_args =
        std::strcmp(command, "run") == 0 ? " -p \"Once upon a time\" -n 64" : "";
    if (isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0) {
      return make_error(ErrorCode::kInvalidArgument, "[{}] no model given. Try:\n{}", command,
                        fmt::format(fmt::runtime(kHowToGetAModel), command, example_args));
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] no model: give -m FILE.gguf, -m ollama:NAME[:TAG] or -hf REPO[:QUANT]",
                      command);
  }
  MINFER_ASSIGN_OR_RETURN(model, resolve_model_source({model, flags.hf_repo, flags.offline}));
  return Status::ok();
}

}  // namespace minfer::app
