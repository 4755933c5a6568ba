// minfer quantize: llama.cpp's per-tensor type choices and bytes on the shared qwen2-tiny files,
// the _M mix rules on a real shape, the tensor order, and logits within each type's usual error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "test_util.h"
#include "tools/quantize_model.h"
#include "tools_test_util.h"

namespace minfer {
namespace {

using test::TempDir;

std::unique_ptr<GgufFile> open_ok(const std::string& path) {
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  return f.is_ok() ? std::move(*f) : nullptr;
}

class QuantizeSharedTest : public ::testing::TestWithParam<const char*> {};

// Every type's shared file is reproduced: the same tensors with the same types, the same
// general.file_type, and byte-identical tensor data (our reference quantizers are llama.cpp's
// algorithms, so any difference is a bug). The quantized files come from llama-quantize and also
// fix the tensor order; the f16 / bf16 ones come from llama.cpp's HF converter, which writes
// tensors in its own order, so for those only the set is compared.
TEST_P(QuantizeSharedTest, ReproducesLlamaQuantizeFile) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string type = GetParam();
  TempDir dir;
  QuantizeOptions o;
  o.input = test::test_data_path("models/qwen2-tiny-f32.gguf");
  o.output = dir.file("out.gguf");
  o.type = type;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  auto report = quantize_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto ours = open_ok(o.output);
  auto ref = open_ok(test::test_data_path("models/qwen2-tiny-" + type + ".gguf"));
  ASSERT_TRUE(ours && ref);
  EXPECT_EQ(*ours->get_integer("general.file_type"), *ref->get_integer("general.file_type"));
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  const bool from_llama_quantize = type != "f16" && type != "bf16";
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const GgufTensorInfo& r = ref->tensors()[i];
    if (from_llama_quantize) {
      EXPECT_EQ(ours->tensors()[i].name, r.name) << "tensor order differs at " << i;
    }
    const GgufTensorInfo* found = ours->find_tensor(r.name);
    ASSERT_NE(found, nullptr) << r.name;
    const GgufTensorInfo& q = *found;
    EXPECT_EQ(ggml_type_info(q.type).name, ggml_type_info(r.type).name) << r.name;
    EXPECT_EQ(q.shape, r.shape) << r.name;
    const auto a = ours->tensor_data(q);
    const auto b = ref->tensor_data(r);
    ASSERT_EQ(a.size(), b.size()) << r.name;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << r.name << " bytes differ";
  }
  // Metadata other than the file type is copied.
  EXPECT_EQ(*ours->get_string("tokenizer.chat_template"),
            *ref->get_string("tokenizer.chat_template"));
  EXPECT_EQ((*ours->get_string_array("tokenizer.ggml.tokens"))->size(), 1000u);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeSharedTest,
                         ::testing::Values("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                           "q4_k_m", "q5_k_m", "q6_k"));

// Qwen2.5-0.5B's tensors (n_embd 896 = 3.5 × 256, tied output, 24 layers) under q4_k_m: the
// K-quant rows do not divide 896, so llama.cpp falls back per tensor.
TEST(QuantizePlan, Qwen25HalfBillionQ4KM) {
  std::vector<TensorDesc> descs;
  descs.push_back({"token_embd.weight", GgmlType::kF32, {896, 151936}});
  descs.push_back({"output_norm.weight", GgmlType::kF32, {896}});
  for (int il = 0; il < 24; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    descs.push_back({b + "attn_norm.weight", GgmlType::kF32, {896}});
    descs.push_back({b + "attn_q.weight", GgmlType::kF32, {896, 896}});
    descs.push_back({b + "attn_q.bias", GgmlType::kF32, {896}});
    descs.push_back({b + "attn_v.weight", GgmlType::kF32, {896, 128}});
    descs.push_back({b + "ffn_down.weight", GgmlType::kF32, {4864, 896}});
    descs.push_back({b + "ffn_up.weight", GgmlType::kF32, {896, 4864}});
  }
  const std::vector<size_t> order = llama_tensor_order(descs);
  std::vector<TensorDesc> ordered;
  for (size_t i : order) ordered.push_back(descs[i]);
  // Outside blocks first (by name), then blocks by number: blk.10 after blk.9, not after blk.1.
  EXPECT_EQ(ordered[0].name, "output_norm.weight");
  EXPECT_EQ(ordered[1].name, "token_embd.weight");
  EXPECT_EQ(ordered[2].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(ordered[2 + 6 * 10].name, "blk.10.attn_norm.weight");

  auto mix = find_quant_mix("Q4_K_M");
  ASSERT_TRUE(mix.is_ok());
  const TypePlan plan = plan_tensor_types(*mix, ordered, "qwen2", 24, 14, 2);
  auto type_of = [&](const std::string& name) {
    for (size_t k = 0; k < ordered.size(); ++k) {
      if (ordered[k].name == name) return plan.types[k];
    }
    ADD_FAILURE() << name;
    return GgmlType::kF32;
  };
  // Tied embedding = output: 896 is not a multiple of 256 → q8_0 (no fallback counted).
  EXPECT_EQ(type_of("token_embd.weight"), GgmlType::kQ8_0);
  EXPECT_EQ(type_of("output_norm.weight"), GgmlType::kF32);
  // use_more_bits(i, 24): i < 3, i >= 21, (i - 3) % 3 == 2.
  const std::vector<int> more_bits = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23};
  for (int il = 0; il < 24; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    const bool more = std::find(more_bits.begin(), more_bits.end(), il) != more_bits.end();
    EXPECT_EQ(type_of(b + "attn_norm.weight"), GgmlType::kF32);
    EXPECT_EQ(type_of(b + "attn_q.bias"), GgmlType::kF32);
    EXPECT_EQ(type_of(b + "attn_q.weight"), GgmlType::kQ5_0) << il;  // q4_K → q5_0
    EXPECT_EQ(type_of(b + "attn_v.weight"), more ? GgmlType::kQ8_0 : GgmlType::kQ5_0) << il;
    // ffn_down rows are 4864 = 19 × 256 long: no fallback.
    EXPECT_EQ(type_of(b + "ffn_down.weight"), more ? GgmlType::kQ6_K : GgmlType::kQ4_K) << il;
    EXPECT_EQ(type_of(b + "ffn_up.weight"), GgmlType::kQ5_0) << il;
  }
  // attn_q, attn_v, ffn_up of every layer fell back.
  EXPECT_EQ(plan.n_fallback, 24 * 3);
}

TEST(QuantizePlan, OutputRulesPerMix) {
  // Untied: output.weight gets q6_K for every quantized mix but q8_0; token_embd keeps the
  // default type.
  const std::vector<TensorDesc> descs = {
      {"output.weight", GgmlType::kF32, {256, 1000}},
      {"token_embd.weight", GgmlType::kF32, {256, 1000}},
  };
  for (const char* name : {"q4_0", "q5_1", "q4_k_m", "q6_k"}) {
    const TypePlan plan = plan_tensor_types(*find_quant_mix(name), descs, "llama", 3, 4, 2);
    EXPECT_EQ(plan.types[0], GgmlType::kQ6_K) << name;
    EXPECT_EQ(plan.types[1], find_quant_mix(name)->default_type) << name;
  }
  const TypePlan q8 = plan_tensor_types(*find_quant_mix("q8_0"), descs, "llama", 3, 4, 2);
  EXPECT_EQ(q8.types[0], GgmlType::kQ8_0);
  const TypePlan f16 = plan_tensor_types(*find_quant_mix("f16"), descs, "llama", 3, 4, 2);
  EXPECT_EQ(f16.types[0], GgmlType::kF16);
  EXPECT_EQ(f16.types[1], GgmlType::kF16);
  // A row of 48 fits no 32-block: even the fallback does not divide it → f16.
  const std::vector<TensorDesc> odd = {{"blk.0.ffn_up.weight", GgmlType::kF32, {48, 64}}};
  const TypePlan plan = plan_tensor_types(*find_quant_mix("q4_k_m"), odd, "llama", 1, 1, 1);
  EXPECT_EQ(plan.types[0], GgmlType::kF16);
  EXPECT_EQ(plan.n_fallback, 1);
}

// mxfp4_moe gives every tensor of the f32 gpt-oss file the type llama-quantize MXFP4_MOE gave it
// in the shared MXFP4 file (the same tensor names: experts mxfp4, other matrices q8_0, the router,
// norms, biases and sinks f32), and file type 38.
TEST(Quantize, Mxfp4MoeMatchesLlamaQuantizeTypes) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  QuantizeOptions o;
  o.input = test::test_data_path("models/gptoss-tiny-f32.gguf");
  o.output = dir.file("out.gguf");
  o.type = "MXFP4_MOE";
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  auto report = quantize_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto ours = open_ok(o.output);
  auto ref = open_ok(test::test_data_path("models/gptoss-tiny-mxfp4.gguf"));
  ASSERT_TRUE(ours && ref);
  EXPECT_EQ(*ours->get_integer("general.file_type"), 38);
  EXPECT_EQ(*ref->get_integer("general.file_type"), 38);
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  int n_mxfp4 = 0;
  for (const GgufTensorInfo& r : ref->tensors()) {
    const GgufTensorInfo* q = ours->find_tensor(r.name);
    ASSERT_NE(q, nullptr) << r.name;
    EXPECT_EQ(ggml_type_info(q->type).name, ggml_type_info(r.type).name) << r.name;
    n_mxfp4 += q->type == GgmlType::kMXFP4;
  }
  EXPECT_EQ(n_mxfp4, 4 * 3);  // gate, up, down experts of 4 layers
}

TEST(Quantize, UnknownTypeIsAnErrorListingTheTypes) {
  auto mix = find_quant_mix("q3_k_xl");
  ASSERT_FALSE(mix.is_ok());
  EXPECT_NE(mix.status().message().find("q3_k_xl"), std::string::npos);
  EXPECT_NE(mix.status().message().find("q4_k_m"), std::string::npos);
}

TEST(Quantize, CommandLine) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  const std::string out = dir.file("q.gguf");
  auto r = test::run_command(test::minfer_binary() + " quantize " +
                             test::test_data_path("models/qwen2-tiny-f32.gguf") + " " + out +
                             " q8_0 -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Not a TTY: plain progress lines, no carriage returns.
  EXPECT_NE(r.err.find("quantize: 100%"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  auto f = open_ok(out);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f->get_integer("general.file_type"), 7);

  auto bad =
      test::run_command(test::minfer_binary() + " quantize " +
                        test::test_data_path("models/qwen2-tiny-f32.gguf") + " " + out + " q9_9");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("[quantize] unknown type 'q9_9'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace minfer
