// The reader on hostile input: valid files built with the writer (or RawGguf), then corrupted.
// Each case must give an error Status naming the key/tensor and saying expected vs actual; none
// may crash (this suite also runs under ASan/UBSan in build-asan).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/raw_gguf.h"
#include "gguf_walk.h"

namespace minfer {
namespace {

using test::RawGguf;

constexpr uint32_t kF32 = 0;

Status parse_status(const std::vector<uint8_t>& bytes) {
  Result<std::unique_ptr<GgufFile>> file = GgufFile::parse(bytes, "bad.gguf");
  if (file.is_ok()) test::walk_gguf(**file);
  return file.status();
}

// Expects an error whose message starts with the component and file name and contains every
// fragment.
void expect_error(const std::vector<uint8_t>& bytes, ErrorCode code,
                  const std::vector<std::string>& fragments) {
  const Status status = parse_status(bytes);
  ASSERT_FALSE(status.is_ok()) << "parsed a corrupt file";
  EXPECT_EQ(status.code(), code) << status.message();
  const std::string& m = status.message();
  EXPECT_EQ(m.rfind("[gguf] 'bad.gguf': ", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  for (const std::string& f : fragments) EXPECT_NE(m.find(f), std::string::npos) << m;
}

// A small valid file exercising strings, arrays, nested arrays and three tensors.
std::vector<uint8_t> small_valid_file(uint32_t alignment = 32) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_scalar<uint32_t>("llama.block_count", 2);
  w.set_scalar<float>("llama.rope.freq_base", 10000.0f);
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"<s>", "a", "bc"}));
  w.set("tokenizer.ggml.scores", GgufValue::array<float>({0.0f, -1.0f, -2.0f}));
  w.set("nested", GgufValue::array_of_arrays({GgufValue::array<int16_t>({1, 2})}));
  w.set_scalar<bool>("flag", true);
  if (alignment != 32) w.set_alignment(alignment);
  std::vector<uint8_t> a(4 * 3), b(34), c(2 * 2);  // [3] f32, [32] q8_0, [2] f16
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7);
  (void)w.add_tensor("a", GgmlType::kF32, {3}, a);
  (void)w.add_tensor("b", GgmlType::kQ8_0, {32}, b);
  (void)w.add_tensor("c", GgmlType::kF16, {2}, c);
  return *w.serialize();
}

// A file with one key and the given tensor records, data section of `data_bytes` zeros.
std::vector<uint8_t> file_with_tensors(
    const std::vector<std::tuple<std::string, std::vector<uint64_t>, uint32_t, uint64_t>>& ts,
    size_t data_bytes) {
  RawGguf raw;
  raw.header(3, ts.size(), 1).kv_string("general.architecture", "x");
  for (const auto& [name, dims, type, offset] : ts) raw.tensor(name, dims, type, offset);
  raw.pad_to(32).zeros(data_bytes);
  return raw.bytes;
}

TEST(GgufCorrupt, SmallValidFileParses) {
  const std::vector<uint8_t> bytes = small_valid_file();
  EXPECT_TRUE(parse_status(bytes).is_ok()) << parse_status(bytes).message();
}

// Truncation at every byte: fails exactly when the cut removes part of the header or of some
// tensor's data (the writer pads after the last tensor; cutting only padding is still valid).
TEST(GgufCorrupt, TruncatedAtEveryByteOffset) {
  for (uint32_t alignment : {32u, 64u}) {
    const std::vector<uint8_t> bytes = small_valid_file(alignment);
    auto full = GgufFile::parse(bytes, "full");
    ASSERT_TRUE(full.is_ok());
    uint64_t needed = 0;
    for (const GgufTensorInfo& t : (*full)->tensors()) {
      needed = std::max(needed, (*full)->data_offset() + t.offset + t.n_bytes);
    }
    // Every truncation error says where the file ran out.
    auto says_where = [](const std::string& m) {
      return m.find("past the end") != std::string::npos ||
             m.find("file ends") != std::string::npos || m.find("cannot fit") != std::string::npos;
    };
    for (size_t n = 0; n < bytes.size(); ++n) {
      SCOPED_TRACE(n);
      const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
      const Status status = parse_status(cut);
      if (n < needed) {
        ASSERT_FALSE(status.is_ok());
        EXPECT_EQ(status.code(), ErrorCode::kCorrupt);
        EXPECT_EQ(status.message().rfind("[gguf] 'bad.gguf': ", 0), 0u) << status.message();
        EXPECT_TRUE(says_where(status.message())) << status.message();
      } else {
        EXPECT_TRUE(status.is_ok()) << status.message();
      }
    }
  }
}

