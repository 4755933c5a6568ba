// The JSON shape scan that runs before any parser recurses or builds: arrays and objects count
// toward the depth, the ':' of an object toward its keys, brackets and colons inside strings
// (escaped quotes included) toward nothing; the offset is where the first limit is passed.
#include "core/json_nesting.h"

#include <gtest/gtest.h>

#include <string>

namespace minfer {
namespace {

std::optional<size_t> too_deep(std::string_view text, int max_depth) {
  const auto excess = json_shape_excess(text, {.max_depth = max_depth, .max_keys = 1000});
  EXPECT_TRUE(!excess || excess->too_deep);
  return excess ? std::optional<size_t>(excess->offset) : std::nullopt;
}

TEST(JsonShape, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(too_deep(R"({"a": [1, {"b": []}]})", 4), std::nullopt);
  EXPECT_EQ(too_deep(R"({"a": [1, {"b": []}]})", 3), 16u);  // the '[' of level 4
  EXPECT_EQ(too_deep(R"({"a": [1, {"b": []}]})", 2), 10u);  // the '{' of level 3
  EXPECT_EQ(too_deep(R"(["[[[[", "\"[[[", "\\", [[]]])", 3), std::nullopt);
  EXPECT_EQ(too_deep(R"(["[[[[", "\"[[[", "\\", [[]]])", 2), 25u);
  EXPECT_EQ(too_deep("", 1), std::nullopt);
  EXPECT_EQ(too_deep("42", 0), std::nullopt);
  EXPECT_EQ(too_deep("[]", 0), 0u);
}

TEST(JsonShape, SiblingsDoNotAddUpAndClosersBeforeOpenersDoNotBuyDepth) {
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "[[]],";
  EXPECT_EQ(too_deep("[" + wide + "1]", 3), std::nullopt);
  EXPECT_EQ(too_deep("]]]]][[[", 2), 7u);
}

TEST(JsonShape, AMillionLevelsAreFoundAtTheLimit) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(json_shape_error(deep),
            "nests arrays and objects deeper than the limit of 512 levels (at byte 512)");
}

// Keys count per object: a nested object's keys are its own, an array's elements none, and a
// colon in a string (a key or a value) is no key.
TEST(JsonShape, KeysCountPerObject) {
  const JsonShapeLimits two{.max_depth = 16, .max_keys = 2};
  EXPECT_EQ(json_shape_excess(R"({"a": 1, "b": {"c": 1, "d": 2}})", two), std::nullopt);
  EXPECT_EQ(json_shape_excess(R"({"a:b": "c:d", "e": [1, 2, 3, {"f": 1}]})", two), std::nullopt);
  const auto third = json_shape_excess(R"({"a": 1, "b": 2, "c": 3})", two);
  ASSERT_TRUE(third.has_value());
  EXPECT_FALSE(third->too_deep);
  EXPECT_EQ(third->offset, 20u);  // the third ':'
  std::string many = "{";
  for (int i = 0; i < 90000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  EXPECT_EQ(json_shape_error(many + "}"),
            "holds an object of more than 4096 keys, the limit (at byte 35761)");
}

}  // namespace
}  // namespace minfer
