// make-model: deterministic random-weight models with the tensor names, shapes and metadata of
// real Qwen2 / Qwen2.5, Qwen3, Llama, Gemma 3 and Qwen3.5 files, so that benchmarks and tests run
// on any machine without downloading weights.
//
// Weights: each tensor row is drawn from its own generator seeded by (seed, tensor name, row), so
// the bytes depend only on the seed — not on the thread count. Matrices and biases are normal
// with std 0.02 (the usual initializer range), norm weights are exactly 1: with RMSNorm before
// every block the residual stream stays O(1) and the logits (embedding · normed state, std ≈
// 0.02 · sqrt(n_embd)) are finite and far from uniform or one-hot. Llama 3 presets' rope_freqs
// are not random: they are computed from the preset's rope scaling as llama.cpp's converter does.
// Qwen3.5's ssm_a (−exp(A_log), the delta state's decay rate) is −exp of a normal value of std
// 0.5: always negative, as the recurrence needs.
//
// Tensors: the architecture's list (models/tensor_spec.h), the one the loader checks, for the
// config the preset gives.
//
// Tokenizer: by default the tiny byte-level BPE of tools/bpe_trainer.h (tokenizer.ggml.pre
// "qwen2" or "llama-bpe"; a ChatML template), so n_vocab is small (~600) whatever the preset. With
// --tokenizer-from, every tokenizer.* key of another GGUF file is copied instead and n_vocab
// is that tokenizer's size (e.g. 151,936 from ../shared/models/qwen3-vocab.gguf). --chat-template
// writes a Jinja file as tokenizer.chat_template over either (e.g. ../shared/templates/
// Qwen3.5-4B.jinja for a Qwen3.5 test model with the Qwen vocabulary).
//
// Quantized types use the per-tensor choices of `minfer quantize` (tools/quantize_model.h).
// Memory: the file is streamed tensor by tensor; at most one tensor in f32 plus its converted
// bytes are held (≈ 0.55 GB + 0.15 GB for Qwen2.5's 151,936 × 896 embedding at q8_0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/gguf_stream_writer.h"
#include "tools/offline_tools.h"

namespace minfer {

// What make_model would write, without making weights: the tensors (file order, target types,
// shapes) and the vocabulary size. `output` is not used.
struct ModelLayout {
  std::vector<GgufStreamWriter::TensorLayout> tensors;
  int64_t n_vocab = 0;
};
Result<ModelLayout> make_model_layout(const MakeModelOptions& options);

}  // namespace minfer
