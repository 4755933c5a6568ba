// Loading what a generating command needs — model, tokenizer and a session — from user-facing
// options (the `run` and `chat` commands), with the defaults llama.cpp uses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "engine/runtime.h"
#include "engine/session.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

struct ModelOptions {
  std::string path;          // GGUF file
  int64_t n_ctx = 0;         // 0: n_ctx_train, reduced to fit the KV budget (resolve_n_ctx)
  int64_t n_batch = 2048;    // most prompt tokens per forward
  int n_threads = 0;         // ≤ 0: all cores
  std::string cache_type;    // "f32", "f16", "q8_0"; empty: MINFER_CACHE_TYPE, else f16
  ObserveOptions observe;    // with MINFER_TRACE / MINFER_DUMP_DIR applied by the loader
  bool with_session = true;  // false: model and tokenizer only (a batching program)
  MapOptions map;            // mapped or read (--no-mmap), locked (--mlock)
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Session> session;  // null without ModelOptions::with_session
  // What the options resolved to (cell type from the flag or MINFER_CACHE_TYPE, observers with
  // the environment's), for runtimes made later from the same options.
  RuntimeOptions runtime;
  std::string n_ctx_why;  // how the session's n_ctx was chosen (resolve_n_ctx)
};

// Selects the kernels (MINFER_FORCE_ISA), loads the model and its tokenizer and creates a session
// with a KV budget of n_ctx positions.
Result<LoadedModel> load_for_generation(const ModelOptions& options);

// For --verbose: the file, the model's shape, the kernel ISA, threads, cache type, n_ctx and
// n_batch (the session's; without one, the model alone); one fact per line, each ending in '\n'.
std::string describe_setup(const LoadedModel& loaded, const std::string& path);

}  // namespace minfer::engine
