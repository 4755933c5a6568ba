#include "core/page_region.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace minfer {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's PMD page
constexpr size_t kSmallPage = size_t{4} << 10;

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

void PageRegion::populate(size_t offset, size_t length) const {
  if (offset >= size_) return;
  const size_t end = offset + std::min(length, size_ - offset);
  const size_t first_page = offset / kSmallPage * kSmallPage;
#ifdef MADV_POPULATE_WRITE
  if (::madvise(data_ + first_page, end - first_page, MADV_POPULATE_WRITE) == 0) return;
  if (errno != EINVAL) return;  // out of memory (ENOMEM) or interrupted: left to the first touch
#endif
  // A kernel without MADV_POPULATE_WRITE: a write to each page, of the byte it holds.
  for (size_t at = offset; at < end; at = (at / kSmallPage + 1) * kSmallPage) {
    volatile uint8_t* byte = data_ + at;
    *byte = *byte;
  }
}

PageRegion::~PageRegion() {
  ::munmap(data_, size_);
}

}  // namespace minfer
