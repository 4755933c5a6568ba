// A loaded model: config and weights viewed in the GGUF map, and the graph of a step over them.
// Running steps (KV cache, executor, observers) is the engine's (engine/step_runner.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "graph/graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "models/repack.h"

namespace minfer {

class Model {
 public:
  // `map`: how the weights are held in memory (mapped by default; core/mapped_file.h).
  static Result<std::unique_ptr<Model>> load(const std::string& path, const MapOptions& map = {});
  // Takes an opened file (e.g. one a test wrote).
  static Result<std::unique_ptr<Model>> from_file(std::unique_ptr<GgufFile> file);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const GgufFile& file() const { return *file_; }
  // Drops the file's vocabulary arrays (tokenizer.ggml.tokens, merges, token_type, scores) once
  // the tokenizer and chat template are made from them: for a 151,936-token vocabulary they are
  // ~10 MB that nothing reads again.
  void drop_vocabulary();
  // The weights repacked at load (models/repack.h); null when none were.
  const RepackedWeights* repacked() const { return repacked_.get(); }
  // hash64 over every tensor's name, type, shape, byte count and three 1 KiB samples of its
  // data (start, middle, end), as the file holds them: what identifies these weights (the state
  // files' model fingerprint, engine/state_file.h). Taken at load, before repacking, which moves
  // the matrices and releases the file's pages (with --no-mmap those would read back as zeros).
  uint64_t tensor_hash() const { return tensor_hash_; }

  // The decoder graph for a batch of n_tokens of which n_outputs want logits (not yet fused or
  // allocated); `hidden`: the output rows' last hidden state (after the final norm, [n_outputs,
  // n_embd]) instead of their logits.
  Graph build_graph(int64_t n_tokens, int64_t n_outputs, bool hidden = false) const;

 private:
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<RepackedWeights> repacked_;  // the repacked matrices weights_ points into
  uint64_t tensor_hash_ = 0;
};

}  // namespace minfer
