// The ggml tensor type table: one row per type id that can appear in a GGUF file.
// Ids, block sizes and bytes per block follow ggml's `ggml_type` enum (ggml.h) and its
// type traits; the GGUF spec stores these ids in each tensor-info record.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace minfer {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;     // as ggml prints it: "f32", "q4_K", …
  uint32_t block_size;       // elements per block
  uint32_t bytes_per_block;  // bytes of one block in the file
  bool is_quantized;
  bool computable;  // minfer has kernels for it (the weight types of DESIGN.md §4, plus Q8_K)
};

// The row for a type id, or nullopt for an id that is not a ggml type.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);

// The row for a known type (never fails).
const GgmlTypeInfo& ggml_type_info(GgmlType type);

// The type whose name matches case-insensitively ("q4_k", "Q8_0", "bf16"), or nullopt.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of a row of `n` elements; nullopt when n is not a multiple of the block size.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n);

// Every row of the table, in id order.
struct GgmlTypeTable {
  const GgmlTypeInfo* begin() const;
  const GgmlTypeInfo* end() const;
};
GgmlTypeTable ggml_types();

}  // namespace minfer
