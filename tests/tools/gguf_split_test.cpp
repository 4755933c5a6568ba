// Split GGUF models: `minfer gguf-split` writes parts that load together, a split model's logits
// equal the unsplit file's bit for bit, `minfer info` describes the whole model, and a missing,
// mismatched or wrongly named part is a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_split.h"
#include "gguf/gguf_writer.h"
#include "test_util.h"
#include "tools/gguf_split_model.h"

namespace minfer {
namespace {

using test::run_command;

TEST(GgufSplitName, ParsesAndFormats) {
  const auto s = parse_split_name("/d/Qwen3-8B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->prefix, "/d/Qwen3-8B-Q4_K_M");
  EXPECT_EQ(s->number, 2);
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(split_part_path(s->prefix, 3, 3), "/d/Qwen3-8B-Q4_K_M-00003-of-00003.gguf");
  EXPECT_FALSE(parse_split_name("model.gguf").has_value());
  EXPECT_FALSE(parse_split_name("m-00000-of-00003.gguf").has_value());
  EXPECT_FALSE(parse_split_name("m-00004-of-00003.gguf").has_value());
  EXPECT_FALSE(parse_split_name("m-0001a-of-00003.gguf").has_value());
}

// Splits a shared model into parts of `per_part` tensors under `dir`; returns the first part.
std::string split_model(const test::TempDir& dir, const std::string& model, int64_t per_part) {
  GgufSplitOptions o;
  o.input = test::test_data_path("models/" + model);
  o.output_prefix = dir.file("m");
  o.max_tensors = per_part;
  Result<GgufSplitReport> r = split_gguf(o);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? r->first_part : std::string();
}

std::vector<uint8_t> logits_of(const test::TempDir& dir, const std::string& model,
                               const std::string& out) {
  const auto r = run_command(test::minfer_binary() + " logits -t 2 -m '" + model +
                             "' --ids 1,400,30,7,99 -o '" + dir.file(out) + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return test::read_file_bytes(dir.file(out));
}

TEST(GgufSplit, SplitModelLogitsEqualTheUnsplitFile) {
  MINFER_REQUIRE_TEST_DATA();
  for (const std::string model : {"stories260K.gguf", "qwen3-tiny-q4_k_m.gguf"}) {
    test::TempDir dir;
    const std::string first = split_model(dir, model, 7);
    auto split = GgufFile::open(first);
    auto whole = GgufFile::open(test::test_data_path("models/" + model));
    ASSERT_TRUE(split.is_ok()) << split.status().message();
    ASSERT_TRUE(whole.is_ok());
    EXPECT_GT((*split)->n_parts(), 2u) << model;
    ASSERT_EQ((*split)->tensors().size(), (*whole)->tensors().size());
    for (const GgufTensorInfo& t : (*whole)->tensors()) {
      const GgufTensorInfo* s = (*split)->find_tensor(t.name);
      ASSERT_NE(s, nullptr) << t.name;
      const auto a = (*whole)->tensor_data(t);
      const auto b = (*split)->tensor_data(*s);
      ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << t.name;
    }
    const std::vector<uint8_t> expected =
        logits_of(dir, test::test_data_path("models/" + model), "whole.f32");
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(logits_of(dir, first, "split.f32"), expected) << model;
  }
}

TEST(GgufSplit, InfoDescribesTheWholeModel) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string first = split_model(dir, "stories260K.gguf", 10);
  const auto r = run_command(test::minfer_binary() + " info '" + first + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("runs                   yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parts, loaded together"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama"), std::string::npos) << r.out;
}

TEST(GgufSplit, MissingOrMismatchedPartsAreClearErrors) {
  MINFER_REQUIRE_TEST_DATA();
  test::TempDir dir;
  const std::string first = split_model(dir, "stories260K.gguf", 10);
  const std::string second = split_part_path(dir.file("m"), 2, parse_split_name(first)->count);
  const std::string third = split_part_path(dir.file("m"), 3, parse_split_name(first)->count);

  // Another part opened alone names the first.
  auto alone = GgufFile::open(second);
  ASSERT_FALSE(alone.is_ok());
  EXPECT_NE(alone.status().message().find("open the first part '" + first + "'"), std::string::npos)
      << alone.status().message();

  // A part renamed into another's place: its split.no disagrees.
  const std::vector<uint8_t> second_bytes = test::read_file_bytes(second);
  std::filesystem::copy_file(third, second, std::filesystem::copy_options::overwrite_existing);
  auto mismatched = GgufFile::open(first);
  ASSERT_FALSE(mismatched.is_ok());
  EXPECT_NE(mismatched.status().message().find("expected part 2 of"), std::string::npos)
      << mismatched.status().message();
  test::write_file_bytes(second, second_bytes);
  ASSERT_TRUE(GgufFile::open(first).is_ok());

  // A missing part is named.
  std::filesystem::remove(third);
  auto missing = GgufFile::open(first);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("part 3 of"), std::string::npos);
  EXPECT_NE(missing.status().message().find("is missing"), std::string::npos)
      << missing.status().message();

  // A first part whose name does not follow the pattern cannot find its siblings.
  const std::string renamed = dir.file("renamed.gguf");
  std::filesystem::copy_file(first, renamed);
  auto unnamed = GgufFile::open(renamed);
  ASSERT_FALSE(unnamed.is_ok());
  EXPECT_NE(unnamed.status().message().find("-00001-of-"), std::string::npos)
      << unnamed.status().message();
}

TEST(GgufSplit, TensorCountMustAgree) {
  test::TempDir dir;
  for (int part = 0; part < 2; ++part) {
    GgufWriter w;
    w.set_scalar<uint16_t>("split.no", static_cast<uint16_t>(part));
    w.set_scalar<uint16_t>("split.count", 2);
    w.set_scalar<int32_t>("split.tensors.count", 3);  // the parts hold 2
    ASSERT_TRUE(
        w.add_tensor(fmt::format("t{}", part), GgmlType::kF32, {4}, std::vector<uint8_t>(16, 0))
            .is_ok());
    ASSERT_TRUE(w.write(split_part_path(dir.file("x"), part + 1, 2)).is_ok());
  }
  auto f = GgufFile::open(split_part_path(dir.file("x"), 1, 2));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("split.tensors.count is 3, but the 2 parts hold 2"),
            std::string::npos)
      << f.status().message();
}

}  // namespace
}  // namespace minfer
