// The supported architectures, one file each (llama.cpp, qwen2.cpp, qwen3.cpp): the facts that
// shared code reads as data (never `switch (arch)`) and the architecture's tensor list.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "graph/graph.h"
#include "kernels/kernel_table.h"
#include "models/model_config.h"
#include "models/tensor_spec.h"

namespace minfer {

// The facts one architecture contributes (its file in src/models/ defines one).
struct ArchSpec {
  const char* name;  // general.architecture value
  bool qkv_bias;     // the graph adds attn_{q,k,v}.bias (the tensor list must name them)
  bool qk_norm;      // the graph norms q and k per head (attn_{q,k}_norm.weight)
  kernels::RopeStyle rope_style;
  // The tensors of a model of this architecture with config c, in load order.
  std::vector<TensorSpec> (*tensors)(const ModelConfig& c);
  // Reads the architecture's own GGUF keys (those after "<arch>." that model_config.cpp does not
  // read for every architecture) into c, after the shared ones. nullptr: it has none.
  Status (*read_keys)(const GgufFile& file, const std::string& prefix, ModelConfig& c) = nullptr;
  // The suffixes (after "<arch>.") of the keys read_keys reads.
  std::span<const char* const> own_keys = {};
  // The model families whose files this architecture runs as tested (goldens against llama.cpp,
  // real tokenizers and templates), for `minfer info --architectures` and the README. A family
  // that shares the architecture but was not tested is not named.
  const char* tested_models = "";
  // feed_forward_length and attention.head_count_kv may be per-layer arrays, which read_keys
  // reads (Gemma 4); otherwise they must be single integers.
  bool per_layer_widths = false;
  // The forward when it is not build_decoder's (models/decoder.h; same contract); nullptr:
  // build_decoder.
  NodeId (*build)(GraphBuilder& g, const ModelConfig& c, const ModelWeights& w,
                  bool hidden) = nullptr;
};

extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kQwen3MoeArch;
extern const ArchSpec kGemma3Arch;
extern const ArchSpec kQwen35Arch;
extern const ArchSpec kQwen35MoeArch;
extern const ArchSpec kGptOssArch;
extern const ArchSpec kGemma4Arch;

// Qwen3-MoE's experts (models/qwen3moe.cpp), which Qwen3.5-MoE shares: the router and expert
// tensors of a block, and the expert_* keys (softmax routing, normalized weights, no scale).
void moe_ffn_tensors(const ModelConfig& c, TensorList& t);
Status read_moe_keys(const GgufFile& file, const std::string& p, ModelConfig& c);

// The sliding window, as llama.cpp reads it (Gemma 3, gpt-oss): no `attention.sliding_window`
// (or 0) means every layer is global; otherwise layer il slides when pattern
// (`attention.sliding_window_pattern`, else default_pattern) is 0 or il % pattern < pattern - 1,
// with rope base `rope.freq_base_swa` (else default_freq_base_swa).
Status read_sliding_window(const GgufFile& file, const std::string& p, ModelConfig& c,
                           int64_t default_pattern, float default_freq_base_swa);

// Every supported architecture, in the order `minfer info --architectures` lists them.
std::span<const ArchSpec* const> supported_archs();

// The spec for an architecture name, or an error naming it and the supported ones.
Result<ArchSpec> find_arch(const std::string& name);

// Sets c.arch and the architecture's facts (qkv_bias, qk_norm, rope_style).
void apply_arch(const ArchSpec& arch, ModelConfig& c);

}  // namespace minfer
