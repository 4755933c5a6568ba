#include "tools/presets.h"

#include <array>

namespace minfer {

namespace {

// The tiny presets mirror ../shared/models/*-tiny (n_embd 256, 3 layers, 4 heads, 2 KV heads,
// n_ff 512; Qwen3 with head_dim 128 ≠ n_embd / n_head) and keep an untied output.weight so
// that both output paths are exercised.
// qwen3moe-tiny mirrors ../shared/models/qwen3moe-tiny (head_dim 64, 8 experts of width 256, 2
// used); qwen3-30b-a3b is Qwen3-30B-A3B (and Qwen3-Coder-30B-A3B, the same shape).
constexpr std::array<ModelPreset, 17> kPresets = {{
    {"tiny", "qwen2", 256, 3, 4, 2, 0, 512, 4096, 1000, 1e6f, 1e-6f, false},
    {"tiny", "qwen3", 256, 3, 4, 2, 128, 512, 4096, 1000, 1e6f, 1e-6f, false},
    {"tiny", "llama", 256, 3, 4, 2, 0, 512, 4096, 1000, 5e5f, 1e-5f, false},
    {"tiny", "qwen3moe", 256, 3, 4, 2, 64, 512, 4096, 1000, 1e6f, 1e-6f, false, 8, 2, 256},
    {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 0, 4864, 32768, 151936, 1e6f, 1e-6f, true},
    {"qwen2.5-1.5b", "qwen2", 1536, 28, 12, 2, 0, 8960, 32768, 151936, 1e6f, 1e-6f, true},
    {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 40960, 151936, 1e6f, 1e-6f, true},
    {"qwen3-1.7b", "qwen3", 2048, 28, 16, 8, 128, 6144, 40960, 151936, 1e6f, 1e-6f, true},
    {"llama-3.2-1b", "llama", 2048, 16, 32, 8, 0, 8192, 131072, 128256, 5e5f, 1e-5f, true},
    {"qwen3-30b-a3b", "qwen3moe", 2048, 48, 32, 4, 128, 6144, 40960, 151936, 1e6f, 1e-6f, false,
     128, 8, 768},
    // Gemma 3: tiny mirrors ../shared/models/gemma3-tiny (6 layers, head_dim 64); gemma-3-1b is
    // google/gemma-3-1b-it's config.json (head_dim 256 ≠ 1152 / 4, 262,144 tokens).
    {"tiny", "gemma3", 256, 6, 4, 2, 64, 512, 4096, 1000, 1e6f, 1e-6f, false},
    {"gemma-3-1b", "gemma3", 1152, 26, 4, 1, 256, 6912, 32768, 262144, 1e6f, 1e-6f, true},
    // Qwen3.5 (../shared/docs/models/qwen35.md, "Real models"): tiny mirrors
    // ../shared/models/qwen35-tiny and qwen35moe-tiny (head_dim 32, 6 and 4 blocks); the real
    // sizes take layers, n_embd, heads, head_dim 256, experts and the vocabulary (248,320) from
    // the spec's table. Not in the table: n_ff 3584 (0.8B) and 9216 (4B) and the delta-net key /
    // value heads below (16 / 16, 16 / 32, 16 / 32), from the Qwen3.5 config.json files
    // (intermediate_size, linear_num_key_heads, linear_num_value_heads; the 35B-A3B's
    // moe_intermediate_size and shared_expert_intermediate_size are both 512).
    {"tiny", "qwen35", 128, 6, 2, 1, 32, 64, 4096, 1000, 1e7f, 1e-6f, false},
    {"tiny", "qwen35moe", 128, 4, 2, 1, 32, 64, 4096, 768, 1e7f, 1e-6f, false, 4, 2, 32},
    {"qwen3.5-0.8b", "qwen35", 1024, 24, 8, 2, 256, 3584, 262144, 248320, 1e7f, 1e-6f, true},
    {"qwen3.5-4b", "qwen35", 2560, 32, 16, 4, 256, 9216, 262144, 248320, 1e7f, 1e-6f, true},
    {"qwen3.5-35b-a3b", "qwen35moe", 2048, 40, 16, 2, 256, 512, 262144, 248320, 1e7f, 1e-6f, false,
     256, 8, 512},
}};

struct DeltaNetRow {
  const char* name;
  const char* arch;
  DeltaNetPreset delta_net;
};

// n_rot 64 of head_dim 256 (partial rotary 0.25) with sections [11, 11, 10, 0], d_conv 4,
// d_state 128, every 4th layer attention (the spec's "Shared by all"); tiny: as the tiny files
// (n_rot 8, d_state 16, 2 key and 4 value heads, attention every 3rd / 2nd layer).
constexpr std::array<DeltaNetRow, 5> kDeltaNets = {{
    {"tiny", "qwen35", {8, {11, 11, 10, 0}, 4, 16, 2, 4, 3, 0}},
    {"tiny", "qwen35moe", {8, {11, 11, 10, 0}, 4, 16, 2, 4, 2, 32}},
    {"qwen3.5-0.8b", "qwen35", {64, {11, 11, 10, 0}, 4, 128, 16, 16, 4, 0}},
    {"qwen3.5-4b", "qwen35", {64, {11, 11, 10, 0}, 4, 128, 16, 32, 4, 0}},
    {"qwen3.5-35b-a3b", "qwen35moe", {64, {11, 11, 10, 0}, 4, 128, 16, 32, 4, 512}},
}};

struct SlidingWindowRow {
  const char* name;
  const char* arch;
  SlidingWindowPreset window;
};

// Gemma 3 tiny: window 8, every 3rd layer global (as gemma3-tiny); Gemma 3 1B: window 512, every
// 6th layer global, local rope base 10,000.
constexpr std::array<SlidingWindowRow, 2> kSlidingWindows = {{
    {"tiny", "gemma3", {8, 3, 1e4f}},
    {"gemma-3-1b", "gemma3", {512, 6, 1e4f}},
}};

struct Llama3RopeRow {
  const char* name;
  const char* arch;
  Llama3RopePreset rope;
};

// meta-llama/Llama-3.2-1B's rope_scaling: factor 32, low 1, high 4, original context 8192.
constexpr std::array<Llama3RopeRow, 1> kLlama3Ropes = {{
    {"llama-3.2-1b", "llama", {32.0f, 1.0f, 4.0f, 8192}},
}};

}  // namespace

Llama3RopePreset preset_llama3_rope(const ModelPreset& p) {
  for (const Llama3RopeRow& row : kLlama3Ropes) {
    if (std::string_view(row.name) == p.name && std::string_view(row.arch) == p.arch) {
      return row.rope;
    }
  }
  return {};
}

Result<ModelPreset> find_preset(std::string_view arch, std::string_view name) {
  bool name_known = false;
  for (const ModelPreset& p : kPresets) {
    if (name != p.name) continue;
    name_known = true;
    if (arch == p.arch) return p;
  }
  if (name_known) {
    for (const ModelPreset& p : kPresets) {
      if (name == p.name) {
        return make_error(ErrorCode::kInvalidArgument,
                          "[make-model] preset '{}' is a {} model, not --arch {}", name, p.arch,
                          arch);
      }
    }
  }
  return make_error(ErrorCode::kInvalidArgument, "[make-model] unknown preset '{}' (known: {})",
                    name, preset_names());
}

DeltaNetPreset preset_delta_net(const ModelPreset& p) {
  for (const DeltaNetRow& row : kDeltaNets) {
    if (std::string_view(row.name) == p.name && std::string_view(row.arch) == p.arch) {
      return row.delta_net;
    }
  }
  return {};
}

SlidingWindowPreset preset_sliding_window(const ModelPreset& p) {
  for (const SlidingWindowRow& row : kSlidingWindows) {
    if (std::string_view(row.name) == p.name && std::string_view(row.arch) == p.arch) {
      return row.window;
    }
  }
  return {};
}

std::string preset_names() {
  std::string out = "tiny";
  for (const ModelPreset& p : kPresets) {
    if (std::string_view(p.name) == "tiny") continue;
    out += ", ";
    out += p.name;
  }
  return out;
}

}  // namespace minfer
