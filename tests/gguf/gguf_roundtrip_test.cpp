// Writer -> reader round trips: every metadata value type, arrays of each, nested and empty
// arrays, non-default alignment, tensors of several ggml types; and typed-access errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/raw_gguf.h"
#include "test_util.h"

namespace minfer {
namespace {

std::unique_ptr<GgufFile> parse_ok(const std::vector<uint8_t>& bytes) {
  Result<std::unique_ptr<GgufFile>> file = GgufFile::parse(bytes, "mem");
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  return file.is_ok() ? std::move(file).value() : nullptr;
}

template <typename T>
std::vector<uint8_t> pattern_bytes(size_t n, T seed) {
  std::vector<uint8_t> out(n);  // [n] arbitrary but deterministic bytes
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((i * 131 + seed) & 0xFF);
  return out;
}

// One value of every type, in the writer's key order.
std::vector<std::pair<std::string, GgufValue>> every_type_metadata() {
  const float nan_f = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::pair<std::string, GgufValue>> kv = {
      {"t.uint8", GgufValue::scalar<uint8_t>(255)},
      {"t.int8", GgufValue::scalar<int8_t>(-128)},
      {"t.uint16", GgufValue::scalar<uint16_t>(65535)},
      {"t.int16", GgufValue::scalar<int16_t>(-32768)},
      {"t.uint32", GgufValue::scalar<uint32_t>(4294967295u)},
      {"t.int32", GgufValue::scalar<int32_t>(std::numeric_limits<int32_t>::min())},
      {"t.float32", GgufValue::scalar<float>(-1.5e-7f)},
      {"t.float32_nan", GgufValue::scalar<float>(nan_f)},
      {"t.bool_true", GgufValue::scalar<bool>(true)},
      {"t.bool_false", GgufValue::scalar<bool>(false)},
      {"t.string", GgufValue::string("héllo\n\"world\"")},
      {"t.string_empty", GgufValue::string("")},
      {"t.uint64", GgufValue::scalar<uint64_t>(std::numeric_limits<uint64_t>::max())},
      {"t.int64", GgufValue::scalar<int64_t>(std::numeric_limits<int64_t>::min())},
      {"t.float64", GgufValue::scalar<double>(-0.0)},
      {"t.float64_inf", GgufValue::scalar<double>(std::numeric_limits<double>::infinity())},
      // Arrays of each scalar type.
      {"a.uint8", GgufValue::array<uint8_t>({0, 1, 255})},
      {"a.int8", GgufValue::array<int8_t>({-1, 0, 127})},
      {"a.uint16", GgufValue::array<uint16_t>({1, 65535})},
      {"a.int16", GgufValue::array<int16_t>({-2, 3})},
      {"a.uint32", GgufValue::array<uint32_t>({7, 8, 9})},
      {"a.int32", GgufValue::array<int32_t>({-7, 8, -9, 10})},
      {"a.float32", GgufValue::array<float>({0.5f, -2.25f})},
      {"a.bool", GgufValue::scalar_array_from_bytes(GgufType::kBool, {1, 0, 1})},
      {"a.uint64", GgufValue::array<uint64_t>({1ull << 63})},
      {"a.int64", GgufValue::array<int64_t>({-(1ll << 62), 5})},
      {"a.float64", GgufValue::array<double>({1e300, -1e-300})},
      {"a.string", GgufValue::string_array({"a", "", "ünïcode", std::string(300, 'x')})},
      // Empty arrays.
      {"e.int32", GgufValue::array<int32_t>({})},
      {"e.string", GgufValue::string_array({})},
      {"e.nested", GgufValue::array_of_arrays({})},
      // Nested arrays: of scalars (ragged, one empty) and of strings.
      {"n.int32",
       GgufValue::array_of_arrays({GgufValue::array<int32_t>({1, 2}), GgufValue::array<int32_t>({}),
                                   GgufValue::array<int32_t>({3})})},
      {"n.string", GgufValue::array_of_arrays(
                       {GgufValue::string_array({"x", "yz"}), GgufValue::string_array({""})})},
  };
  return kv;
}

TEST(GgufRoundTrip, EveryMetadataTypeReadsBackIdentically) {
  GgufWriter writer;
  const auto kv = every_type_metadata();
  for (const auto& [key, value] : kv) writer.set(key, value);
  Result<std::vector<uint8_t>> image = writer.serialize();
  ASSERT_TRUE(image.is_ok()) << image.status().message();
  auto file = parse_ok(*image);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), kGgufDefaultAlignment);
  EXPECT_TRUE(file->tensors().empty());
  ASSERT_EQ(file->metadata().size(), kv.size());
  for (size_t i = 0; i < kv.size(); ++i) {
    SCOPED_TRACE(kv[i].first);
    EXPECT_EQ(file->metadata()[i].key, kv[i].first);  // file order = order of first set
    EXPECT_EQ(file->metadata()[i].value.type(), kv[i].second.type());
    EXPECT_TRUE(file->metadata()[i].value == kv[i].second);
  }
  // Every one of the 13 value type ids appears.
  std::vector<bool> seen(13, false);
  for (const auto& entry : file->metadata()) seen[static_cast<size_t>(entry.value.type())] = true;
  for (size_t id = 0; id < seen.size(); ++id) EXPECT_TRUE(seen[id]) << "type id " << id;
}

