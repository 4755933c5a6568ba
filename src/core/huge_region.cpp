#include "core/huge_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace minfer {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's PMD page

}  // namespace

Result<std::unique_ptr<HugePageRegion>> HugePageRegion::create(size_t size, bool lazy,
                                                               std::string_view what) {
  const size_t region_size = (size + kHugePage - 1) / kHugePage * kHugePage;
  const size_t reserve = region_size + kHugePage;  // room to slide to a boundary
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (lazy ? MAP_NORESERVE : 0);
  void* raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED) {
    return make_error(ErrorCode::kIo, "{}: cannot allocate {} bytes of memory: {}", what, reserve,
                      std::strerror(errno));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  // Give back the slack before and after the aligned region.
  if (aligned > start) ::munmap(raw, aligned - start);
  const size_t tail = start + reserve - (aligned + region_size);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + region_size), tail);
  uint8_t* region = reinterpret_cast<uint8_t*>(aligned);
#ifdef MADV_HUGEPAGE
  (void)::madvise(region, region_size, MADV_HUGEPAGE);  // advice: errors leave 4 KiB pages
#endif
  return std::unique_ptr<HugePageRegion>(new HugePageRegion(region, region_size));
}

HugePageRegion::~HugePageRegion() {
  ::munmap(data_, size_);
}

}  // namespace minfer
