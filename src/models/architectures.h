// The supported architectures, one file each (llama.cpp, qwen2.cpp, qwen3.cpp).
#pragma once

#include "models/model_config.h"

namespace minfer {

extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;

}  // namespace minfer
