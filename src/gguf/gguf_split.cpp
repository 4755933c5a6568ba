#include "gguf/gguf_split.h"

#include <fmt/format.h>

#include <filesystem>
#include <unordered_set>

#include "gguf/gguf_file.h"

namespace minfer {

namespace {

std::optional<int> parse_five_digits(std::string_view s) {
  if (s.size() != 5) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Reads an integer split key of `file`, which must lie in [lo, hi].
Result<int64_t> split_key(const GgufFile& file, std::string_view key, int64_t lo, int64_t hi) {
  MINFER_ASSIGN_OR_RETURN(const int64_t v, file.get_integer(key));
  if (v < lo || v > hi) {
    return make_error(ErrorCode::kCorrupt, "[gguf] '{}': key '{}' is {}, expected {} to {}",
                      file.name(), key, v, lo, hi);
  }
  return v;
}

}  // namespace

std::optional<SplitName> parse_split_name(std::string_view path) {
  constexpr std::string_view kSuffix = ".gguf";
  // "-00001-of-00003.gguf" is 20 characters.
  if (path.size() < 20 || !path.ends_with(kSuffix)) return std::nullopt;
  const std::string_view tail = path.substr(path.size() - 20);
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
  const std::optional<int> number = parse_five_digits(tail.substr(1, 5));
  const std::optional<int> count = parse_five_digits(tail.substr(10, 5));
  if (!number || !count || *number < 1 || *number > *count) return std::nullopt;
  return SplitName{std::string(path.substr(0, path.size() - 20)), *number, *count};
}

std::string split_part_path(std::string_view prefix, int number, int count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, number, count);
}

Status GgufFile::open_split_parts(const MapOptions& map) {
  if (!has(kSplitCountKey)) return Status::ok();
  MINFER_ASSIGN_OR_RETURN(const int64_t count, split_key(*this, kSplitCountKey, 1, kSplitMaxParts));
  MINFER_ASSIGN_OR_RETURN(const int64_t no, split_key(*this, kSplitNoKey, 0, count - 1));
  const std::optional<SplitName> split = parse_split_name(name_);
  if (no != 0) {
    const std::string first =
        split ? split_part_path(split->prefix, 1, static_cast<int>(count)) : "its first part";
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf] '{}' is part {} of {} of a split model: open the first part '{}'",
                      name_, no + 1, count, first);
  }
  if (count == 1) return Status::ok();
  if (!split || split->count != count) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf] '{}': split.count is {}, but the name does not end in "
                      "'-00001-of-{:05d}.gguf', so its other parts cannot be found",
                      name_, count, count);
  }
  std::unordered_set<std::string> names;
  for (const GgufTensorInfo& t : tensors_) names.insert(t.name);
  for (int i = 1; i < count; ++i) {
    const std::string path = split_part_path(split->prefix, i + 1, static_cast<int>(count));
    if (!std::filesystem::exists(path)) {
      return make_error(ErrorCode::kNotFound, "[gguf] '{}': part {} of {} '{}' is missing", name_,
                        i + 1, count, path);
    }
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> part, open_one(path, map));
    MINFER_ASSIGN_OR_RETURN(const int64_t part_count,
                            split_key(*part, kSplitCountKey, 1, kSplitMaxParts));
    MINFER_ASSIGN_OR_RETURN(const int64_t part_no,
                            split_key(*part, kSplitNoKey, 0, kSplitMaxParts));
    if (part_count != count || part_no != i) {
      return make_error(ErrorCode::kCorrupt,
                        "[gguf] '{}': expected part {} of {} (split.no {}, split.count {}), got "
                        "split.no {}, split.count {}",
                        path, i + 1, count, i, count, part_no, part_count);
    }
    for (GgufTensorInfo t : part->tensors_) {
      if (!names.insert(t.name).second) {
        return make_error(ErrorCode::kCorrupt,
                          "[gguf] '{}': tensor '{}' is also in an earlier part of the split model",
                          path, gguf_escape(t.name));
      }
      t.part = static_cast<uint16_t>(parts_.size() + 1);
      tensor_index_.emplace(t.name, tensors_.size());
      tensors_.push_back(std::move(t));
    }
    parts_.push_back(std::move(part));
  }
  MINFER_ASSIGN_OR_RETURN(const int64_t n_tensors,
                          split_key(*this, kSplitTensorsCountKey, 0, 1ll << 31));
  if (static_cast<uint64_t>(n_tensors) != tensors_.size()) {
    return make_error(ErrorCode::kCorrupt,
                      "[gguf] '{}': split.tensors.count is {}, but the {} parts hold {} tensors",
                      name_, n_tensors, count, tensors_.size());
  }
  return Status::ok();
}

}  // namespace minfer
