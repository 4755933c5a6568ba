// Split GGUF models (llama.cpp's gguf-split): one model stored as N files named
// `<prefix>-00001-of-0000N.gguf` … `<prefix>-0000N-of-0000N.gguf`. Every part holds
// split.no (u16, 0-based), split.count (u16, N) and split.tensors.count (i32, the tensors of all
// parts together); the first part holds the model's metadata. GgufFile::open loads a first part
// with its siblings.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace minfer {

inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsCountKey = "split.tensors.count";
inline constexpr int kSplitMaxParts = 65535;  // split.count is a u16

struct SplitName {
  std::string prefix;  // everything before "-0000k-of-0000N.gguf", directory included
  int number = 0;      // k, 1-based as in the name
  int count = 0;       // N
};

// Parses `<prefix>-<5 digits>-of-<5 digits>.gguf`; nullopt for any other name, a number of 0 or
// one past the count.
std::optional<SplitName> parse_split_name(std::string_view path);

// `<prefix>-<number, 5 digits>-of-<count, 5 digits>.gguf` (number 1-based).
std::string split_part_path(std::string_view prefix, int number, int count);

}  // namespace minfer
