#include "tools/quantize_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "core/check.h"
#include "gguf/gguf_file.h"
#include "kernels/dispatch.h"
#include "models/architectures.h"
#include "models/model_config.h"
#include "quant/quant_traits.h"
#include "tools/gguf_stream_writer.h"

namespace minfer {

namespace {

// llama_ftype numbers from llama.h.
constexpr std::array<QuantMix, 12> kMixes = {{
    {"f32", 0, GgmlType::kF32, false},
    {"f16", 1, GgmlType::kF16, false},
    {"bf16", 32, GgmlType::kBF16, false},
    {"q8_0", 7, GgmlType::kQ8_0, false},
    {"q4_0", 2, GgmlType::kQ4_0, false},
    {"q4_1", 3, GgmlType::kQ4_1, false},
    {"q5_0", 8, GgmlType::kQ5_0, false},
    {"q5_1", 9, GgmlType::kQ5_1, false},
    {"q4_k_m", 15, GgmlType::kQ4_K, true},
    {"q5_k_m", 17, GgmlType::kQ5_K, true},
    {"q6_k", 18, GgmlType::kQ6_K, false},
    {"mxfp4_moe", 38, GgmlType::kMXFP4, false},
}};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The block number of "blk.N.…", or -1 for tensors outside blocks (llama.cpp's sort key).
int64_t block_of(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  int64_t n = 0;
  size_t i = kPrefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
    n = n * 10 + (name[i] - '0');
    ++i;
  }
  return n;
}

// The tensor list's matrices; otherwise llama.cpp's rule: 2-D (and 3-D) tensors named *weight,
// never norms.
bool is_convertible(const TensorDesc& t) {
  // llama.cpp never quantizes an MoE router.
  if (t.name.find("ffn_gate_inp.weight") != std::string::npos) return false;
  if (t.role) return *t.role == TensorRole::kMatrix;
  size_t n_dims = t.shape.size();
  while (n_dims > 1 && t.shape[n_dims - 1] == 1) --n_dims;
  if (n_dims < 2) return false;
  if (!ends_with(t.name, "weight")) return false;
  return t.name.find("_norm.weight") == std::string::npos;
}

// llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M.
constexpr uint32_t kFtypeQ4KM = 15;

bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

bool divides(GgmlType type, uint64_t n_per_row) {
  return n_per_row % ggml_type_info(type).block_size == 0;
}

// llama.cpp's tensor_type_fallback for the types a mix here can choose.
GgmlType fallback_for(GgmlType type) {
  switch (type) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
      return GgmlType::kQ4_0;
    case GgmlType::kQ4_K:
      return GgmlType::kQ5_0;
    case GgmlType::kQ5_K:
      return GgmlType::kQ5_1;
    case GgmlType::kQ6_K:
      return GgmlType::kQ8_0;
    default:
      return GgmlType::kF16;
  }
}

}  // namespace

Result<QuantMix> find_quant_mix(std::string_view name) {
  // Mix names are lower case; the name given may be any case ("Q4_K_M").
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const QuantMix& m : kMixes) {
    if (lower == m.name) return m;
  }
  return make_error(ErrorCode::kInvalidArgument, "[quantize] unknown type '{}' (supported: {})",
                    name, quant_mix_names());
}

std::string quant_mix_names() {
  std::string out;
  for (const QuantMix& m : kMixes) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

std::vector<size_t> llama_tensor_order(std::span<const TensorDesc> tensors) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = block_of(tensors[a].name);
    const int64_t lb = block_of(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });
  return order;
}

