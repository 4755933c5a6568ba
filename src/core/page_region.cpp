#include "core/page_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace minfer {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's PMD page

}  // namespace

Result<std::unique_ptr<PageRegion>> PageRegion::create(size_t size, bool lazy, PageSize pages,
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
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  // Advice: an error leaves the system's default pages.
  (void)::madvise(region, region_size, pages == PageSize::kHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)pages;
#endif
  return std::unique_ptr<PageRegion>(new PageRegion(region, region_size));
}

PageRegion::~PageRegion() {
  ::munmap(data_, size_);
}

}  // namespace minfer
