// Qwen2 / Qwen2.5: RoPE on NeoX pairs (i, i + d/2), biases on Wq, Wk, Wv.
#include "models/architectures.h"

namespace minfer {

const ArchSpec kQwen2Arch = {
    .name = "qwen2",
    .qkv_bias = true,
    .qk_norm = false,
    .rope_style = kernels::RopeStyle::kNeox,
};

}  // namespace minfer