TypePlan plan_tensor_types(const QuantMix& mix, std::span<const TensorDesc> tensors,
                           std::string_view arch, int64_t n_layer, int64_t n_head,
                           int64_t n_head_kv, int64_t n_expert) {
  TypePlan plan;
  plan.types.reserve(tensors.size());
  const bool tied = std::none_of(tensors.begin(), tensors.end(),
                                 [](const TensorDesc& t) { return t.name == "output.weight"; });
  int64_t n_attn_v = 0;
  for (const TensorDesc& t : tensors) {
    if (t.name.find("attn_v.weight") != std::string::npos) ++n_attn_v;
  }
  const bool is_70b_shape = arch == "llama" && n_layer == 80 && n_head != n_head_kv;
  const bool quantized_mix = ggml_type_info(mix.default_type).is_quantized;
  int64_t i_attn_v = 0;
  int64_t i_ffn_down = 0;
  for (const TensorDesc& t : tensors) {
    if (!is_convertible(t)) {
      plan.types.push_back(t.type);
      continue;
    }
    GgmlType type = mix.default_type;
    if (!quantized_mix) {
      plan.types.push_back(type);
      continue;
    }
    const uint64_t n_per_row = t.shape[0];
    if (type == GgmlType::kMXFP4) {
      // llama.cpp's MXFP4_MOE: the experts (ne[2] > 1) in MXFP4, every other matrix in Q8_0.
      type = t.shape.size() > 2 && t.shape[2] > 1 ? GgmlType::kMXFP4 : GgmlType::kQ8_0;
      if (!divides(type, n_per_row)) {
        ++plan.n_fallback;
        type = GgmlType::kF16;
      }
      plan.types.push_back(type);
      continue;
    }
    const bool is_output = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
    if (is_output) {
      if (!divides(type, n_per_row)) {
        type = GgmlType::kQ8_0;
      } else if (type != GgmlType::kQ8_0) {
        type = GgmlType::kQ6_K;
      }
    } else if (t.name == "token_embd.weight") {
      // Untied embeddings keep the default type for every mix here.
    } else if (t.name.find("attn_v.weight") != std::string::npos) {
      if (mix.k_mix && use_more_bits(i_attn_v, n_attn_v)) type = GgmlType::kQ6_K;
      if (is_70b_shape && (type == GgmlType::kQ3_K || type == GgmlType::kQ4_K)) {
        type = GgmlType::kQ5_K;
      }
      if (n_expert == 8) type = GgmlType::kQ8_0;
      ++i_attn_v;
    } else if (t.name.find("attn_k.weight") != std::string::npos) {
      if (n_expert == 8) type = GgmlType::kQ8_0;
    } else if (t.name.find("ffn_down") != std::string::npos) {
      // With experts llama.cpp takes the layer from the name (layer_info).
      const int64_t i_layer = n_expert > 1 ? block_of(t.name) : i_ffn_down;
      if (mix.k_mix && use_more_bits(i_layer, n_layer)) type = GgmlType::kQ6_K;
      ++i_ffn_down;
    } else if (t.name.find("attn_output.weight") != std::string::npos) {
      if (n_expert == 8 && mix.file_type == kFtypeQ4KM) type = GgmlType::kQ5_K;
    }
    if (!divides(type, n_per_row)) {
      ++plan.n_fallback;
      type = fallback_for(type);
      if (!divides(type, n_per_row)) type = GgmlType::kF16;
    }
    plan.types.push_back(type);
  }
  return plan;
}

void convert_tensor(GgmlType src_type, std::span<const uint8_t> src, GgmlType dst_type,
                    int64_t n_per_row, int64_t n_rows, kernels::ThreadPool& pool,
                    std::vector<uint8_t>& dst) {
  const std::optional<uint64_t> src_row =
      ggml_row_bytes(src_type, static_cast<uint64_t>(n_per_row));
  const std::optional<uint64_t> dst_row =
      ggml_row_bytes(dst_type, static_cast<uint64_t>(n_per_row));
  MINFER_CHECK(src_row && dst_row, "convert_tensor: row length not a multiple of the block");
  MINFER_CHECK(src.size() == *src_row * static_cast<uint64_t>(n_rows),
               "convert_tensor: source size does not match the shape");
  dst.resize(*dst_row * static_cast<uint64_t>(n_rows));
  if (src_type == dst_type) {
    std::memcpy(dst.data(), src.data(), src.size());
    return;
  }
  // Rows are independent: each worker converts its own range (bit-identical at any count).
  pool.parallel_for(n_rows, [&](int64_t begin, int64_t end) {
    std::vector<float> row(src_type == GgmlType::kF32 ? 0 : static_cast<size_t>(n_per_row));
    for (int64_t r = begin; r < end; ++r) {
      const uint8_t* in = src.data() + static_cast<uint64_t>(r) * *src_row;
      uint8_t* out = dst.data() + static_cast<uint64_t>(r) * *dst_row;
      const float* values = reinterpret_cast<const float*>(in);
      if (src_type != GgmlType::kF32) {
        dequantize_row(src_type, in, row.data(), n_per_row);
        values = row.data();
      }
      if (dst_type == GgmlType::kF32) {
        std::memcpy(out, values, static_cast<size_t>(n_per_row) * sizeof(float));
      } else {
        quantize_row(dst_type, values, out, n_per_row);
      }
    }
  });
}

// ---- quantize_model ----

namespace {

// A tensor's name inside its block ("blk.3.attn_q.weight" → "attn_q.weight"); names outside the
// blocks as they are.
std::string_view name_in_block(std::string_view name) {
  if (block_of(name) < 0) return name;
  return name.substr(name.find('.', 4) + 1);  // past "blk.N."
}

// The role of every tensor the architecture's list names, by name_in_block (every block has the
// same list); empty for an architecture minfer does not know. Names and roles depend on the
// architecture only, so the file need not be one minfer can run (e.g. a rope scaling it does not
// implement).
std::map<std::string, TensorRole, std::less<>> list_roles(const std::string& arch) {
  std::map<std::string, TensorRole, std::less<>> roles;
  const Result<ArchSpec> spec = find_arch(arch);
  if (!spec.is_ok()) return roles;
  ModelConfig c;
  apply_arch(*spec, c);
  c.n_layer = 1;
  for (const TensorSpec& t : spec->tensors(c)) roles.emplace(name_in_block(t.name), t.role);
  return roles;
}

}  // namespace

