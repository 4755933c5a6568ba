// Anonymous memory in 2 MiB pages (transparent huge pages) for the big buffers that kernels stream
// through: weights read in with --no-mmap, the KV cache. With 4 KiB pages a stream through them
// misses the TLB on every page; a 2 MiB page covers 512 of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/non_copyable.h"
#include "core/status.h"

namespace minfer {

// A zero-filled anonymous region that starts on a 2 MiB boundary and is a whole number of 2 MiB
// pages long, advised MADV_HUGEPAGE before its first touch (so its faults take huge pages where
// the kernel allows; otherwise it has 4 KiB pages and works the same). Memory is taken only as
// pages are first touched; with `lazy`, the region is not charged against the commit limit
// either (MAP_NORESERVE): a budget that is rarely filled, such as the KV cache's.
class HugePageRegion : NonCopyable {
 public:
  // Errors begin with `what` ("[kv] the cache's 8 blocks"), then the size and the system's
  // reason.
  static Result<std::unique_ptr<HugePageRegion>> create(size_t size, bool lazy,
                                                        std::string_view what);
  ~HugePageRegion();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // at least the size asked for

 private:
  HugePageRegion(uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t* data_;
  size_t size_;
};

}  // namespace minfer
