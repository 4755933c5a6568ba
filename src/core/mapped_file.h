// A read-only image of a whole file in memory. Model weights stay in it (zero-copy): by default
// a memory map of the file, or (MapOptions::use_mmap false, llama.cpp's --no-mmap) a copy read
// into anonymous memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/non_copyable.h"
#include "core/page_region.h"
#include "core/status.h"

namespace minfer {

// How a file's bytes are held. Both ways ask for 2 MiB pages (transparent huge pages): a decode
// step streams every weight once, and with 4 KiB pages the TLB misses cost a good part of the
// streaming rate.
struct MapOptions {
  // true: map the file (pages come from the page cache and are shared between processes;
  // MADV_HUGEPAGE, and MADV_COLLAPSE where the kernel supports it for file pages). false: read it
  // into anonymous memory aligned to 2 MiB and advised MADV_HUGEPAGE (private to the process).
  bool use_mmap = true;
  // Lock the bytes in RAM (mlock) so they are never paged out. A failure (RLIMIT_MEMLOCK, see
  // `ulimit -l`) is a warning on stderr, not an error, as in llama.cpp.
  bool use_mlock = false;
};

class MappedFile : NonCopyable {
 public:
  // Maps (or reads) `path` read-only. An empty file maps to an empty span. Errors: a missing or
  // unreadable file, not a regular file, a map or read that fails, a file that shrinks while read.
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path,
                                                  const MapOptions& options = {});

  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Whether mlock succeeded (false when not asked for).
  bool locked() const { return locked_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size, void* map,
             std::unique_ptr<PageRegion> copy)
      : path_(std::move(path)), data_(data), size_(size), map_(map), copy_(std::move(copy)) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
  void* map_;                         // the file's map (size_ bytes), or nullptr
  std::unique_ptr<PageRegion> copy_;  // or the bytes read into memory (--no-mmap)
  bool locked_ = false;
};

}  // namespace minfer
