// PageRegion: zero-filled anonymous memory on 2 MiB boundaries (the KV cache's pools in 4 KiB
// pages, --no-mmap weights in 2 MiB ones), and the error when the system cannot give it.
#include "core/page_region.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace minfer {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

TEST(PageRegion, StartsOnAHugePageIsWholePagesAndReadsAsZeros) {
  for (const bool lazy : {false, true}) {
    for (const PageSize pages : {PageSize::kHuge, PageSize::kSmall}) {
      auto region = PageRegion::create(3 * kHugePage / 2 + 1, lazy, pages, "[test] region");
      ASSERT_TRUE(region.is_ok()) << region.status().message();
      uint8_t* p = (*region)->data();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
      ASSERT_EQ((*region)->size(), 2 * kHugePage);
      for (const size_t at : {size_t{0}, kHugePage - 1, kHugePage, 2 * kHugePage - 1}) {
        EXPECT_EQ(p[at], 0) << "byte " << at << " lazy " << lazy;
        p[at] = 0x5a;  // writable to its last byte
        EXPECT_EQ(p[at], 0x5a);
      }
    }
  }
}

TEST(PageRegion, MoreThanTheAddressSpaceIsAnErrorNamingWhatItWasFor) {
  for (const bool lazy : {false, true}) {
    auto region =
        PageRegion::create(size_t{1} << 62, lazy, PageSize::kSmall, "[test] a huge table");
    ASSERT_FALSE(region.is_ok());
    EXPECT_EQ(region.status().code(), ErrorCode::kIo);
    const std::string& message = region.status().message();
    EXPECT_EQ(message.rfind("[test] a huge table: cannot allocate 4611686018429485056 bytes of "
                            "memory: ",
                            0),
              0u)
        << message;
  }
}

}  // namespace
}  // namespace minfer
