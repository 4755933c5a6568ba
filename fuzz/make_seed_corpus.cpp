// Writes the fuzzer's seed corpus: small valid GGUF files made with GgufWriter, covering every
// metadata value type, arrays (of strings, nested, empty), several alignments, tensor types and
// shapes, and a version-2 header. Usage: minfer_gguf_fuzz_seeds OUT_DIR
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"

namespace {

using minfer::GgmlType;
using minfer::GgufValue;
using minfer::GgufWriter;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);  // [n] deterministic filler bytes
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 37 + seed);
  return out;
}

// Adds a tensor of `type` and `shape` filled with pattern bytes.
void add(GgufWriter& w, const std::string& name, GgmlType type, std::vector<uint64_t> shape) {
  uint64_t rows = 1;
  for (size_t d = 1; d < shape.size(); ++d) rows *= shape[d];
  const uint64_t n_bytes = *minfer::ggml_row_bytes(type, shape[0]) * rows;
  const minfer::Status s = w.add_tensor(name, type, std::move(shape),
                                        pattern(n_bytes, static_cast<uint8_t>(name.size())));
  if (!s.is_ok()) std::fprintf(stderr, "%s\n", s.message().c_str());
}

void every_value_type(GgufWriter& w) {
  w.set("u8", GgufValue::scalar<uint8_t>(200));
  w.set("i8", GgufValue::scalar<int8_t>(-5));
  w.set("u16", GgufValue::scalar<uint16_t>(60000));
  w.set("i16", GgufValue::scalar<int16_t>(-300));
  w.set("u32", GgufValue::scalar<uint32_t>(123456));
  w.set("i32", GgufValue::scalar<int32_t>(-123456));
  w.set("f32", GgufValue::scalar<float>(0.5f));
  w.set("bool", GgufValue::scalar<bool>(true));
  w.set("str", GgufValue::string("hello"));
  w.set("u64", GgufValue::scalar<uint64_t>(1ull << 40));
  w.set("i64", GgufValue::scalar<int64_t>(-(1ll << 40)));
  w.set("f64", GgufValue::scalar<double>(2.5));
  w.set("a.u8", GgufValue::array<uint8_t>({1, 2, 3}));
  w.set("a.i16", GgufValue::array<int16_t>({-1, 1}));
  w.set("a.u32", GgufValue::array<uint32_t>({7}));
  w.set("a.f32", GgufValue::array<float>({1.0f, -1.0f}));
  w.set("a.u64", GgufValue::array<uint64_t>({9}));
  w.set("a.f64", GgufValue::array<double>({3.0}));
  w.set("a.bool", GgufValue::scalar_array_from_bytes(minfer::GgufType::kBool, {0, 1}));
  w.set("a.str", GgufValue::string_array({"x", "", "yz"}));
  w.set("a.empty", GgufValue::array<int32_t>({}));
  w.set("a.nested", GgufValue::array_of_arrays(
                        {GgufValue::array<int32_t>({1, 2}), GgufValue::string_array({"q"})}));
}

void model_like(GgufWriter& w, const std::string& arch) {
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "seed");
  w.set_scalar<uint32_t>(arch + ".embedding_length", 64);
  w.set_scalar<uint32_t>(arch + ".block_count", 1);
  w.set_scalar<uint32_t>(arch + ".attention.head_count", 4);
  w.set_scalar<uint32_t>(arch + ".attention.head_count_kv", 2);
  w.set_scalar<uint32_t>(arch + ".attention.key_length", 16);
  w.set_scalar<uint32_t>(arch + ".feed_forward_length", 128);
  w.set_scalar<uint32_t>(arch + ".context_length", 256);
  w.set_scalar<float>(arch + ".rope.freq_base", 10000.0f);
  w.set_string(arch + ".rope.scaling.type", "linear");
  w.set_scalar<float>(arch + ".rope.scaling.factor", 2.0f);
  w.set_scalar<float>(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"<s>", "</s>", "a", "b", "ab"}));
  w.set("tokenizer.ggml.token_type", GgufValue::array<int32_t>({3, 3, 1, 1, 1}));
  w.set("tokenizer.ggml.merges", GgufValue::string_array({"a b"}));
  w.set_string("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}");
}

bool write(const std::string& dir, const std::string& name, const GgufWriter& w, bool v2 = false) {
  minfer::Result<std::vector<uint8_t>> image = w.serialize();
  if (!image.is_ok()) {
    std::fprintf(stderr, "%s\n", image.status().message().c_str());
    return false;
  }
  if (v2) (*image)[4] = 2;  // v2 shares v3's layout
  const std::string path = dir + "/" + name + ".gguf";
  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "[fuzz] cannot create '%s'\n", path.c_str());
    return false;
  }
  const bool ok = std::fwrite(image->data(), 1, image->size(), out) == image->size();
  return std::fclose(out) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;

  ok &= write(dir, "empty", GgufWriter());

  GgufWriter values;
  every_value_type(values);
  ok &= write(dir, "every_value_type", values);
  ok &= write(dir, "every_value_type_v2", values, /*v2=*/true);

  GgufWriter vocab;
  model_like(vocab, "qwen3");
  ok &= write(dir, "vocab_only", vocab);

  const GgmlType kTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,
                             GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                             GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                             GgmlType::kQ6_K, GgmlType::kQ8_K};
  for (const GgmlType type : kTypes) {
    GgufWriter w;
    model_like(w, "llama");
    const uint64_t row = minfer::ggml_type_info(type).block_size == 1 ? 8 : 256;
    add(w, "token_embd.weight", type, {row, 2});
    add(w, "output_norm.weight", GgmlType::kF32, {8});
    ok &= write(dir, "model_" + std::string(minfer::ggml_type_info(type).name), w);
  }

  for (const uint32_t alignment : {1u, 8u, 64u, 256u}) {
    GgufWriter w;
    w.set_string("general.architecture", "qwen2");
    w.set_alignment(alignment);
    add(w, "a", GgmlType::kF32, {3});
    add(w, "b", GgmlType::kQ8_0, {32, 2});
    add(w, "c", GgmlType::kF16, {5, 1, 1, 2});
    ok &= write(dir, "alignment_" + std::to_string(alignment), w);
  }

  GgufWriter mixed;  // values and tensors together, K-quant mix as real files have
  every_value_type(mixed);
  model_like(mixed, "qwen2");
  add(mixed, "blk.0.attn_q.weight", GgmlType::kQ4_K, {256, 2});
  add(mixed, "blk.0.ffn_down.weight", GgmlType::kQ6_K, {256});
  add(mixed, "blk.0.attn_norm.weight", GgmlType::kF32, {64});
  ok &= write(dir, "mixed", mixed);

  return ok ? 0 : 1;
}