Result<QuantizeReport> quantize_model(const QuantizeOptions& o) {
  MINFER_RETURN_IF_ERROR(kernels::init_kernels());  // a bad MINFER_FORCE_ISA is an error
  MINFER_ASSIGN_OR_RETURN(QuantMix mix, find_quant_mix(o.type));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> in, GgufFile::open(o.input));
  // The input stays mapped while the output is written: writing over it would truncate the
  // mapping under us.
  std::error_code ec;
  if (std::filesystem::equivalent(o.input, o.output, ec)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[quantize] output '{}' is the input file; write to another path", o.output);
  }
  MINFER_ASSIGN_OR_RETURN(std::string arch, in->get_string("general.architecture"));
  MINFER_ASSIGN_OR_RETURN(int64_t n_layer, in->get_integer(arch + ".block_count"));
  MINFER_ASSIGN_OR_RETURN(int64_t n_head, in->get_integer(arch + ".attention.head_count"));
  int64_t n_head_kv = n_head;
  if (in->has(arch + ".attention.head_count_kv")) {
    MINFER_ASSIGN_OR_RETURN(n_head_kv, in->get_integer(arch + ".attention.head_count_kv"));
  }
  int64_t n_expert = 0;
  if (in->has(arch + ".expert_count")) {
    MINFER_ASSIGN_OR_RETURN(n_expert, in->get_integer(arch + ".expert_count"));
  }

  std::vector<TensorDesc> descs;
  for (const GgufTensorInfo& t : in->tensors()) {
    if (quant_traits(t.type) == nullptr) {
      return make_error(ErrorCode::kUnsupported,
                        "[quantize] '{}': tensor '{}' has type {}, which minfer cannot convert",
                        o.input, t.name, ggml_type_info(t.type).name);
    }
    descs.push_back({t.name, t.type, t.shape});
  }
  const auto roles = list_roles(arch);
  for (TensorDesc& t : descs) {
    const auto it = roles.find(name_in_block(t.name));
    if (it != roles.end()) t.role = it->second;
  }
  const std::vector<size_t> order = llama_tensor_order(descs);
  std::vector<TensorDesc> ordered;
  for (size_t i : order) ordered.push_back(descs[i]);
  const TypePlan plan = plan_tensor_types(mix, ordered, arch, n_layer, n_head, n_head_kv, n_expert);

  GgufWriter metadata;
  for (const GgufKeyValue& kv : in->metadata()) metadata.set(kv.key, kv.value);
  metadata.set_scalar<uint32_t>("general.quantization_version", 2);
  metadata.set_scalar<uint32_t>("general.file_type", mix.file_type);

  std::vector<GgufStreamWriter::TensorLayout> layout;
  for (size_t k = 0; k < ordered.size(); ++k) {
    layout.push_back({ordered[k].name, plan.types[k], ordered[k].shape});
  }
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<kernels::ThreadPool> pool,
                          kernels::ThreadPool::create(std::max(o.n_threads, 0)));
  MINFER_ASSIGN_OR_RETURN(GgufStreamWriter out,
                          GgufStreamWriter::create(o.output, metadata, std::move(layout)));

  QuantizeReport report;
  report.n_tensors = static_cast<int64_t>(ordered.size());
  report.n_fallback = plan.n_fallback;
  uint64_t total_elements = 0;
  for (const GgufTensorInfo& t : in->tensors()) total_elements += t.n_elements;
  Progress progress("quantize", static_cast<int64_t>(total_elements), o.progress);
  uint64_t done_elements = 0;
  std::vector<uint8_t> converted;  // [one tensor's bytes in its target type]
  for (size_t k = 0; k < ordered.size(); ++k) {
    const GgufTensorInfo& t = *in->find_tensor(ordered[k].name);
    const GgmlType target = plan.types[k];
    if (!ggml_row_bytes(t.type, t.shape[0]) || !ggml_row_bytes(target, t.shape[0])) {
      return make_error(ErrorCode::kCorrupt,
                        "[quantize] tensor '{}': row length {} does not fit {} → {}", t.name,
                        t.shape[0], ggml_type_info(t.type).name, ggml_type_info(target).name);
    }
    convert_tensor(t.type, in->tensor_data(t), target, static_cast<int64_t>(t.shape[0]),
                   static_cast<int64_t>(t.n_rows()), *pool, converted);
    MINFER_RETURN_IF_ERROR(out.write_next(converted));
    report.bytes_in += t.n_bytes;
    report.bytes_out += converted.size();
    if (target != t.type) ++report.n_converted;
    done_elements += t.n_elements;
    progress.update(static_cast<int64_t>(done_elements), t.name);
  }
  MINFER_RETURN_IF_ERROR(out.close());
  progress.finish();
  return report;
}

}  // namespace minfer
