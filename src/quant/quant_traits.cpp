#include "quant/quant_traits.h"

#include <array>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "quant/quantize.h"

namespace minfer {

namespace {

// Adapters from the typed row functions to the void* table signature.
template <typename Block, void (*Fn)(const Block*, float*, int64_t)>
void to_float_adapter(const void* src, float* dst, int64_t n) {
  Fn(static_cast<const Block*>(src), dst, n);
}
template <typename Block, void (*Fn)(const float*, Block*, int64_t)>
void from_float_adapter(const float* src, void* dst, int64_t n) {
  Fn(src, static_cast<Block*>(dst), n);
}

void f32_to_float(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void f32_from_float(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

struct Row {
  GgmlType type;
  ToFloatFn to_float;
  FromFloatFn from_float;
  GgmlType vec_dot_type;
};

// clang-format off
constexpr std::array kRows = {
  Row{GgmlType::kF32,  f32_to_float, f32_from_float, GgmlType::kF32},
  Row{GgmlType::kF16,  to_float_adapter<uint16_t, fp16_to_fp32_row>,
                       from_float_adapter<uint16_t, fp32_to_fp16_row>, GgmlType::kF16},
  Row{GgmlType::kBF16, to_float_adapter<uint16_t, bf16_to_fp32_row>,
                       from_float_adapter<uint16_t, fp32_to_bf16_row>, GgmlType::kBF16},
  Row{GgmlType::kQ4_0, to_float_adapter<BlockQ4_0, dequantize_row_q4_0>,
                       from_float_adapter<BlockQ4_0, quantize_row_q4_0>, GgmlType::kQ8_0},
  Row{GgmlType::kQ4_1, to_float_adapter<BlockQ4_1, dequantize_row_q4_1>,
                       from_float_adapter<BlockQ4_1, quantize_row_q4_1>, GgmlType::kQ8_1},
  Row{GgmlType::kQ5_0, to_float_adapter<BlockQ5_0, dequantize_row_q5_0>,
                       from_float_adapter<BlockQ5_0, quantize_row_q5_0>, GgmlType::kQ8_0},
  Row{GgmlType::kQ5_1, to_float_adapter<BlockQ5_1, dequantize_row_q5_1>,
                       from_float_adapter<BlockQ5_1, quantize_row_q5_1>, GgmlType::kQ8_1},
  Row{GgmlType::kQ8_0, to_float_adapter<BlockQ8_0, dequantize_row_q8_0>,
                       from_float_adapter<BlockQ8_0, quantize_row_q8_0>, GgmlType::kQ8_0},
  Row{GgmlType::kMXFP4, to_float_adapter<BlockMxfp4, dequantize_row_mxfp4>,
                        from_float_adapter<BlockMxfp4, quantize_row_mxfp4>, GgmlType::kQ8_0},
  Row{GgmlType::kQ8_1, to_float_adapter<BlockQ8_1, dequantize_row_q8_1>,
                       from_float_adapter<BlockQ8_1, quantize_row_q8_1>, GgmlType::kQ8_1},
  Row{GgmlType::kQ2_K, to_float_adapter<BlockQ2K, dequantize_row_q2_K>,
                       from_float_adapter<BlockQ2K, quantize_row_q2_K>, GgmlType::kQ8_K},
  Row{GgmlType::kQ3_K, to_float_adapter<BlockQ3K, dequantize_row_q3_K>,
                       from_float_adapter<BlockQ3K, quantize_row_q3_K>, GgmlType::kQ8_K},
  Row{GgmlType::kQ4_K, to_float_adapter<BlockQ4K, dequantize_row_q4_K>,
                       from_float_adapter<BlockQ4K, quantize_row_q4_K>, GgmlType::kQ8_K},
  Row{GgmlType::kQ5_K, to_float_adapter<BlockQ5K, dequantize_row_q5_K>,
                       from_float_adapter<BlockQ5K, quantize_row_q5_K>, GgmlType::kQ8_K},
  Row{GgmlType::kQ6_K, to_float_adapter<BlockQ6K, dequantize_row_q6_K>,
                       from_float_adapter<BlockQ6K, quantize_row_q6_K>, GgmlType::kQ8_K},
  Row{GgmlType::kQ8_K, to_float_adapter<BlockQ8K, dequantize_row_q8_K>,
                       from_float_adapter<BlockQ8K, quantize_row_q8_K>, GgmlType::kQ8_K},
};
// clang-format on

// The traits, with the block geometry taken from the GGUF type table (one source of truth).
struct Table {
  std::array<QuantTraits, kRows.size()> traits;
  Table() {
    for (size_t i = 0; i < kRows.size(); ++i) {
      const GgmlTypeInfo& info = ggml_type_info(kRows[i].type);
      traits[i] = QuantTraits{kRows[i].type,     info.block_size,     info.bytes_per_block,
                              kRows[i].to_float, kRows[i].from_float, kRows[i].vec_dot_type};
    }
  }
};

const Table& table() {
  static const Table kTraits;
  return kTraits;
}

// Ok when the type has traits, n is a multiple of its block size and the quantized side of the
// conversion holds exactly the bytes n elements need; else an error naming what is wrong.
Status check_row(const char* what, GgmlType type, uint64_t n, uint64_t quantized_bytes) {
  const QuantTraits* traits = quant_traits(type);
  const std::string_view name = ggml_type_info(type).name;
  if (traits == nullptr) {
    return make_error(ErrorCode::kUnsupported, "[quant] {}: type {} is not supported", what, name);
  }
  if (n % traits->block_size != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[quant] {} {}: element count must be a multiple of {}, got {}", what, name,
                      traits->block_size, n);
  }
  const uint64_t bytes = n / traits->block_size * traits->bytes_per_block;
  if (quantized_bytes != bytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[quant] {} {}: {} elements need {} bytes, got {}", what, name, n, bytes,
                      quantized_bytes);
  }
  return Status::ok();
}

}  // namespace

const QuantTraits* quant_traits(GgmlType type) {
  for (const QuantTraits& t : table().traits) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

namespace {

// The traits for converting n elements of `type`, whose validity the caller guarantees: a type
// without traits or an n that is not a multiple of the block size is a bug (`caller` names it).
const QuantTraits& traits_for_row(const char* caller, GgmlType type, int64_t n) {
  const QuantTraits* traits = quant_traits(type);
  MINFER_CHECK(traits != nullptr, caller);
  MINFER_CHECK(n >= 0 && n % traits->block_size == 0, caller);
  return *traits;
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  traits_for_row("dequantize_row", type, n).to_float(src, dst, n);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  traits_for_row("quantize_row", type, n).from_float(src, dst, n);
}

Status dequantize_checked(GgmlType type, std::span<const uint8_t> src, std::span<float> dst) {
  MINFER_RETURN_IF_ERROR(check_row("dequantize", type, dst.size(), src.size()));
  quant_traits(type)->to_float(src.data(), dst.data(), static_cast<int64_t>(dst.size()));
  return Status::ok();
}

Status quantize_checked(GgmlType type, std::span<const float> src, std::span<uint8_t> dst) {
  MINFER_RETURN_IF_ERROR(check_row("quantize", type, src.size(), dst.size()));
  // The quantizers convert scaled values to integers, which is undefined for NaN and inf.
  for (size_t i = 0; i < src.size(); ++i) {
    if (!std::isfinite(src[i])) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[quant] quantize {}: element {} is {}, expected a finite value",
                        ggml_type_info(type).name, i, src[i]);
    }
  }
  quant_traits(type)->from_float(src.data(), dst.data(), static_cast<int64_t>(src.size()));
  return Status::ok();
}

}  // namespace minfer
