#include "core/status.h"

#include <gtest/gtest.h>

namespace minfer {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::kInvalidArgument, "[test] {} is not positive", v);
  return v;
}

Result<int> doubled(int v) {
  MINFER_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

TEST(Status, ResultCarriesValueOrError) {
  Result<int> good = doubled(21);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(good.value(), 42);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "[test] -1 is not positive");
}

TEST(Status, ResultFromOkStatusIsAnInternalError) {
  Result<int> r{Status::ok()};
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

// The names come from a table indexed by the code: each code keeps its own name.
TEST(Status, EveryErrorCodeHasItsName) {
  EXPECT_STREQ(error_code_name(ErrorCode::kOk), "ok");
  EXPECT_STREQ(error_code_name(ErrorCode::kInvalidArgument), "invalid_argument");
  EXPECT_STREQ(error_code_name(ErrorCode::kNotFound), "not_found");
  EXPECT_STREQ(error_code_name(ErrorCode::kOutOfRange), "out_of_range");
  EXPECT_STREQ(error_code_name(ErrorCode::kResourceExhausted), "resource_exhausted");
  EXPECT_STREQ(error_code_name(ErrorCode::kUnsupported), "unsupported");
  EXPECT_STREQ(error_code_name(ErrorCode::kCorrupt), "corrupt");
  EXPECT_STREQ(error_code_name(ErrorCode::kIo), "io");
  EXPECT_STREQ(error_code_name(ErrorCode::kInternal), "internal");
  EXPECT_STREQ(error_code_name(static_cast<ErrorCode>(9)), "unknown");
  EXPECT_STREQ(error_code_name(static_cast<ErrorCode>(-1)), "unknown");
}

}  // namespace
}  // namespace minfer
