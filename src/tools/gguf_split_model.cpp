#include "tools/gguf_split_model.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_split.h"
#include "tools/gguf_stream_writer.h"

namespace minfer {

Result<GgufSplitReport> split_gguf(const GgufSplitOptions& o) {
  if (o.max_tensors <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-split] --split-max-tensors is {}, expected a count > 0",
                      o.max_tensors);
  }
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> in, GgufFile::open(o.input));
  const std::vector<GgufTensorInfo>& tensors = in->tensors();
  const int64_t n_tensors = static_cast<int64_t>(tensors.size());
  const int64_t n_parts = std::max<int64_t>(1, (n_tensors + o.max_tensors - 1) / o.max_tensors);
  if (n_parts > kSplitMaxParts) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-split] {} tensors at {} per part make {} parts, expected at most {}",
                      n_tensors, o.max_tensors, n_parts, kSplitMaxParts);
  }
  const int count = static_cast<int>(n_parts);
  GgufSplitReport report{count, n_tensors, split_part_path(o.output_prefix, 1, count)};
  for (int part = 0; part < count; ++part) {
    const std::string path = split_part_path(o.output_prefix, part + 1, count);
    std::error_code ec;
    if (std::filesystem::equivalent(o.input, path, ec)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[gguf-split] part '{}' is the input file; choose another prefix", path);
    }
    GgufWriter metadata;
    metadata.set_alignment(in->alignment());
    if (part == 0) {
      for (const GgufKeyValue& kv : in->metadata()) {
        if (!kv.key.starts_with("split.")) metadata.set(kv.key, kv.value);
      }
    }
    metadata.set_scalar<uint16_t>(std::string(kSplitNoKey), static_cast<uint16_t>(part));
    metadata.set_scalar<uint16_t>(std::string(kSplitCountKey), static_cast<uint16_t>(count));
    metadata.set_scalar<int32_t>(std::string(kSplitTensorsCountKey),
                                 static_cast<int32_t>(n_tensors));
    const int64_t begin = part * o.max_tensors;
    const int64_t end = std::min(n_tensors, begin + o.max_tensors);
    std::vector<GgufStreamWriter::TensorLayout> layout;
    for (int64_t i = begin; i < end; ++i) {
      const GgufTensorInfo& t = tensors[static_cast<size_t>(i)];
      layout.push_back({t.name, t.type, t.shape});
    }
    MINFER_ASSIGN_OR_RETURN(GgufStreamWriter out,
                            GgufStreamWriter::create(path, metadata, std::move(layout)));
    for (int64_t i = begin; i < end; ++i) {
      MINFER_RETURN_IF_ERROR(out.write_next(in->tensor_data(tensors[static_cast<size_t>(i)])));
    }
    MINFER_RETURN_IF_ERROR(out.close());
  }
  return report;
}

}  // namespace minfer
