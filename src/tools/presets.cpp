#include "tools/presets.h"

#include <array>

namespace minfer {

namespace {

// The tiny presets mirror ../shared/models/*-tiny (n_embd 256, 3 layers, 4 heads, 2 KV heads,
// n_ff 512; Qwen3 with head_dim 128 ≠ n_embd / n_head) and keep an untied output.weight so
// that both output paths are exercised.
// qwen3moe-tiny mirrors ../shared/models/qwen3moe-tiny (head_dim 64, 8 experts of width 256, 2
// used); qwen3-30b-a3b is Qwen3-30B-A3B (and Qwen3-Coder-30B-A3B, the same shape).
constexpr std::array<ModelPreset, 22> kPresets = {{
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
    // gpt-oss: tiny mirrors ../shared/models/gptoss-tiny-* (4 layers, 8 heads of 64, 1 KV head,
    // 4 experts of width 128, 2 used); gpt-oss-20b is openai/gpt-oss-20b: 24 layers
    // (../shared/docs/models/gemma4-gptoss.md: 24 → 20B), n_embd 2880, n_ff 2880, 64 heads, 8 KV
    // heads (the spec's shared sizes), head_dim 64, 32 experts, 4 used, 201,088 tokens, context
    // 131,072 (its config.json; NVIDIA Megatron-Bridge's gpt-oss page lists the same), rope base
    // 150,000 and eps 1e-5 (as the tiny files).
    {"tiny", "gpt-oss", 128, 4, 8, 1, 64, 128, 131072, 1000, 1.5e5f, 1e-5f, false, 4, 2, 128},
    {"gpt-oss-20b", "gpt-oss", 2880, 24, 64, 8, 64, 2880, 131072, 201088, 1.5e5f, 1e-5f, false, 32,
     4, 2880},
    // Gemma 4 (the full layers' head dim, KV heads and rope base here; the sliding ones' in
    // kGemma4s): tiny mirrors ../shared/models/gemma4-tiny-* (E-style: 8 layers, n_embd 128, 2
    // heads of 32, 1 KV head, n_ff 32; its 960 tokens). gemma-4-e4b is google/gemma-4-E4B-it's
    // text model: 42 layers, hidden 2560, intermediate 10240, 8 heads, 2 KV heads, global head
    // dim 512, rope theta 1e6, 262,144 tokens, context 131,072 (NVIDIA Megatron-Bridge's Gemma 4
    // E4B recipe; google/gemma.cpp PR 919's ConfigGemma4_E4B). gemma-4-26b-a4b is
    // google/gemma-4-26B-A4B-it's: 30 layers, hidden 2816, intermediate 2112, 16 heads, 2 global
    // KV heads, global head dim 512, 128 experts of 704, 8 used, context 262,144 (its
    // config.json text_config, as quoted by public Gemma 4 loaders' tests).
    {"tiny", "gemma4", 128, 8, 2, 1, 32, 32, 131072, 960, 1e6f, 1e-6f, true},
    {"gemma-4-e4b", "gemma4", 2560, 42, 8, 2, 512, 10240, 131072, 262144, 1e6f, 1e-6f, true},
    {"gemma-4-26b-a4b", "gemma4", 2816, 30, 16, 2, 512, 2112, 262144, 262144, 1e6f, 1e-6f, true,
     128, 8, 704},
}};

// A table of per-preset extras, looked up by (preset name, architecture).
template <typename T>
struct PresetRow {
  const char* name;
  const char* arch;
  T value;
};

// The row of `p` in `rows`, or T's defaults (the preset has none).
template <typename T, size_t N>
T find_row(const std::array<PresetRow<T>, N>& rows, const ModelPreset& p) {
  for (const PresetRow<T>& row : rows) {
    if (std::string_view(row.name) == p.name && std::string_view(row.arch) == p.arch) {
      return row.value;
    }
  }
  return {};
}

// n_rot 64 of head_dim 256 (partial rotary 0.25) with sections [11, 11, 10, 0], d_conv 4,
// d_state 128, every 4th layer attention (the spec's "Shared by all"); tiny: as the tiny files
// (n_rot 8, d_state 16, 2 key and 4 value heads, attention every 3rd / 2nd layer).
constexpr std::array<PresetRow<DeltaNetPreset>, 5> kDeltaNets = {{
    {"tiny", "qwen35", {8, {11, 11, 10, 0}, 4, 16, 2, 4, 3, 0}},
    {"tiny", "qwen35moe", {8, {11, 11, 10, 0}, 4, 16, 2, 4, 2, 32}},
    {"qwen3.5-0.8b", "qwen35", {64, {11, 11, 10, 0}, 4, 128, 16, 16, 4, 0}},
    {"qwen3.5-4b", "qwen35", {64, {11, 11, 10, 0}, 4, 128, 16, 32, 4, 0}},
    {"qwen3.5-35b-a3b", "qwen35moe", {64, {11, 11, 10, 0}, 4, 128, 16, 32, 4, 512}},
}};

// Gemma 3 tiny: window 8, every 3rd layer global (as gemma3-tiny); Gemma 3 1B: window 512, every
// 6th layer global, local rope base 10,000. gpt-oss: the window alone (8 as the tiny files, 128
// as gpt-oss-20b's config.json sliding_window).
constexpr std::array<PresetRow<SlidingWindowPreset>, 4> kSlidingWindows = {{
    {"tiny", "gemma3", {8, 3, 1e4f}},
    {"gemma-3-1b", "gemma3", {512, 6, 1e4f}},
    {"tiny", "gpt-oss", {8, 0, 0.0f}},
    {"gpt-oss-20b", "gpt-oss", {128, 0, 0.0f}},
}};

// gpt-oss's rope_scaling: yarn, factor 32, original context 4,096, beta_fast 32, beta_slow 1
// (the spec's YaRN defaults; the tiny files carry the same keys).
constexpr std::array<PresetRow<YarnPreset>, 2> kYarns = {{
    {"tiny", "gpt-oss", {32.0f, 4096, 32.0f, 1.0f}},
    {"gpt-oss-20b", "gpt-oss", {32.0f, 4096, 32.0f, 1.0f}},
}};

// meta-llama/Llama-3.2-1B's rope_scaling: factor 32, low 1, high 4, original context 8192.
constexpr std::array<PresetRow<Llama3RopePreset>, 1> kLlama3Ropes = {{
    {"llama-3.2-1b", "llama", {32.0f, 1.0f, 4.0f, 8192}},
}};

// Gemma 4's sliding layers, sharing and per-layer inputs: tiny as gemma4-tiny (window 8, every
// 2nd layer full, sliding head dim 16, the last 4 layers sharing, per-layer inputs of 8, their
// FFN twice as wide); gemma-4-e4b: window 512, every 6th layer full, sliding head dim 256, 2 KV
// heads, the last 18 layers sharing, per-layer inputs of 256 (the sources above); gemma-4-26b-a4b:
// window 1024, every 6th layer full, sliding head dim 256, 8 KV heads, the full layers' V their K
// (attention_k_eq_v), no sharing or per-layer inputs. Every one: sliding rope theta 10,000, a
// quarter of the full head dim turning (partial_rotary_factor 0.25), logits softcapped at 30.
constexpr std::array<PresetRow<Gemma4Preset>, 3> kGemma4s = {{
    {"tiny", "gemma4", {8, 2, 16, 1, 1e4f, 4, 4, 8, true, false, 30.0f}},
    {"gemma-4-e4b", "gemma4", {512, 6, 256, 2, 1e4f, 64, 18, 256, false, false, 30.0f}},
    {"gemma-4-26b-a4b", "gemma4", {1024, 6, 256, 8, 1e4f, 64, 0, 0, false, true, 30.0f}},
}};

}  // namespace

Gemma4Preset preset_gemma4(const ModelPreset& p) {
  return find_row(kGemma4s, p);
}

Llama3RopePreset preset_llama3_rope(const ModelPreset& p) {
  return find_row(kLlama3Ropes, p);
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
  return find_row(kDeltaNets, p);
}

SlidingWindowPreset preset_sliding_window(const ModelPreset& p) {
  return find_row(kSlidingWindows, p);
}

YarnPreset preset_yarn(const ModelPreset& p) {
  return find_row(kYarns, p);
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
