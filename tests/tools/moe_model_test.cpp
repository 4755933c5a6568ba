// Qwen3-MoE in the tools: make-model's qwen3moe presets (the tiny one loads and runs; the
// Qwen3-30B-A3B shape, shortened with --n-layer), quantize on 3-D expert tensors (shape kept,
// values within the type's error, llama-quantize's types and bytes on the shared files), and the
// routing keys the loader refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "models/model.h"
#include "quant/quant_traits.h"
#include "test_util.h"
#include "tools/model_maker.h"
#include "tools/presets.h"
#include "tools/quantize_model.h"
#include "tools_test_util.h"

namespace minfer {
namespace {

using test::TempDir;

using Shape = std::vector<uint64_t>;

std::string make_tiny_moe(TempDir& dir, const std::string& type) {
  MakeModelOptions o;
  o.arch = "qwen3moe";
  o.type = type;
  o.output = dir.file("moe-" + type + ".gguf");
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  auto report = make_model(o);
  EXPECT_TRUE(report.is_ok()) << report.status().message();
  return o.output;
}

// The tiny MoE loads with its expert keys and runs: finite logits, the same bits token by token
// as all at once (each token's experts do not depend on the batch).
TEST(MoeModel, TinyMadeModelLoadsAndRuns) {
  TempDir dir;
  for (const char* type : {"f32", "q4_k_m"}) {
    const std::string path = make_tiny_moe(dir, type);
    auto model = Model::load(path);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    const ModelConfig& c = (*model)->config();
    EXPECT_EQ(c.arch, "qwen3moe");
    EXPECT_EQ(c.n_expert, 8);
    EXPECT_EQ(c.n_expert_used, 2);
    EXPECT_EQ(c.n_ff_exp, 256);
    EXPECT_EQ(c.head_dim, 64);
    const auto& l = (*model)->weights().layers[0];
    ASSERT_TRUE(l.gate_exps.has_value() && l.up_exps.has_value() && l.down_exps.has_value());
    EXPECT_EQ(l.down_exps->n_mats, 8);
    EXPECT_EQ(l.down_exps->n_cols, 256);
    const std::vector<int32_t> ids = {5, 17, 200, 3, 99, 42, 7};
    int64_t n_vocab = 0;
    const std::vector<float> all = test::model_logits(path, ids, &n_vocab);
    ASSERT_EQ(all.size(), ids.size() * static_cast<size_t>(n_vocab));
    for (float v : all) ASSERT_TRUE(std::isfinite(v));
    engine::RuntimeOptions options;
    options.n_threads = 1;
    options.n_ctx = 16;
    auto runtime = engine::Runtime::create(**model, options);
    ASSERT_TRUE(runtime.is_ok());
    for (size_t t = 0; t < ids.size(); ++t) {
      Batch batch;
      batch.add(ids[t], static_cast<int32_t>(t), 0, true);
      auto logits = (*runtime)->step(batch);
      ASSERT_TRUE(logits.is_ok()) << logits.status().message();
      EXPECT_EQ(0, std::memcmp(logits->data(), all.data() + t * n_vocab, logits->size_bytes()))
          << type << " token " << t;
    }
  }
}

// Qwen3-30B-A3B (config.json: hidden 2048, 48 layers, 32 heads / 4 KV heads of 128, 128
// experts of moe_intermediate_size 768, 8 per token, intermediate_size 6144), shortened to 2
// layers as --n-layer does, without writing weights.
TEST(MoeModel, Qwen3ThirtyBA3BPresetShapes) {
  const ModelPreset p = *find_preset("qwen3moe", "qwen3-30b-a3b");
  EXPECT_EQ(p.n_layer, 48);
  EXPECT_EQ(p.n_vocab_real, 151936);
  EXPECT_EQ(p.n_ff, 6144);
  EXPECT_FALSE(p.tied_output);
  MakeModelOptions o;
  o.arch = "qwen3moe";
  o.preset = "qwen3-30b-a3b";
  o.n_layer = 2;
  o.type = "q4_k_m";
  auto layout = make_model_layout(o);
  ASSERT_TRUE(layout.is_ok()) << layout.status().message();
  std::map<std::string, Shape> shapes;
  std::map<std::string, GgmlType> types;
  for (const auto& t : layout->tensors) {
    shapes[t.name] = t.shape;
    types[t.name] = t.type;
  }
  EXPECT_EQ(layout->tensors.size(), 3u + 2u * 12u);
  EXPECT_EQ(shapes.count("blk.2.attn_q.weight"), 0u);
  EXPECT_EQ(shapes["blk.1.attn_q.weight"], (Shape{2048, 32 * 128}));
  EXPECT_EQ(shapes["blk.1.attn_k.weight"], (Shape{2048, 4 * 128}));
  EXPECT_EQ(shapes["blk.1.attn_output.weight"], (Shape{32 * 128, 2048}));
  EXPECT_EQ(shapes["blk.1.attn_q_norm.weight"], (Shape{128}));
  EXPECT_EQ(shapes["blk.1.ffn_gate_inp.weight"], (Shape{2048, 128}));
  EXPECT_EQ(shapes["blk.1.ffn_gate_exps.weight"], (Shape{2048, 768, 128}));
  EXPECT_EQ(shapes["blk.1.ffn_up_exps.weight"], (Shape{2048, 768, 128}));
  EXPECT_EQ(shapes["blk.1.ffn_down_exps.weight"], (Shape{768, 2048, 128}));
  // The router stays f32; 128 experts is not the 8-expert shape: attn_k keeps q4_K.
  EXPECT_EQ(types["blk.0.ffn_gate_inp.weight"], GgmlType::kF32);
  EXPECT_EQ(types["blk.0.ffn_gate_exps.weight"], GgmlType::kQ4_K);
  EXPECT_EQ(types["blk.0.attn_k.weight"], GgmlType::kQ4_K);
  // use_more_bits(i, 2) holds for i = 1 only (i >= 7 · 2 / 8).
  EXPECT_EQ(types["blk.0.ffn_down_exps.weight"], GgmlType::kQ4_K);
  EXPECT_EQ(types["blk.1.ffn_down_exps.weight"], GgmlType::kQ6_K);

  o.n_layer = 49;
  auto too_many = make_model_layout(o);
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_EQ(too_many.status().message(),
            "[make-model] n_layer 49 is not in 1..48 (preset 'qwen3-30b-a3b' has 48 blocks)");
}

// The CLI flag: a shortened model is written with that block count.
TEST(MoeModel, NLayerFlagShortensTheModel) {
  TempDir dir;
  const std::string bin = test::minfer_binary();
  auto made = test::run_command(bin + " make-model --arch qwen3moe --n-layer 2 -t 2 -o " +
                                dir.file("m.gguf"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto file = GgufFile::open(dir.file("m.gguf"));
  ASSERT_TRUE(file.is_ok());
  EXPECT_EQ(*(*file)->get_integer("qwen3moe.block_count"), 2);
  EXPECT_EQ(*(*file)->get_integer("qwen3moe.expert_count"), 8);
  EXPECT_EQ((*file)->find_tensor("blk.2.ffn_up_exps.weight"), nullptr);
  EXPECT_NE((*file)->find_tensor("blk.1.ffn_up_exps.weight"), nullptr);
}

// A 3-D tensor [256, 4, 3] through quantize: the shape is kept, every expert's rows come back
// within the type's error, and the router is not converted.
TEST(MoeModel, QuantizeKeepsThreeDShapeAndValues) {
  TempDir dir;
  const int64_t n_cols = 256, n_rows = 4, n_mats = 3;
  std::vector<float> values(static_cast<size_t>(n_cols * n_rows * n_mats));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
  }
  std::vector<float> router(static_cast<size_t>(n_cols * n_mats), 0.25f);
  GgufWriter w;
  w.set_string("general.architecture", "qwen3moe");
  w.set_scalar<uint32_t>("qwen3moe.block_count", 1);
  w.set_scalar<uint32_t>("qwen3moe.attention.head_count", 1);
  w.set_scalar<uint32_t>("qwen3moe.expert_count", static_cast<uint32_t>(n_mats));
  auto bytes = [](const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  const Shape shape = {uint64_t(n_cols), uint64_t(n_rows), uint64_t(n_mats)};
  ASSERT_TRUE(
      w.add_tensor("blk.0.ffn_up_exps.weight", GgmlType::kF32, shape, bytes(values)).is_ok());
  ASSERT_TRUE(w.add_tensor("blk.0.ffn_gate_inp.weight", GgmlType::kF32,
                           {uint64_t(n_cols), uint64_t(n_mats)}, bytes(router))
                  .is_ok());
  ASSERT_TRUE(w.write(dir.file("in.gguf")).is_ok());
  float amax = 0.0f;
  for (float v : values) amax = std::max(amax, std::fabs(v));
  // Worst-case error of each type relative to the largest value (half a step of its scale).
  for (const auto& [mix, type, tol] : {std::tuple{"q8_0", GgmlType::kQ8_0, 0.01f},
                                       {"q4_k_m", GgmlType::kQ4_K, 0.1f},
                                       {"f16", GgmlType::kF16, 1e-3f}}) {
    QuantizeOptions o;
    o.input = dir.file("in.gguf");
    o.output = dir.file(std::string(mix) + ".gguf");
    o.type = mix;
    o.n_threads = 2;
    o.progress = ProgressStyle::kQuiet;
    auto report = quantize_model(o);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    auto out = GgufFile::open(o.output);
    ASSERT_TRUE(out.is_ok());
    const GgufTensorInfo* t = (*out)->find_tensor("blk.0.ffn_up_exps.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, shape) << mix;
    EXPECT_EQ(t->type, type) << mix;
    EXPECT_EQ((*out)->find_tensor("blk.0.ffn_gate_inp.weight")->type, GgmlType::kF32) << mix;
    const size_t row_bytes = *ggml_row_bytes(type, n_cols);
    std::vector<float> back(static_cast<size_t>(n_cols));
    const auto data = (*out)->tensor_data(*t);
    ASSERT_EQ(data.size(), row_bytes * n_rows * n_mats);
    for (int64_t r = 0; r < n_rows * n_mats; ++r) {
      dequantize_row(type, data.data() + r * row_bytes, back.data(), n_cols);
      for (int64_t i = 0; i < n_cols; ++i) {
        ASSERT_NEAR(back[i], values[static_cast<size_t>(r * n_cols + i)], tol * amax)
            << mix << " expert " << r / n_rows << " row " << r % n_rows;
      }
    }
  }
}

// quantize of the shared f32 qwen3moe-tiny gives llama-quantize's files: the same types (q8_0
// attn_k / attn_v and q5_K attn_output for 8 experts, f32 router) and the same tensor bytes.
TEST(MoeModel, QuantizeReproducesLlamaQuantizeMoeFiles) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  for (const char* type : {"q8_0", "q4_k_m"}) {
    QuantizeOptions o;
    o.input = test::test_data_path("models/qwen3moe-tiny-f32.gguf");
    o.output = dir.file(std::string(type) + ".gguf");
    o.type = type;
    o.n_threads = 2;
    o.progress = ProgressStyle::kQuiet;
    ASSERT_TRUE(quantize_model(o).is_ok());
    auto ours = GgufFile::open(o.output);
    auto ref =
        GgufFile::open(test::test_data_path(std::string("models/qwen3moe-tiny-") + type + ".gguf"));
    ASSERT_TRUE(ours.is_ok() && ref.is_ok());
    ASSERT_EQ((*ours)->tensors().size(), (*ref)->tensors().size());
    for (const GgufTensorInfo& r : (*ref)->tensors()) {
      const GgufTensorInfo* q = (*ours)->find_tensor(r.name);
      ASSERT_NE(q, nullptr) << r.name;
      EXPECT_EQ(ggml_type_info(q->type).name, ggml_type_info(r.type).name) << type << r.name;
      EXPECT_EQ(q->shape, r.shape) << r.name;
      const auto a = (*ours)->tensor_data(*q);
      const auto b = (*ref)->tensor_data(r);
      ASSERT_EQ(a.size(), b.size()) << r.name;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << type << " " << r.name;
    }
  }
}

// The config read from `file`'s metadata with `key` set to `value` (added when absent): its
// error message, or "" when it reads.
std::string config_error(const GgufFile& file, const std::string& key, const GgufValue& value) {
  GgufWriter w;
  for (const GgufKeyValue& kv : file.metadata()) w.set(kv.key, kv.value);
  w.set(key, value);
  auto image = w.serialize();
  if (!image.is_ok()) return "serialize: " + image.status().message();
  auto parsed = GgufFile::parse(*image, "moe.gguf");
  if (!parsed.is_ok()) return "parse: " + parsed.status().message();
  auto config = read_model_config(**parsed);
  return config.is_ok() ? std::string() : config.status().message();
}

// Routing that minfer does not implement is refused, naming the key; the values that mean
// Qwen3's routing load.
TEST(MoeModel, UnimplementedRoutingKeysAreRefused) {
  TempDir dir;
  const std::string path = make_tiny_moe(dir, "f32");
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.is_ok());
  const GgufFile& f = **file;
  EXPECT_EQ(config_error(f, "qwen3moe.expert_gating_func", GgufValue::scalar(uint32_t{2})),
            "[model] 'moe.gguf': key 'qwen3moe.expert_gating_func' is 2, which minfer does not "
            "implement (supported: 1 (softmax))");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_weights_scale", GgufValue::scalar(2.5f)),
            "[model] 'moe.gguf': key 'qwen3moe.expert_weights_scale' is 2.500000, which minfer "
            "does not implement (supported: 1)");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_weights_norm", GgufValue::scalar(false)),
            "[model] 'moe.gguf': key 'qwen3moe.expert_weights_norm' is false, which minfer does "
            "not implement (supported: true)");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_shared_count", GgufValue::scalar(uint32_t{1})),
            "[model] 'moe.gguf': key 'qwen3moe.expert_shared_count' is 1, which minfer does not "
            "implement (supported: 0)");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_used_count", GgufValue::scalar(uint32_t{9})),
            "[model] 'moe.gguf': key 'qwen3moe.expert_used_count' is 9, expected 1 to 8");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_gating_func", GgufValue::scalar(uint32_t{1})), "");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_weights_scale", GgufValue::scalar(1.0f)), "");
  EXPECT_EQ(config_error(f, "qwen3moe.expert_weights_norm", GgufValue::scalar(true)), "");
  // Keys of other MoE routings that nothing reads (grouped experts) are refused by the loader.
  EXPECT_NE(config_error(f, "qwen3moe.expert_group_count", GgufValue::scalar(uint32_t{4}))
                .find("key 'qwen3moe.expert_group_count' is not read by architecture 'qwen3moe'"),
            std::string::npos);
}

}  // namespace
}  // namespace minfer
