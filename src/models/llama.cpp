// Llama (Llama 2/3, TinyStories): RoPE on adjacent pairs (2i, 2i+1), no biases, no QK-norm: the
// decoder's tensors and nothing else.
#include "models/architectures.h"

namespace minfer {

namespace {

std::vector<TensorSpec> llama_tensors(const ModelConfig& c) {
  return decoder_tensors(c, /*extras=*/nullptr);
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
