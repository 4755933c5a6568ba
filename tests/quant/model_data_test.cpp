// Real data: the qwen2-tiny GGUF files of every type against qwen2-tiny-f32.gguf. They were
// quantized (by llama.cpp) from the same f32 weights, which the first check establishes: each
// dequantized tensor is within its type's error bound of the f32 tensor. Then the strongest
// check: our quantizer, run on the f32 tensor, reproduces the file's bytes exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "quant/quant_traits.h"
#include "quant_test_util.h"
#include "test_util.h"

namespace minfer {
namespace {

std::unique_ptr<GgufFile> open_model(const std::string& name) {
  Result<std::unique_ptr<GgufFile>> f = GgufFile::open(test::test_data_path("models/" + name));
  EXPECT_TRUE(f.is_ok()) << name << ": " << f.status().message();
  return f.is_ok() ? std::move(f.value()) : nullptr;
}

std::vector<float> f32_values(const GgufFile& file, const GgufTensorInfo& t) {
  std::vector<float> v(t.n_elements);  // [n_elements]
  const std::span<const uint8_t> bytes = file.tensor_data(t);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

class ModelData : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelData, DequantizesNearF32AndRequantizesToTheSameBytes) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string name = std::string("qwen2-tiny-") + GetParam() + ".gguf";
  std::unique_ptr<GgufFile> ref = open_model("qwen2-tiny-f32.gguf");
  std::unique_ptr<GgufFile> file = open_model(name);
  ASSERT_TRUE(ref && file);
  std::map<std::string, int> checked_per_type;
  for (const GgufTensorInfo& t : file->tensors()) {
    if (t.type == GgmlType::kF32) continue;  // norms and biases stay f32 in every file
    SCOPED_TRACE(name + " " + t.name + " (" + std::string(ggml_type_info(t.type).name) + ")");
    const GgufTensorInfo* r = ref->find_tensor(t.name);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, GgmlType::kF32);
    ASSERT_EQ(r->shape, t.shape);
    const std::vector<float> want = f32_values(*ref, *r);

    // 1. Same source weights: the dequantized tensor is within the type's bound of f32.
    std::vector<float> got(t.n_elements);  // [n_elements]
    const Status s = dequantize_checked(t.type, file->tensor_data(t), got);
    ASSERT_TRUE(s.is_ok()) << s.message();
    const double err = test::rms_diff(want, got);
    // The weights are random, so the synthetic tests' error model and factors apply unchanged.
    const double model = test::nominal_error_rms(t.type, want);
    EXPECT_LE(err, test::allowed_error_factor(t.type) * model)
        << "rms error " << err << ", model " << model;

    // 2. Our reference quantizer gives llama.cpp's bytes, for every type in the file.
    const std::span<const uint8_t> file_bytes = file->tensor_data(t);
    std::vector<uint8_t> ours(file_bytes.size());  // [n_bytes]
    ASSERT_TRUE(quantize_checked(t.type, want, ours).is_ok());
    size_t first_diff = ours.size();
    for (size_t i = 0; i < ours.size(); ++i) {
      if (ours[i] != file_bytes[i]) {
        first_diff = i;
        break;
      }
    }
    EXPECT_EQ(first_diff, ours.size())
        << "first differing byte " << first_diff << " of " << ours.size();
    ++checked_per_type[std::string(ggml_type_info(t.type).name)];
  }
  EXPECT_FALSE(checked_per_type.empty());
  std::string summary;
  for (const auto& [type, count] : checked_per_type)
    summary += type + ":" + std::to_string(count) + " ";
  RecordProperty("tensors_bit_exact", summary);
}

INSTANTIATE_TEST_SUITE_P(Qwen2Tiny, ModelData,
                         ::testing::Values("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                           "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"));

}  // namespace
}  // namespace minfer
