// A read-only memory map of a whole file. Model weights stay in this map (zero-copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/non_copyable.h"
#include "core/status.h"

namespace minfer {

class MappedFile : NonCopyable {
 public:
  // Maps `path` read-only. An empty file maps to an empty span.
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);

  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace minfer