TEST(GgufCorrupt, WrongMagic) {
  std::vector<uint8_t> bytes = small_valid_file();
  bytes[3] = 'X';
  expect_error(bytes, ErrorCode::kCorrupt, {"magic is 47 47 55 58", "expected 'GGUF'"});
  expect_error({'G', 'G'}, ErrorCode::kCorrupt, {"magic", "needs 4 bytes", "2 bytes"});
  expect_error({}, ErrorCode::kCorrupt, {"magic", "0 bytes"});
}

TEST(GgufCorrupt, UnsupportedVersions) {
  std::vector<uint8_t> bytes = small_valid_file();
  bytes[4] = 1;
  expect_error(bytes, ErrorCode::kUnsupported, {"version 1", "expected 2 or 3"});
  bytes[4] = 4;
  expect_error(bytes, ErrorCode::kUnsupported, {"version 4", "expected 2 or 3"});
  bytes[4] = 0;
  bytes[7] = 3;  // a big-endian writer's version 3
  expect_error(bytes, ErrorCode::kUnsupported, {"0x03000000", "big-endian"});
  bytes[7] = 0;
  expect_error(bytes, ErrorCode::kUnsupported, {"version 0", "expected 2 or 3"});
}

TEST(GgufCorrupt, HugeTensorAndKeyCounts) {
  std::vector<uint8_t> bytes = small_valid_file();
  std::vector<uint8_t> t = bytes;
  const uint64_t huge = 1ull << 62;
  std::memcpy(t.data() + 8, &huge, 8);
  expect_error(t, ErrorCode::kCorrupt, {"tensor count 4611686018427387904", "cannot fit"});
  std::vector<uint8_t> k = bytes;
  std::memcpy(k.data() + 16, &huge, 8);
  expect_error(k, ErrorCode::kCorrupt, {"key/value count 4611686018427387904", "cannot fit"});
  const uint64_t all_ones = ~0ull;
  std::memcpy(k.data() + 16, &all_ones, 8);
  expect_error(k, ErrorCode::kCorrupt, {"key/value count 18446744073709551615"});
}

TEST(GgufCorrupt, StringLengthPastTheEnd) {
  RawGguf raw;
  raw.header(3, 0, 1).key("general.name", 8).u64(1000).put("short", 5).zeros(20);
  expect_error(raw.bytes, ErrorCode::kCorrupt,
               {"key 'general.name'", "string length 1000", "past the end", "25 bytes left"});
  RawGguf key_len;
  key_len.header(3, 0, 1).u64(1ull << 40).put("k", 1).zeros(20);
  expect_error(key_len.bytes, ErrorCode::kCorrupt,
               {"metadata key #0", "string length 1099511627776", "exceeds the cap"});
  RawGguf in_array;
  in_array.header(3, 0, 1).key("tokens", 9).u32(8).u64(2).text("ok").u64(99).put("x", 1);
  expect_error(in_array.bytes, ErrorCode::kCorrupt,
               {"key 'tokens'[1]", "string length 99", "past the end"});
  RawGguf tensor_name;
  tensor_name.header(3, 1, 0).u64(77).zeros(40);
  expect_error(tensor_name.bytes, ErrorCode::kCorrupt, {"tensor #0 name", "string length 77"});
}

TEST(GgufCorrupt, ArrayLengthsPastTheEndOrOverTheCap) {
  RawGguf raw;
  raw.header(3, 0, 1).key("scores", 9).u32(6).u64(1000).f32(1.0f);
  expect_error(raw.bytes, ErrorCode::kCorrupt,
               {"key 'scores'", "array of 1000 float32 values cannot fit", "4 bytes left"});
  RawGguf capped;
  capped.header(3, 0, 1).key("big", 9).u32(0).u64(1ull << 40);
  expect_error(capped.bytes, ErrorCode::kCorrupt,
               {"key 'big'", "array length 1099511627776", "exceeds the cap"});
  RawGguf deep;
  deep.header(3, 0, 1).key("deep", 9).u32(9).u64(1).u32(9).u64(1).u32(0).u64(0);
  expect_error(deep.bytes, ErrorCode::kCorrupt, {"key 'deep'[0][0]", "nested deeper than 2"});
}

