// json_too_deep: the depth scan that runs before any JSON parser recurses — arrays and objects
// count, brackets inside strings (escaped quotes included) do not, and the offset is the first
// bracket past the limit.
#include "core/json_nesting.h"

#include <gtest/gtest.h>

#include <string>

namespace minfer {
namespace {

TEST(JsonNesting, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(json_too_deep(R"({"a": [1, {"b": []}]})", 4), std::nullopt);
  EXPECT_EQ(json_too_deep(R"({"a": [1, {"b": []}]})", 3), 16u);  // the '[' of level 4
  EXPECT_EQ(json_too_deep(R"({"a": [1, {"b": []}]})", 2), 10u);  // the '{' of level 3
  EXPECT_EQ(json_too_deep(R"(["[[[[", "\"[[[", "\\", [[]]])", 3), std::nullopt);
  EXPECT_EQ(json_too_deep(R"(["[[[[", "\"[[[", "\\", [[]]])", 2), 25u);
  EXPECT_EQ(json_too_deep("", 1), std::nullopt);
  EXPECT_EQ(json_too_deep("42", 0), std::nullopt);
  EXPECT_EQ(json_too_deep("[]", 0), 0u);
}

TEST(JsonNesting, SiblingsDoNotAddUpAndClosersBeforeOpenersDoNotBuyDepth) {
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "[[]],";
  EXPECT_EQ(json_too_deep("[" + wide + "1]", 3), std::nullopt);
  EXPECT_EQ(json_too_deep("]]]]][[[", 2), 7u);
}

TEST(JsonNesting, AMillionLevelsAreFoundAtTheLimit) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(json_too_deep(deep, 512), 512u);
}

}  // namespace
}  // namespace minfer
