#include "gguf/gguf_value.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>

#include <fmt/format.h>

namespace minfer {

namespace {

// One row per value type, indexed by its id (the spec's ids run 0..12).
struct GgufTypeRow {
  std::string_view name;
  size_t scalar_size;  // bytes of one value; 0 for string and array
};
constexpr GgufTypeRow kTypeRows[] = {
    {"uint8", 1},  {"int8", 1},    {"uint16", 2},  {"int16", 2},  {"uint32", 4},
    {"int32", 4},  {"float32", 4}, {"bool", 1},    {"string", 0}, {"array", 0},
    {"uint64", 8}, {"int64", 8},   {"float64", 8},
};
static_assert(std::size(kTypeRows) == static_cast<size_t>(GgufType::kFloat64) + 1);

// The row of a valid type id, else nullptr.
const GgufTypeRow* type_row(GgufType type) {
  const auto id = static_cast<uint32_t>(type);
  return gguf_type_is_valid(id) ? &kTypeRows[id] : nullptr;
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  const GgufTypeRow* row = type_row(type);
  return row != nullptr ? row->name : "unknown";
}

bool gguf_type_is_valid(uint32_t id) {
  return id < std::size(kTypeRows);
}

size_t gguf_scalar_size(GgufType type) {
  const GgufTypeRow* row = type_row(type);
  return row != nullptr ? row->scalar_size : 0;
}

std::string gguf_escape(std::string_view text, size_t max_chars) {
  size_t end = std::min(text.size(), max_chars);
  // Back off to a UTF-8 lead byte so a cut never splits a character.
  if (end < text.size()) {
    while (end > 0 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) --end;
  }
  std::string out;
  out.reserve(end + 16);
  for (size_t i = 0; i < end; ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (end < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

GgufValue GgufValue::string(std::string value) {
  GgufValue v;
  v.type_ = GgufType::kString;
  v.text_ = std::move(value);
  return v;
}

GgufValue GgufValue::string_array(std::vector<std::string> values) {
  GgufValue v;
  v.type_ = GgufType::kArray;
  v.element_type_ = GgufType::kString;
  v.strings_ = std::move(values);
  return v;
}

GgufValue GgufValue::array_of_arrays(std::vector<GgufValue> arrays) {
  GgufValue v;
  v.type_ = GgufType::kArray;
  v.element_type_ = GgufType::kArray;
  v.nested_ = std::move(arrays);
  return v;
}

GgufValue GgufValue::scalar_array_from_bytes(GgufType element_type, std::vector<uint8_t> bytes) {
  GgufValue v;
  v.type_ = GgufType::kArray;
  v.element_type_ = element_type;
  v.array_bytes_ = std::move(bytes);
  return v;
}

size_t GgufValue::array_size() const {
  if (!is_array()) return 0;
  switch (element_type_) {
    case GgufType::kString:
      return strings_.size();
    case GgufType::kArray:
      return nested_.size();
    default:
      return array_bytes_.size() / gguf_scalar_size(element_type_);
  }
}

std::optional<int64_t> GgufValue::as_integer() const {
  switch (type_) {
    case GgufType::kUint8:
      return static_cast<int64_t>(*as<uint8_t>());
    case GgufType::kInt8:
      return static_cast<int64_t>(*as<int8_t>());
    case GgufType::kUint16:
      return static_cast<int64_t>(*as<uint16_t>());
    case GgufType::kInt16:
      return static_cast<int64_t>(*as<int16_t>());
    case GgufType::kUint32:
      return static_cast<int64_t>(*as<uint32_t>());
    case GgufType::kInt32:
      return static_cast<int64_t>(*as<int32_t>());
    case GgufType::kInt64:
      return *as<int64_t>();
    case GgufType::kUint64: {
      const uint64_t u = *as<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufValue::as_floating() const {
  if (type_ == GgufType::kFloat32) return static_cast<double>(*as<float>());
  if (type_ == GgufType::kFloat64) return *as<double>();
  return std::nullopt;
}

std::string GgufValue::describe(size_t max_chars) const {
  switch (type_) {
    case GgufType::kString: {
      std::string s = text_.size() > max_chars ? text_.substr(0, max_chars) + "…" : text_;
      return fmt::format("\"{}\"", s);
    }
    case GgufType::kArray:
      return fmt::format("[{} × {}]", gguf_type_name(element_type_), array_size());
    case GgufType::kBool:
      return *as<bool>() ? "true" : "false";
    case GgufType::kFloat32:
      return fmt::format("{}", *as<float>());
    case GgufType::kFloat64:
      return fmt::format("{}", *as<double>());
    case GgufType::kUint64:
      return fmt::format("{}", *as<uint64_t>());
    default:
      return fmt::format("{}", *as_integer());
  }
}

}  // namespace minfer
