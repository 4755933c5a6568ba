// MappedFile: the file's bytes mapped, or read into 2 MiB-aligned private memory (--no-mmap), and
// locked on request (--mlock).
#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer {
namespace {

constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

std::vector<uint8_t> random_bytes(size_t n) {
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(MappedFile, ReadCopyHoldsTheFilesBytesOnAHugePageBoundary) {
  test::TempDir dir;
  // More than one huge page and not a whole number of them: the tail of the last one is slack.
  const std::vector<uint8_t> bytes = random_bytes((size_t{3} << 20) + 12345);
  test::write_file_bytes(dir.file("w.bin"), bytes);
  auto mapped = MappedFile::open(dir.file("w.bin"));
  MapOptions read;
  read.use_mmap = false;
  auto copied = MappedFile::open(dir.file("w.bin"), read);
  ASSERT_TRUE(mapped.is_ok()) << mapped.status().message();
  ASSERT_TRUE(copied.is_ok()) << copied.status().message();
  ASSERT_EQ((*copied)->size(), bytes.size());
  ASSERT_EQ((*mapped)->size(), bytes.size());
  EXPECT_EQ(std::memcmp((*copied)->bytes().data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(std::memcmp((*mapped)->bytes().data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*copied)->bytes().data()) % kHugePageBytes, 0u);
  EXPECT_FALSE((*copied)->locked());  // not asked for
}

TEST(MappedFile, EmptyAndMissingFilesInBothModes) {
  test::TempDir dir;
  test::write_file_bytes(dir.file("empty.bin"), {});
  for (bool use_mmap : {true, false}) {
    MapOptions o;
    o.use_mmap = use_mmap;
    auto empty = MappedFile::open(dir.file("empty.bin"), o);
    ASSERT_TRUE(empty.is_ok()) << empty.status().message();
    EXPECT_EQ((*empty)->size(), 0u);
    auto missing = MappedFile::open(dir.file("missing.bin"), o);
    ASSERT_FALSE(missing.is_ok());
    EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(missing.status().message().find("missing.bin"), std::string::npos);
    auto folder = MappedFile::open(dir.path(), o);
    ASSERT_FALSE(folder.is_ok());
    EXPECT_NE(folder.status().message().find("is not a regular file"), std::string::npos);
  }
}

// A few KiB fit under any RLIMIT_MEMLOCK (the default is 8 MiB, at least 64 KiB on old systems):
// the lock succeeds in both modes and the bytes are the file's.
TEST(MappedFile, MlockLocksASmallFileInBothModes) {
  test::TempDir dir;
  const std::vector<uint8_t> bytes = random_bytes(5000);
  test::write_file_bytes(dir.file("s.bin"), bytes);
  for (bool use_mmap : {true, false}) {
    MapOptions o;
    o.use_mmap = use_mmap;
    o.use_mlock = true;
    auto f = MappedFile::open(dir.file("s.bin"), o);
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    EXPECT_TRUE((*f)->locked()) << "use_mmap " << use_mmap;
    EXPECT_EQ(std::memcmp((*f)->bytes().data(), bytes.data(), bytes.size()), 0);
  }
}

}  // namespace
}  // namespace minfer
