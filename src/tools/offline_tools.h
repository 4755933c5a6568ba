// The entry points of the offline tools make-model and quantize, in plain types (core only), so
// that the public header minfer/tools.h offers them as they are instead of restating them. What
// each does: tools/model_maker.h, tools/quantize_model.h; gguf-split's: tools/gguf_split_model.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/progress.h"
#include "core/status.h"

namespace minfer {

struct MakeModelOptions {
  std::string arch;             // qwen2, qwen3, qwen3moe, llama, gemma3, qwen35, qwen35moe
  std::string preset = "tiny";  // tools/presets.h
  std::string type = "f32";     // a quantize mix name (f32, f16, q8_0, q4_k_m, …)
  std::string tokenizer_from;   // a GGUF file whose tokenizer.* keys are copied; empty: built-in
  std::string chat_template;    // a Jinja file written as tokenizer.chat_template; empty: none
  int64_t n_layer = 0;  // 0: the preset's; else its first n_layer blocks (a shortened model)
  // A reranker's head (pooling_type rank, engine/rerank_head.h): "cls" a BGE-style classifier
  // (cls.weight, cls.bias, cls.output.weight [n_embd → 1], cls.output.bias); "qwen3" the
  // yes/no rows of a Qwen3-Reranker as llama.cpp converts it (cls.output.weight [n_embd → 2],
  // output labels yes, no; without tokenizer.chat_template.rerank, whose text the engine knows
  // for such a head); "" none.
  std::string reranker;
  uint64_t seed = 42;
  std::string output;
  int n_threads = 0;  // 0: all cores
  ProgressStyle progress = ProgressStyle::kAuto;
};

struct MakeModelReport {
  int64_t n_tensors = 0;
  int64_t n_params = 0;
  uint64_t n_tensor_bytes = 0;
  int64_t n_vocab = 0;
};

// A deterministic random-weight model with the shapes and metadata of a real one.
Result<MakeModelReport> make_model(const MakeModelOptions& options);
// "tiny, qwen2.5-0.5b, …" for help texts (tools/presets.h).
std::string preset_names();

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;   // a mix name
  int n_threads = 0;  // 0: all cores
  ProgressStyle progress = ProgressStyle::kAuto;
};

struct QuantizeReport {
  int64_t n_tensors = 0;
  int64_t n_converted = 0;  // tensors whose type changed
  int64_t n_fallback = 0;
  uint64_t bytes_in = 0;  // tensor bytes
  uint64_t bytes_out = 0;
};

// A model file's weights converted to another type, with llama-quantize's per-tensor choices.
Result<QuantizeReport> quantize_model(const QuantizeOptions& options);
// "f32, f16, bf16, q8_0, …" for help texts.
std::string quant_mix_names();

}  // namespace minfer
