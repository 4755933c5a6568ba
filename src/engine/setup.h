// Loading what a generating command needs — model, tokenizer and the options of its runtimes —
// from user-facing options (the `run` and `chat` commands), with the defaults llama.cpp uses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "engine/rerank_head.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

struct ModelOptions {
  std::string path;                 // GGUF file
  int64_t n_ctx = 0;                // 0: n_ctx_train, reduced to fit the KV budget (resolve_n_ctx)
  int64_t n_batch = kDefaultBatch;  // most prompt tokens per forward
  int n_threads = 0;                // ≤ 0: all cores
  std::string cache_type;  // "f32", "f16", "bf16", "q8_0"; empty: MINFER_CACHE_TYPE, else f16
  ObserveOptions observe;  // with MINFER_TRACE / MINFER_DUMP_DIR applied by the loader
  MapOptions map;          // mapped or read (--no-mmap), locked (--mlock)
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  // What the options resolved to (n_ctx, cell type from the flag or MINFER_CACHE_TYPE,
  // observers with the environment's), for the runtimes made from them.
  RuntimeOptions runtime;
  int64_t n_batch = kDefaultBatch;  // ModelOptions::n_batch
  std::string n_ctx_why;            // how n_ctx was chosen (resolve_n_ctx)
  // A reranker's classifier head (pooling_type rank), taken out of the file before the model
  // loaded; nullopt for any other model.
  std::optional<RerankHead> rerank_head;
};

// Model::load, with a reranker's classifier head (pooling_type rank) taken out of the file first
// (engine/rerank_head.h) into `rerank_head` when given: the model's loader refuses tensors it
// does not read.
Result<std::unique_ptr<Model>> load_model_and_head(
    const std::string& path, const MapOptions& map = {},
    std::optional<RerankHead>* rerank_head = nullptr);

// Selects the kernels (MINFER_FORCE_ISA), loads the model and its tokenizer and resolves the
// runtime options (n_ctx within the KV budget).
Result<LoadedModel> load_for_generation(const ModelOptions& options);

// One line per fact for people: architecture, n_layer, n_embd, n_head / n_head_kv, head_dim, n_ff,
// n_vocab, n_ctx_train, the sliding window when the model has one; each line ends in '\n'.
std::string describe_model(const Model& model);

// For --verbose: the file, the model's shape and, given the runtime that generates, the kernel
// ISA, threads, cache type, n_ctx and n_batch; one fact per line, each ending in '\n'.
std::string describe_setup(const LoadedModel& loaded, const std::string& path,
                           const Runtime* runtime);

}  // namespace minfer::engine
