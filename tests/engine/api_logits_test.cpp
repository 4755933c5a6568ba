// LanguageModel::logits (include/minfer/minfer.h): the teacher-forced logits that `minfer logits`
// writes, returned in memory — equal bit for bit, at any batch size and while the model's own
// sequence holds other tokens; and its errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "minfer/minfer.h"
#include "minfer/tools.h"
#include "test_util.h"

namespace minfer {
namespace {

std::vector<float> read_floats(const std::string& path) {
  const std::vector<uint8_t> bytes = test::read_file_bytes(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// The same bits (== would let -0.0 equal 0.0 and fail on NaN).
void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(ApiLogits, EqualWriteLogitsBitForBitAtAnyBatch) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string path = test::test_data_path("models/qwen2-tiny-q4_k_m.gguf");
  auto model = LanguageModel::load(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<int32_t> ids = {1, 17, 300, 42, 999, 5, 0, 123};
  test::TempDir dir;
  LogitsOptions o;
  o.model = path;
  o.ids = ids;
  o.output = dir.file("logits.f32");
  ASSERT_TRUE(write_logits(o).is_ok());
  const std::vector<float> file = read_floats(o.output);
  ASSERT_EQ(file.size(), ids.size() * static_cast<size_t>((*model)->n_vocab()));

  // The model's own sequence holding a prompt changes nothing: the logits have a sequence of
  // their own.
  GenerateParams p;
  p.temperature = 0.0f;
  p.max_tokens = 3;
  ASSERT_TRUE((*model)->generate(std::vector<int32_t>{4, 5, 6}, p).is_ok());
  for (int64_t batch : {0, 1, 3}) {
    auto rows = (*model)->logits(ids, batch);
    ASSERT_TRUE(rows.is_ok()) << rows.status().message();
    expect_same_bits(*rows, file);
  }
}

TEST(ApiLogits, BadInputIsAnErrorNamingIt) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = LanguageModel::load(test::test_data_path("models/stories260K.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto none = (*model)->logits({});
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().message(), "[logits] no ids to feed");
  auto outside = (*model)->logits(std::vector<int32_t>{1, 512});
  ASSERT_FALSE(outside.is_ok());
  EXPECT_EQ(outside.status().message(),
            "[logits] id 512 at index 1 is outside the vocabulary [0, 512)");
  auto cells = (*model)->logits(std::vector<int32_t>{1}, 0, "q3_k");
  ASSERT_FALSE(cells.is_ok());
  EXPECT_NE(cells.status().message().find("q3_k"), std::string::npos) << cells.status().message();
  const std::vector<int32_t> too_long(static_cast<size_t>((*model)->n_ctx()) + 1, 1);
  auto longer = (*model)->logits(too_long);
  ASSERT_FALSE(longer.is_ok());
  EXPECT_NE(longer.status().message().find("do not fit the model's context"), std::string::npos)
      << longer.status().message();
}

}  // namespace
}  // namespace minfer