TEST(GgufCorrupt, NDimsNine) {
  expect_error(file_with_tensors({{"w", {1, 1, 1, 1, 1, 1, 1, 1, 1}, kF32, 0}}, 64),
               ErrorCode::kCorrupt, {"tensor 'w'", "n_dims is 9", "expected 1..4"});
  expect_error(file_with_tensors({{"w0", {}, kF32, 0}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w0'", "n_dims is 0", "expected 1..4"});
}

TEST(GgufCorrupt, TensorOffsetPastTheEnd) {
  expect_error(
      file_with_tensors({{"w", {8}, kF32, 64}}, 64), ErrorCode::kCorrupt,
      {"tensor 'w'", "offset 64 + 32 bytes", "past the end of the data section (64 bytes)"});
  expect_error(file_with_tensors({{"w", {8}, kF32, 1ull << 63}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "offset 9223372036854775808", "past the end"});
  // Data that starts inside the section but runs past its end.
  expect_error(file_with_tensors({{"w", {16}, kF32, 32}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "offset 32 + 64 bytes", "(64 bytes)"});
}

TEST(GgufCorrupt, OverlappingTensorData) {
  expect_error(file_with_tensors({{"a", {16}, kF32, 0}, {"b", {8}, kF32, 32}}, 128),
               ErrorCode::kCorrupt,
               {"tensor 'a' (offset 0, 64 bytes) overlaps tensor 'b'",
                "expected it to start at offset 64 or later, got 32"});
  // Same offset, listed in reverse order.
  expect_error(file_with_tensors({{"x", {8}, kF32, 64}, {"y", {8}, kF32, 64}}, 128),
               ErrorCode::kCorrupt, {"overlaps", "got 64"});
}

TEST(GgufCorrupt, MisalignedTensorOffset) {
  expect_error(file_with_tensors({{"w", {8}, kF32, 4}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "data offset 4", "not a multiple of the alignment 32"});
  // With general.alignment = 64, an offset of 32 is misaligned.
  RawGguf raw;
  raw.header(3, 1, 1).kv_u32("general.alignment", 64).tensor("w", {8}, kF32, 32);
  raw.pad_to(64).zeros(128);
  expect_error(raw.bytes, ErrorCode::kCorrupt, {"tensor 'w'", "offset 32", "alignment 64"});
}

TEST(GgufCorrupt, BadAlignmentKey) {
  RawGguf not_pow2;
  not_pow2.header(3, 0, 1).kv_u32("general.alignment", 48);
  expect_error(not_pow2.bytes, ErrorCode::kCorrupt,
               {"key 'general.alignment' is 48", "expected a power of two"});
  RawGguf zero;
  zero.header(3, 0, 1).kv_u32("general.alignment", 0);
  expect_error(zero.bytes, ErrorCode::kCorrupt, {"key 'general.alignment' is 0"});
  RawGguf wrong_type;
  wrong_type.header(3, 0, 1).kv_string("general.alignment", "32");
  expect_error(wrong_type.bytes, ErrorCode::kCorrupt,
               {"key 'general.alignment' has type string", "expected uint32"});
}

TEST(GgufCorrupt, UnknownTensorTypeId) {
  expect_error(file_with_tensors({{"w", {8}, 99, 0}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "unknown tensor type id 99"});
  // Ids 4 and 5 (the removed Q4_2/Q4_3) are gaps in ggml's enum.
  expect_error(file_with_tensors({{"w", {32}, 4, 0}}, 64), ErrorCode::kCorrupt,
               {"unknown tensor type id 4"});
}

TEST(GgufCorrupt, UnknownValueTypeId) {
  RawGguf raw;
  raw.header(3, 0, 1).key("k", 13).u32(0);
  expect_error(raw.bytes, ErrorCode::kCorrupt,
               {"key 'k'", "unknown value type id 13", "expected 0..12"});
  RawGguf element;
  element.header(3, 0, 1).key("arr", 9).u32(0xFFFFFFFF).u64(0);
  expect_error(element.bytes, ErrorCode::kCorrupt,
               {"key 'arr' (array element type)", "unknown value type id 4294967295"});
}

TEST(GgufCorrupt, BoolOtherThanZeroOrOne) {
  RawGguf raw;
  raw.header(3, 0, 1).key("b", 7).u8(2);
  expect_error(raw.bytes, ErrorCode::kCorrupt, {"key 'b'", "bool value 2", "expected 0 or 1"});
  RawGguf arr;
  arr.header(3, 0, 1).key("bs", 9).u32(7).u64(2).u8(1).u8(7);
  expect_error(arr.bytes, ErrorCode::kCorrupt, {"key 'bs'[1]", "bool value 7"});
}

TEST(GgufCorrupt, DuplicateKey) {
  RawGguf raw;
  raw.header(3, 0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_string("a", "again");
  expect_error(raw.bytes, ErrorCode::kCorrupt,
               {"duplicate metadata key 'a'", "key #2 repeats key #0"});
}

TEST(GgufCorrupt, DuplicateTensorName) {
  expect_error(file_with_tensors({{"w", {8}, kF32, 0}, {"w", {8}, kF32, 32}}, 64),
               ErrorCode::kCorrupt, {"duplicate tensor 'w'", "tensor #1 repeats tensor #0"});
}

TEST(GgufCorrupt, DimensionProductOverflows) {
  expect_error(file_with_tensors({{"w", {1ull << 32, 1ull << 32}, kF32, 0}}, 64),
               ErrorCode::kCorrupt,
               {"tensor 'w'", "element count overflows at dimension 1", "4294967296 x 4294967296",
                "exceeds 9223372036854775807"});
  expect_error(file_with_tensors({{"w", {~0ull}, kF32, 0}}, 64), ErrorCode::kCorrupt,
               {"element count overflows at dimension 0"});
  // Fits in int64 elements, but the bytes do not fit in the file.
  expect_error(file_with_tensors({{"w", {1ull << 61}, kF32, 0}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "past the end"});
}

TEST(GgufCorrupt, ZeroDimensionAndPartialBlocks) {
  expect_error(file_with_tensors({{"w", {8, 0}, kF32, 0}}, 64), ErrorCode::kCorrupt,
               {"tensor 'w'", "dimension 1 is 0", "expected at least 1"});
  expect_error(file_with_tensors({{"q", {33}, 8, 0}}, 128), ErrorCode::kCorrupt,
               {"tensor 'q'", "row length 33", "q8_0 block size 32"});
}

TEST(GgufCorrupt, DataSectionPastTheEnd) {
  RawGguf raw;  // the tensor table ends mid-way: padding would start beyond the file
  raw.header(3, 1, 0).tensor("w", {1}, kF32, 0);
  expect_error(raw.bytes, ErrorCode::kCorrupt, {"data section would start at offset 64"});
}

TEST(GgufCorrupt, NamesFromTheFileAreEscapedAndCut) {
  RawGguf raw;
  const std::string evil = "a\nb\x1b[31m" + std::string(500, 'z');
  raw.header(3, 0, 2).kv_u32(evil, 1).kv_u32(evil, 2);
  const Status status = parse_status(raw.bytes);
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.message().find('\n'), std::string::npos);
  EXPECT_EQ(status.message().find('\x1b'), std::string::npos);
  EXPECT_NE(status.message().find("a\\x0ab\\x1b[31m"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("(508 bytes)"), std::string::npos) << status.message();
  EXPECT_LT(status.message().size(), 300u);
}

TEST(GgufCorrupt, RandomBytesNeverParseOrCrash) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 500; ++i) {
    std::vector<uint8_t> bytes(rng() % 2048);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    if (i % 2 == 1 && bytes.size() >= 8) {
      std::memcpy(bytes.data(), "GGUF\x03\0\0\0", 8);  // get past the magic and version
    }
    const Status status = parse_status(bytes);
    ASSERT_FALSE(status.is_ok()) << "iteration " << i;
    EXPECT_EQ(status.message().rfind("[gguf] 'bad.gguf': ", 0), 0u) << status.message();
  }
}

// Seeded noise written into the header (metadata and tensor table) of a valid file: either it
// still parses (the noise hit a value byte) and every value and tensor span can be walked, or it
// is a clean error.
TEST(GgufCorrupt, RandomNoiseInTheHeaderOfAValidFile) {
  const std::vector<uint8_t> valid = small_valid_file();
  const uint64_t header_size = (*GgufFile::parse(valid, "v"))->data_offset();
  std::mt19937_64 rng(42);
  int n_failed = 0;
  const int kIterations = 3000;
  for (int i = 0; i < kIterations; ++i) {
    std::vector<uint8_t> bytes = valid;
    const int n_changes = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < n_changes; ++c) {
      const size_t at = rng() % header_size;
      bytes[at] = (rng() % 4 == 0) ? 0xFF : static_cast<uint8_t>(rng());
    }
    const Status status = parse_status(bytes);
    if (!status.is_ok()) {
      ++n_failed;
      EXPECT_EQ(status.message().rfind("[gguf] 'bad.gguf': ", 0), 0u) << status.message();
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
    }
  }
  // Most random changes land in lengths, counts, ids and offsets: nearly all must be caught.
  EXPECT_GT(n_failed, kIterations / 2);
}

}  // namespace
}  // namespace minfer
