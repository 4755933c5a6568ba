// Splitting a GGUF model into parts ("minfer gguf-split"), as llama.cpp's gguf-split does:
// `<prefix>-00001-of-0000N.gguf` holds the model's metadata and the first tensors, every part holds
// split.no, split.count and split.tensors.count (gguf/gguf_split.h), and tensors keep their
// order, at most `max_tensors` per part. Loading the first part loads the whole model.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace minfer {

struct GgufSplitOptions {
  std::string input;          // a GGUF file (itself split or not)
  std::string output_prefix;  // parts are <prefix>-0000k-of-0000N.gguf
  int64_t max_tensors = 128;  // tensors per part (> 0)
};

struct GgufSplitReport {
  int n_parts = 0;
  int64_t n_tensors = 0;
  std::string first_part;  // the path to load
};

// Writes the parts; one part's tensor data is in memory at a time.
Result<GgufSplitReport> split_gguf(const GgufSplitOptions& options);

}  // namespace minfer
