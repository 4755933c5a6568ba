// What Qwen3.5 (qwen35.cpp) and Qwen3.5-MoE (qwen35moe.cpp) share: the hybrid layer pattern
// (gated delta-net layers, and every full_attention_interval-th layer attention with an output
// gate), their keys and their tensors. ../shared/docs/models/qwen35.md is the specification.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "models/architectures.h"

namespace minfer {

// The keys both read (after "<arch>."), and reads them into c: the delta-net shape, the layer
// pattern, the rope sections (refused unless every rotated pair turns by the text position).
inline constexpr std::array<const char*, 8> kQwen35Keys = {
    "rope.dimension_sections", "ssm.conv_kernel", "ssm.state_size",          "ssm.group_count",
    "ssm.time_step_rank",      "ssm.inner_size",  "full_attention_interval", "nextn_predict_layers",
};
Status read_qwen35_keys(const GgufFile& file, const std::string& p, ModelConfig& c);

// Every tensor of a Qwen3.5 file with config c, in load order; `ffn` adds each block's FFN
// tensors after its post_attention_norm (nullptr: the dense ffn_gate, ffn_up, ffn_down).
std::vector<TensorSpec> qwen35_tensors(const ModelConfig& c, FfnTensors ffn);

}  // namespace minfer
