#include "quant/ggml_type.h"

#include <array>
#include <cctype>

#include "core/check.h"

namespace minfer {

namespace {

// clang-format off
constexpr std::array kTable = {
  //          type               name       block bytes quant  computable
  GgmlTypeInfo{GgmlType::kF32,     "f32",      1,    4,   false, true},
  GgmlTypeInfo{GgmlType::kF16,     "f16",      1,    2,   false, true},
  GgmlTypeInfo{GgmlType::kQ4_0,    "q4_0",     32,   18,  true,  true},
  GgmlTypeInfo{GgmlType::kQ4_1,    "q4_1",     32,   20,  true,  true},
  GgmlTypeInfo{GgmlType::kQ5_0,    "q5_0",     32,   22,  true,  true},
  GgmlTypeInfo{GgmlType::kQ5_1,    "q5_1",     32,   24,  true,  true},
  GgmlTypeInfo{GgmlType::kQ8_0,    "q8_0",     32,   34,  true,  true},
  GgmlTypeInfo{GgmlType::kQ8_1,    "q8_1",     32,   36,  true,  false},
  GgmlTypeInfo{GgmlType::kQ2_K,    "q2_K",     256,  84,  true,  true},
  GgmlTypeInfo{GgmlType::kQ3_K,    "q3_K",     256,  110, true,  true},
  GgmlTypeInfo{GgmlType::kQ4_K,    "q4_K",     256,  144, true,  true},
  GgmlTypeInfo{GgmlType::kQ5_K,    "q5_K",     256,  176, true,  true},
  GgmlTypeInfo{GgmlType::kQ6_K,    "q6_K",     256,  210, true,  true},
  GgmlTypeInfo{GgmlType::kQ8_K,    "q8_K",     256,  292, true,  true},
  GgmlTypeInfo{GgmlType::kIQ2_XXS, "iq2_xxs",  256,  66,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ2_XS,  "iq2_xs",   256,  74,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ3_XXS, "iq3_xxs",  256,  98,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ1_S,   "iq1_s",    256,  50,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ4_NL,  "iq4_nl",   32,   18,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ3_S,   "iq3_s",    256,  110, true,  false},
  GgmlTypeInfo{GgmlType::kIQ2_S,   "iq2_s",    256,  82,  true,  false},
  GgmlTypeInfo{GgmlType::kIQ4_XS,  "iq4_xs",   256,  136, true,  false},
  GgmlTypeInfo{GgmlType::kI8,      "i8",       1,    1,   false, false},
  GgmlTypeInfo{GgmlType::kI16,     "i16",      1,    2,   false, false},
  GgmlTypeInfo{GgmlType::kI32,     "i32",      1,    4,   false, false},
  GgmlTypeInfo{GgmlType::kI64,     "i64",      1,    8,   false, false},
  GgmlTypeInfo{GgmlType::kF64,     "f64",      1,    8,   false, false},
  GgmlTypeInfo{GgmlType::kIQ1_M,   "iq1_m",    256,  56,  true,  false},
  GgmlTypeInfo{GgmlType::kBF16,    "bf16",     1,    2,   false, true},
  GgmlTypeInfo{GgmlType::kTQ1_0,   "tq1_0",    256,  54,  true,  false},
  GgmlTypeInfo{GgmlType::kTQ2_0,   "tq2_0",    256,  66,  true,  false},
  GgmlTypeInfo{GgmlType::kMXFP4,   "mxfp4",    32,   17,  true,  true},
};
// clang-format on

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& info : kTable) {
    if (static_cast<uint32_t>(info.type) == id) return info;
  }
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const GgmlTypeInfo& info : kTable) {
    if (info.type == type) return info;
  }
  MINFER_CHECK(false, "GgmlType value missing from the type table");
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const GgmlTypeInfo& info : kTable) {
    if (iequals(info.name, name)) return info.type;
  }
  return std::nullopt;
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (n % info.block_size != 0) return std::nullopt;
  return n / info.block_size * info.bytes_per_block;
}

const GgmlTypeInfo* GgmlTypeTable::begin() const {
  return kTable.data();
}
const GgmlTypeInfo* GgmlTypeTable::end() const {
  return kTable.data() + kTable.size();
}
GgmlTypeTable ggml_types() {
  return {};
}

}  // namespace minfer
