// GGUF metadata values (GGUF spec, "Metadata value types"): scalars, strings and arrays.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace minfer {

// Value type ids as stored in the file (gguf_metadata_value_type in the GGUF spec).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Name of a value type id ("uint32", "string", …), "unknown" for other ids.
std::string_view gguf_type_name(GgufType type);
// True for the ids 0..12 of the spec.
bool gguf_type_is_valid(uint32_t id);
// Bytes of one scalar of this type; 0 for string and array.
size_t gguf_scalar_size(GgufType type);

// A key, tensor name or string value from a file made safe for a one-line message: control
// bytes become \xNN (so a crafted name cannot break a line or drive a terminal), and text past
// `max_chars` bytes is cut at a UTF-8 boundary and marked with the full length.
std::string gguf_escape(std::string_view text, size_t max_chars = 80);

// The GGUF type that stores a C++ scalar type.
template <typename T>
constexpr GgufType gguf_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return GgufType::kUint8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufType::kInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufType::kUint16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufType::kInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufType::kUint32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufType::kInt32;
  else if constexpr (std::is_same_v<T, float>)
    return GgufType::kFloat32;
  else if constexpr (std::is_same_v<T, bool>)
    return GgufType::kBool;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufType::kUint64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufType::kInt64;
  else if constexpr (std::is_same_v<T, double>)
    return GgufType::kFloat64;
  else
    static_assert(sizeof(T) == 0, "not a GGUF scalar type");
}

// One metadata value. Scalars keep their exact stored type; typed access checks it.
class GgufValue {
 public:
  GgufValue() = default;

  template <typename T>
  static GgufValue scalar(T value) {
    GgufValue v;
    v.type_ = gguf_type_of<T>();
    if constexpr (std::is_same_v<T, bool>) {
      v.bits_ = value ? 1 : 0;
    } else {
      std::memcpy(&v.bits_, &value, sizeof(T));
    }
    return v;
  }
  static GgufValue string(std::string value);
  // An array of scalars or strings of one element type.
  template <typename T>
  static GgufValue array(const std::vector<T>& values);
  static GgufValue string_array(std::vector<std::string> values);
  // An array whose elements are arrays (nested arrays are rare but legal in GGUF).
  static GgufValue array_of_arrays(std::vector<GgufValue> arrays);

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::kArray; }
  // The scalar's stored bytes, zero-extended (for any scalar type).
  uint64_t raw_bits() const { return bits_; }

  // The scalar as T when its stored type is exactly T's type.
  template <typename T>
  std::optional<T> as() const {
    if (type_ != gguf_type_of<T>()) return std::nullopt;
    if constexpr (std::is_same_v<T, bool>) {
      return bits_ != 0;
    } else {
      T out;
      std::memcpy(&out, &bits_, sizeof(T));
      return out;
    }
  }
  // Any integer type (signed or unsigned, any width) as int64; nullopt for other types or a
  // uint64 above INT64_MAX.
  std::optional<int64_t> as_integer() const;
  // A float32 or float64 as double.
  std::optional<double> as_floating() const;

  const std::string* as_string() const { return type_ == GgufType::kString ? &text_ : nullptr; }

  // Arrays.
  GgufType element_type() const { return element_type_; }
  size_t array_size() const;
  // Scalar array elements as T when the element type is exactly T's type.
  template <typename T>
  std::optional<std::vector<T>> array_as() const;
  // Array of strings; nullptr for anything else.
  const std::vector<std::string>* as_string_array() const {
    return is_array() && element_type_ == GgufType::kString ? &strings_ : nullptr;
  }
  // Array of arrays.
  const std::vector<GgufValue>& nested() const { return nested_; }
  // Raw little-endian bytes of a scalar array.
  const std::vector<uint8_t>& array_bytes() const { return array_bytes_; }

  // A short human rendering: scalars in full, strings quoted and cut, arrays as "[type × n]".
  std::string describe(size_t max_chars = 60) const;

  bool operator==(const GgufValue& other) const = default;

  // Used by the reader to build a scalar array from its raw bytes.
  static GgufValue scalar_array_from_bytes(GgufType element_type, std::vector<uint8_t> bytes);

 private:
  GgufType type_ = GgufType::kUint8;
  uint64_t bits_ = 0;
  std::string text_;
  GgufType element_type_ = GgufType::kUint8;
  std::vector<uint8_t> array_bytes_;  // scalar arrays, packed as in the file
  std::vector<std::string> strings_;  // string arrays
  std::vector<GgufValue> nested_;     // arrays of arrays
};

template <typename T>
GgufValue GgufValue::array(const std::vector<T>& values) {
  static_assert(!std::is_same_v<T, bool>, "use std::vector<uint8_t> semantics for bool arrays");
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return scalar_array_from_bytes(gguf_type_of<T>(), std::move(bytes));
}

template <typename T>
std::optional<std::vector<T>> GgufValue::array_as() const {
  if (!is_array() || element_type_ != gguf_type_of<T>()) return std::nullopt;
  std::vector<T> out(array_bytes_.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), array_bytes_.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace minfer