TEST(GgufRoundTrip, TypedAccessorsReturnTheStoredValues) {
  GgufWriter writer;
  for (const auto& [key, value] : every_type_metadata()) writer.set(key, value);
  auto file = parse_ok(*writer.serialize());
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(*file->get<uint8_t>("t.uint8"), 255);
  EXPECT_EQ(*file->get<int8_t>("t.int8"), -128);
  EXPECT_EQ(*file->get<uint16_t>("t.uint16"), 65535);
  EXPECT_EQ(*file->get<int16_t>("t.int16"), -32768);
  EXPECT_EQ(*file->get<uint32_t>("t.uint32"), 4294967295u);
  EXPECT_EQ(*file->get<int32_t>("t.int32"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(*file->get<float>("t.float32"), -1.5e-7f);
  EXPECT_TRUE(std::isnan(*file->get<float>("t.float32_nan")));
  EXPECT_TRUE(*file->get<bool>("t.bool_true"));
  EXPECT_FALSE(*file->get<bool>("t.bool_false"));
  EXPECT_EQ(*file->get_string("t.string"), "héllo\n\"world\"");
  EXPECT_EQ(*file->get_string("t.string_empty"), "");
  EXPECT_EQ(*file->get<uint64_t>("t.uint64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*file->get<int64_t>("t.int64"), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(std::signbit(*file->get<double>("t.float64")));
  EXPECT_EQ(*file->get<double>("t.float64_inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*file->get_integer("t.int8"), -128);
  EXPECT_EQ(*file->get_integer("t.uint32"), 4294967295ll);
  EXPECT_EQ(*file->get_floating("t.float32"), static_cast<double>(-1.5e-7f));

  EXPECT_EQ(*file->get_array<uint8_t>("a.uint8"), (std::vector<uint8_t>{0, 1, 255}));
  EXPECT_EQ(*file->get_array<int8_t>("a.int8"), (std::vector<int8_t>{-1, 0, 127}));
  EXPECT_EQ(*file->get_array<uint16_t>("a.uint16"), (std::vector<uint16_t>{1, 65535}));
  EXPECT_EQ(*file->get_array<int16_t>("a.int16"), (std::vector<int16_t>{-2, 3}));
  EXPECT_EQ(*file->get_array<uint32_t>("a.uint32"), (std::vector<uint32_t>{7, 8, 9}));
  EXPECT_EQ(*file->get_array<int32_t>("a.int32"), (std::vector<int32_t>{-7, 8, -9, 10}));
  EXPECT_EQ(*file->get_array<float>("a.float32"), (std::vector<float>{0.5f, -2.25f}));
  EXPECT_EQ(*file->get_array<uint64_t>("a.uint64"), (std::vector<uint64_t>{1ull << 63}));
  EXPECT_EQ(*file->get_array<int64_t>("a.int64"), (std::vector<int64_t>{-(1ll << 62), 5}));
  EXPECT_EQ(*file->get_array<double>("a.float64"), (std::vector<double>{1e300, -1e-300}));
  const GgufValue* bools = file->find("a.bool");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->element_type(), GgufType::kBool);
  EXPECT_EQ(bools->array_bytes(), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(**file->get_string_array("a.string"),
            (std::vector<std::string>{"a", "", "ünïcode", std::string(300, 'x')}));

  EXPECT_TRUE(file->get_array<int32_t>("e.int32")->empty());
  EXPECT_TRUE((*file->get_string_array("e.string"))->empty());
  const GgufValue* empty_nested = file->find("e.nested");
  ASSERT_NE(empty_nested, nullptr);
  EXPECT_EQ(empty_nested->element_type(), GgufType::kArray);
  EXPECT_EQ(empty_nested->array_size(), 0u);

  const GgufValue* nested = file->find("n.int32");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->nested().size(), 3u);
  EXPECT_EQ(*nested->nested()[0].array_as<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(nested->nested()[1].array_as<int32_t>()->empty());
  EXPECT_EQ(*nested->nested()[2].array_as<int32_t>(), (std::vector<int32_t>{3}));
  const GgufValue* nested_strings = file->find("n.string");
  ASSERT_NE(nested_strings, nullptr);
  ASSERT_EQ(nested_strings->nested().size(), 2u);
  EXPECT_EQ(*nested_strings->nested()[0].as_string_array(), (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(*nested_strings->nested()[1].as_string_array(), (std::vector<std::string>{""}));
}

TEST(GgufRoundTrip, WriterBytesMatchTheSpecLayout) {
  // Built by hand from the spec: the writer must produce exactly these bytes.
  GgufWriter writer;
  writer.set_string("general.architecture", "llama");
  writer.set_scalar<uint32_t>("llama.block_count", 5);
  writer.set("a", GgufValue::array<int16_t>({-1, 2}));
  std::vector<uint8_t> data(6 * 4);  // [2, 3] f32
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(writer.add_tensor("w", GgmlType::kF32, {2, 3}, data).is_ok());
  ASSERT_TRUE(writer.add_tensor("b", GgmlType::kF32, {1}, {1, 2, 3, 4}).is_ok());

  test::RawGguf raw;
  raw.header(3, 2, 3).kv_string("general.architecture", "llama").kv_u32("llama.block_count", 5);
  raw.key("a", 9).u32(3).u64(2).u16(0xFFFF).u16(2);
  raw.tensor("w", {2, 3}, 0, 0).tensor("b", {1}, 0, 32);
  raw.pad_to(32).put(data.data(), data.size()).pad_to(32).put("\x01\x02\x03\x04", 4).pad_to(32);
  EXPECT_EQ(*writer.serialize(), raw.bytes);
}

TEST(GgufRoundTrip, VersionTwoFilesReadTheSame) {
  GgufWriter writer;
  writer.set_scalar<uint32_t>("k", 9);
  std::vector<uint8_t> image = *writer.serialize();
  image[4] = 2;  // v2 and v3 share the layout (64-bit counts and lengths)
  auto file = parse_ok(image);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(*file->get<uint32_t>("k"), 9u);
}

struct TensorCase {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> shape;
};

class GgufTensorRoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufTensorRoundTrip, TensorsKeepTypeShapeAlignmentAndBytes) {
  const uint32_t alignment = GetParam();
  const std::vector<TensorCase> cases = {
      {"f32.w", GgmlType::kF32, {7, 3}},         {"f16.w", GgmlType::kF16, {5}},
      {"bf16.w", GgmlType::kBF16, {3, 2, 2, 1}}, {"q4_0.w", GgmlType::kQ4_0, {64, 2}},
      {"q8_0.w", GgmlType::kQ8_0, {32}},         {"q4_K.w", GgmlType::kQ4_K, {256, 2}},
      {"q6_K.w", GgmlType::kQ6_K, {512}},        {"q2_K.w", GgmlType::kQ2_K, {256, 1, 3}},
      {"q5_1.w", GgmlType::kQ5_1, {32, 5}},
  };
  GgufWriter writer;
  writer.set_string("general.architecture", "test");
  if (alignment != kGgufDefaultAlignment) writer.set_alignment(alignment);
  std::vector<std::vector<uint8_t>> datas;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorCase& c = cases[i];
    uint64_t rows = 1;
    for (size_t d = 1; d < c.shape.size(); ++d) rows *= c.shape[d];
    const uint64_t n_bytes = *ggml_row_bytes(c.type, c.shape[0]) * rows;
    datas.push_back(pattern_bytes(n_bytes, static_cast<uint8_t>(i * 17 + 1)));
    ASSERT_TRUE(writer.add_tensor(c.name, c.type, c.shape, datas.back()).is_ok());
  }
  const std::vector<uint8_t> image = *writer.serialize();
  auto file = parse_ok(image);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->alignment(), alignment);
  EXPECT_EQ(file->data_offset() % alignment, 0u);
  ASSERT_EQ(file->tensors().size(), cases.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const GgufTensorInfo& t = file->tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.type, cases[i].type);
    EXPECT_EQ(t.shape, cases[i].shape);
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(t.offset, expected_offset);  // packed: each tensor starts at the next boundary
    EXPECT_EQ(t.n_bytes, datas[i].size());
    const std::span<const uint8_t> bytes = file->tensor_data(t);
    EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), datas[i]);
    // Zero-copy: the span points into the image itself.
    EXPECT_EQ(bytes.data(), image.data() + file->data_offset() + t.offset);
    EXPECT_EQ(file->find_tensor(cases[i].name), &t);
    expected_offset += (t.n_bytes + alignment - 1) / alignment * alignment;
  }
  EXPECT_EQ(file->find_tensor("absent"), nullptr);
  if (alignment != kGgufDefaultAlignment) {
    EXPECT_EQ(*file->get<uint32_t>("general.alignment"), alignment);
  }
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufTensorRoundTrip, ::testing::Values(32u, 64u, 1u, 4096u));

TEST(GgufRoundTrip, OpenReadsAFileFromDisk) {
  test::TempDir dir;
  GgufWriter writer;
  writer.set_string("general.architecture", "disk");
  ASSERT_TRUE(writer.add_tensor("t", GgmlType::kQ8_0, {32, 2}, pattern_bytes(68, 3)).is_ok());
  ASSERT_TRUE(writer.write(dir.file("m.gguf")).is_ok());
  Result<std::unique_ptr<GgufFile>> file = GgufFile::open(dir.file("m.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  EXPECT_EQ(*(*file)->get_string("general.architecture"), "disk");
  const std::span<const uint8_t> data = (*file)->tensor_data((*file)->tensors()[0]);
  EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), pattern_bytes(68, 3));
}

TEST(GgufWriterErrors, RejectsWrongDataSizesShapesAndDuplicates) {
  GgufWriter writer;
  EXPECT_FALSE(writer.add_tensor("a", GgmlType::kF32, {4}, std::vector<uint8_t>(15)).is_ok());
  EXPECT_FALSE(writer.add_tensor("b", GgmlType::kQ4_0, {31}, std::vector<uint8_t>(18)).is_ok());
  EXPECT_FALSE(writer.add_tensor("c", GgmlType::kF32, {0}, {}).is_ok());
  EXPECT_FALSE(writer.add_tensor("d", GgmlType::kF32, {1, 1, 1, 1, 1}, {0, 0, 0, 0}).is_ok());
  EXPECT_FALSE(writer.add_tensor("e", GgmlType::kF32, {1ull << 32, 1ull << 32}, {}).is_ok());
  ASSERT_TRUE(writer.add_tensor("f", GgmlType::kF32, {1}, {0, 0, 0, 0}).is_ok());
  const Status dup = writer.add_tensor("f", GgmlType::kF32, {1}, {0, 0, 0, 0});
  EXPECT_FALSE(dup.is_ok());
  EXPECT_NE(dup.message().find("'f'"), std::string::npos) << dup.message();
  writer.set_alignment(48);
  EXPECT_FALSE(writer.serialize().is_ok());
}

// Typed access never converts: each mismatch is an error naming the key and both types.
struct TypeErrorCase {
  std::string what;
  std::function<Status(const GgufFile&)> access;
  std::string key;
  std::string actual;
  std::string expected;
};

TEST(GgufTypedAccess, WrongTypeIsAnErrorNamingKeyAndBothTypes) {
  GgufWriter writer;
  writer.set_string("s", "text");
  writer.set_scalar<uint32_t>("u32", 7);
  writer.set_scalar<float>("f32", 1.0f);
  writer.set_scalar<uint64_t>("big", std::numeric_limits<uint64_t>::max());
  writer.set("ints", GgufValue::array<int32_t>({1, 2}));
  writer.set("strs", GgufValue::string_array({"x"}));
  auto file = parse_ok(*writer.serialize());
  ASSERT_NE(file, nullptr);
  const std::vector<TypeErrorCase> cases = {
      {"uint32 of a string", [](const GgufFile& f) { return f.get<uint32_t>("s").status(); }, "s",
       "string", "uint32"},
      {"int32 of a uint32", [](const GgufFile& f) { return f.get<int32_t>("u32").status(); }, "u32",
       "uint32", "int32"},
      {"float64 of a float32", [](const GgufFile& f) { return f.get<double>("f32").status(); },
       "f32", "float32", "float64"},
      {"string of a uint32", [](const GgufFile& f) { return f.get_string("u32").status(); }, "u32",
       "uint32", "string"},
      {"integer of a float", [](const GgufFile& f) { return f.get_integer("f32").status(); }, "f32",
       "float32", "an integer"},
      {"integer of a string", [](const GgufFile& f) { return f.get_integer("s").status(); }, "s",
       "string", "an integer"},
      {"integer of uint64 max", [](const GgufFile& f) { return f.get_integer("big").status(); },
       "big", "uint64", "an integer"},
      {"floating of a uint32", [](const GgufFile& f) { return f.get_floating("u32").status(); },
       "u32", "uint32", "float32 or float64"},
      {"string array of int32s",
       [](const GgufFile& f) { return f.get_string_array("ints").status(); }, "ints",
       "array of int32", "array of string"},
      {"float array of int32s",
       [](const GgufFile& f) { return f.get_array<float>("ints").status(); }, "ints",
       "array of int32", "array of float32"},
      {"int32 array of strings",
       [](const GgufFile& f) { return f.get_array<int32_t>("strs").status(); }, "strs",
       "array of string", "array of int32"},
      {"scalar of an array", [](const GgufFile& f) { return f.get<int32_t>("ints").status(); },
       "ints", "array of int32", "int32"},
      {"get_or of a wrong type",
       [](const GgufFile& f) { return f.get_or<uint32_t>("s", 1u).status(); }, "s", "string",
       "uint32"},
  };
  for (const TypeErrorCase& c : cases) {
    SCOPED_TRACE(c.what);
    const Status status = c.access(*file);
    ASSERT_FALSE(status.is_ok());
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
    const std::string& m = status.message();
    EXPECT_EQ(m.rfind("[gguf]", 0), 0u) << m;
    EXPECT_NE(m.find("key '" + c.key + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("holds " + c.actual), std::string::npos) << m;
    EXPECT_NE(m.find("expected " + c.expected), std::string::npos) << m;
  }
}

TEST(GgufTypedAccess, MissingKeysAndFallbacks) {
  GgufWriter writer;
  writer.set_scalar<uint32_t>("u32", 7);
  auto file = parse_ok(*writer.serialize());
  ASSERT_NE(file, nullptr);
  const Result<uint32_t> missing = file->get<uint32_t>("nope");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);
  EXPECT_EQ(*file->get_or<uint32_t>("nope", 42u), 42u);
  EXPECT_EQ(*file->get_or<uint32_t>("u32", 42u), 7u);
  EXPECT_FALSE(file->has("nope"));
  EXPECT_EQ(file->find("nope"), nullptr);
}

// A dropped key reads as missing; the keys after it keep their values (the index is rebuilt).
TEST(GgufTypedAccess, ADroppedKeyIsMissingAndTheOthersStay) {
  GgufWriter writer;
  writer.set_scalar<uint32_t>("first", 1);
  writer.set("big", GgufValue::string_array({"a", "b", "c"}));
  writer.set_scalar<uint32_t>("last", 3);
  auto file = parse_ok(*writer.serialize());
  ASSERT_NE(file, nullptr);
  file->drop("big");
  file->drop("never there");
  EXPECT_FALSE(file->has("big"));
  const auto dropped = file->get_string_array("big");
  ASSERT_FALSE(dropped.is_ok());
  EXPECT_EQ(dropped.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(*file->get<uint32_t>("first"), 1u);
  EXPECT_EQ(*file->get<uint32_t>("last"), 3u);
  EXPECT_EQ(file->metadata().size(), 2u);
}

// Names and scalar sizes of the spec's value types 0..12 (a table indexed by the id).
TEST(GgufValueType, NamesAndScalarSizesFollowTheSpec) {
  struct Expected {
    GgufType type;
    const char* name;
    size_t size;
  };
  const Expected expected[] = {{GgufType::kUint8, "uint8", 1},     {GgufType::kInt8, "int8", 1},
                               {GgufType::kUint16, "uint16", 2},   {GgufType::kInt16, "int16", 2},
                               {GgufType::kUint32, "uint32", 4},   {GgufType::kInt32, "int32", 4},
                               {GgufType::kFloat32, "float32", 4}, {GgufType::kBool, "bool", 1},
                               {GgufType::kString, "string", 0},   {GgufType::kArray, "array", 0},
                               {GgufType::kUint64, "uint64", 8},   {GgufType::kInt64, "int64", 8},
                               {GgufType::kFloat64, "float64", 8}};
  for (const Expected& e : expected) {
    EXPECT_TRUE(gguf_type_is_valid(static_cast<uint32_t>(e.type)));
    EXPECT_EQ(gguf_type_name(e.type), e.name);
    EXPECT_EQ(gguf_scalar_size(e.type), e.size) << e.name;
  }
  const auto bad = static_cast<GgufType>(13);
  EXPECT_FALSE(gguf_type_is_valid(13));
  EXPECT_EQ(gguf_type_name(bad), "unknown");
  EXPECT_EQ(gguf_scalar_size(bad), 0u);
}

}  // namespace
}  // namespace minfer
