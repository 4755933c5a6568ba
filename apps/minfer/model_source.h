// How commands name their model: -m FILE, -m ollama:NAME[:TAG] (Ollama's store), or
// -hf REPO[:QUANT] (the Hugging Face Hub through its shared cache; --offline uses the cache
// only). One resolver turns each into a local GGUF path before anything is loaded.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "minfer/minfer.h"

namespace minfer::app {

struct ModelSourceFlags {
  std::string hf_repo;  // -hf / --hf-repo REPO[:QUANT]
  bool offline = false;
};

// Adds -hf (--hf-repo) and --offline to a command that declares its own model argument.
void add_model_source_flags(CLI::App* cmd, ModelSourceFlags& flags);

// Adds -m / --model (a GGUF file or ollama:NAME[:TAG]) into `model`, and the source flags.
void add_model_flags(CLI::App* cmd, std::string& model, ModelSourceFlags& flags);

// --no-mmap (read the weights into private memory with 2 MiB pages instead of mapping the file)
// and --mlock (lock them in RAM; a failure is a warning), as llama.cpp names them: run, chat,
// serve, bench and perplexity.
void add_weight_memory_flags(CLI::App* cmd, bool& use_mmap, bool& use_mlock);

// Rewrites llama.cpp's single-dash spellings that CLI11 cannot declare, in place: "-hf" and
// "-hfr" to "--hf-repo", "-md" to "--model-draft".
void rewrite_single_dash_flags(int argc, char** argv);

// Replaces `model` with the local path to load: ollama:… → the store's blob; with -hf, the
// cache's file (downloaded first when missing). Neither -m nor -hf is an error that says how to
// get a model (at more length on a terminal).
Status resolve_model_path(std::string& model, const ModelSourceFlags& flags, const char* command);

}  // namespace minfer::app
