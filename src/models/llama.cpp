// Llama (Llama 2/3, TinyStories): RoPE on adjacent pairs (2i, 2i+1), no biases, no QK-norm.
#include "models/architectures.h"

namespace minfer {

const ArchSpec kLlamaArch = {
    .name = "llama",
    .qkv_bias = false,
    .qk_norm = false,
    .rope_style = kernels::RopeStyle::kAdjacent,
};

}  // namespace minfer
