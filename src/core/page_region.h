// Anonymous memory for the big buffers that kernels stream through: weights read in with
// --no-mmap and the KV cache's pools (2 MiB pages: with 4 KiB pages a stream through them misses
// the TLB on every page, a 2 MiB page covers 512 of them; see kv/block_pool.h for the pools).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/non_copyable.h"
#include "core/status.h"

namespace minfer {

// The page size a region asks the kernel for.
enum class PageSize {
  kHuge,   // MADV_HUGEPAGE: 2 MiB pages where the kernel allows
  kSmall,  // MADV_NOHUGEPAGE: 4 KiB pages even where transparent huge pages are "always"
};

// A zero-filled anonymous region that starts on a 2 MiB boundary and is a multiple of 2 MiB
// long, advised for its page size before its first touch (the advice is only advice: where the
// kernel ignores it the region works the same). Memory is taken only as pages are first touched;
// with `lazy`, the region is not charged against the commit limit either (MAP_NORESERVE): a
// budget that is rarely filled, such as the KV cache's.
class PageRegion : NonCopyable {
 public:
  // Errors begin with `what` ("[kv] the cache's 8 blocks"), then the size and the system's
  // reason.
  static Result<std::unique_ptr<PageRegion>> create(size_t size, bool lazy, PageSize pages,
                                                    std::string_view what);
  ~PageRegion();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // at least the size asked for

  // Takes the memory of the pages that hold bytes [offset, offset + length) now (clamped to the
  // region), instead of at their first touch; their contents are unchanged. No other thread may
  // write those bytes meanwhile (without MADV_POPULATE_WRITE, Linux < 5.14, each page is touched
  // by writing back one of its bytes). Memory the system cannot give is left to the first touch.
  void populate(size_t offset, size_t length) const;

 private:
  PageRegion(uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t* data_;
  size_t size_;
};

}  // namespace minfer
