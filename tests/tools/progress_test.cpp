// Progress output: quarter lines when not a terminal, a redrawn bar when forced.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/progress.h"

namespace minfer {
namespace {

std::string captured(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(Progress, PlainWhenNotATerminal) {
  FILE* f = std::tmpfile();  // a file is not a TTY: kAuto picks plain lines
  ASSERT_NE(f, nullptr);
  {
    Progress p("work", 10, ProgressStyle::kAuto, f);
    EXPECT_FALSE(p.is_bar());
    for (int i = 1; i <= 10; ++i) p.update(i, "detail");
  }
  const std::string out = captured(f);
  std::fclose(f);
  EXPECT_NE(out.find("work: 25% ("), std::string::npos) << out;
  EXPECT_NE(out.find("work: 50% ("), std::string::npos) << out;
  EXPECT_NE(out.find("work: 75% ("), std::string::npos) << out;
  EXPECT_NE(out.find("work: 100% (10/10"), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_EQ(out.find("detail"), std::string::npos);
  // Exactly one line per quarter.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4);
}

TEST(Progress, JumpsPrintEveryQuarterPassedOnce) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p("x", 3, ProgressStyle::kPlain, f);
    p.update(3);  // all four quarters at once
    p.update(3);
    p.finish();
  }
  const std::string out = captured(f);
  std::fclose(f);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;
}

TEST(Progress, BarRedrawsInPlace) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p("load", 4, ProgressStyle::kBar, f);
    p.update(4, "blk.0");
  }
  const std::string out = captured(f);
  std::fclose(f);
  EXPECT_EQ(out.front(), '\r');
  EXPECT_NE(out.find("load [##############################] 100%"), std::string::npos) << out;
  EXPECT_NE(out.find("blk.0"), std::string::npos);
  EXPECT_EQ(out.back(), '\n');
}

TEST(Progress, QuietPrintsNothing) {
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p("q", 2, ProgressStyle::kQuiet, f);
    p.update(2);
  }
  EXPECT_TRUE(captured(f).empty());
  std::fclose(f);
}

}  // namespace
}  // namespace minfer
