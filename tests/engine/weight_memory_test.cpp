// --no-mmap (weights read into private memory) computes exactly what the mapped file computes,
// and a truncated file read that way is the same clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forward_logits.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

// Logits of every position of a short prompt, as one prefill: [8, n_vocab].
std::vector<float> prompt_logits(const Model& model) {
  const std::vector<int32_t> prompt = {1, 17, 404, 9, 230, 5, 77, 801};
  return test::forward_logits(model, prompt);
}

TEST(WeightMemory, NoMmapGivesBitIdenticalLogits) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name :
       {"qwen2-tiny-q8_0.gguf", "qwen2-tiny-q4_k_m.gguf", "llama-tiny-f32.gguf"}) {
    const std::string path = test::test_data_path(std::string("models/") + name);
    MapOptions read;
    read.use_mmap = false;
    auto mapped = Model::load(path);
    auto copied = Model::load(path, read);
    ASSERT_TRUE(mapped.is_ok()) << mapped.status().message();
    ASSERT_TRUE(copied.is_ok()) << copied.status().message();
    // The weights really are elsewhere: not views of one map.
    EXPECT_NE((*mapped)->file().tensor_data((*mapped)->file().tensors()[0]).data(),
              (*copied)->file().tensor_data((*copied)->file().tensors()[0]).data());
    const std::vector<float> a = prompt_logits(**mapped);
    const std::vector<float> b = prompt_logits(**copied);
    ASSERT_EQ(a.size(), static_cast<size_t>(8 * (*mapped)->config().n_vocab)) << name;
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name;
  }
}

TEST(WeightMemory, TruncatedFileIsTheSameClearErrorWithoutMmap) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  std::vector<uint8_t> bytes =
      test::read_file_bytes(test::test_data_path("models/qwen2-tiny-q8_0.gguf"));
  bytes.resize(bytes.size() / 2);
  test::write_file_bytes(dir.file("cut.gguf"), bytes);
  MapOptions read;
  read.use_mmap = false;
  auto mapped = Model::load(dir.file("cut.gguf"));
  auto copied = Model::load(dir.file("cut.gguf"), read);
  ASSERT_FALSE(mapped.is_ok());
  ASSERT_FALSE(copied.is_ok());
  EXPECT_EQ(copied.status().message(), mapped.status().message());
  EXPECT_NE(copied.status().message().find("past the end"), std::string::npos)
      << copied.status().message();
  EXPECT_NE(copied.status().message().find("cut.gguf"), std::string::npos)
      << copied.status().message();
}

}  // namespace
}  // namespace minfer
