// Llama (Llama 2/3, TinyStories): RoPE on adjacent pairs (2i, 2i+1), no biases, no QK-norm: the
// decoder's tensors, and Llama 3.1+'s rope_freqs.weight when the file has it (its "llama3" rope
// scaling: one divisor of each rotated pair's frequency, llama.cpp's freq_factors).
#include "models/architectures.h"

namespace minfer {

namespace {

std::vector<TensorSpec> llama_tensors(const ModelConfig& c) {
  std::vector<TensorSpec> specs = decoder_tensors(c, /*extras=*/nullptr);
  if (c.rope_freq_factors) {
    TensorList t(specs);
    t.rope_freqs("rope_freqs.weight", c.n_rot / 2, optional_model_slot<&ModelWeights::rope_freqs>);
  }
  return specs;
}

}  // namespace

const ArchSpec kLlamaArch = {
    .name = "llama",
    .qkv_bias = false,
    .qk_norm = false,
    .rope_style = kernels::RopeStyle::kAdjacent,
    .tensors = llama_tensors,
};

}  // namespace minfer
