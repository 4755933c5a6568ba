// The words a read-bandwidth probe sums (kernels/read_rate.h) are all read: both widths give the
// exact sum, so neither can skip memory and report a rate it did not read.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/read_rate.h"

namespace minfer::kernels {
namespace {

TEST(ReadRate, EveryWidthSumsEveryWord) {
  std::mt19937_64 rng(7);
  for (size_t n : {size_t{32}, size_t{64}, size_t{4096} + 32}) {
    std::vector<uint64_t> words(n);  // [n]
    for (uint64_t& w : words) w = rng();
    const uint64_t expected = std::accumulate(words.begin(), words.end(), uint64_t{0});
    for (ReadWidth width : {ReadWidth::kPlain, ReadWidth::kWidest}) {
      EXPECT_EQ(sum_words(width, words.data(), n), expected) << n;
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
