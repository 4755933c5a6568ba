#include "kernels/read_rate.h"

#include "core/cpu_features.h"

namespace minfer::kernels {
namespace {

uint64_t sum_words_plain(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (size_t k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

}  // namespace

uint64_t sum_words(ReadWidth width, const uint64_t* p, size_t n) {
  if (width == ReadWidth::kWidest) {
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    if (f.can_run_avx512()) return avx512::sum_words_wide(p, n);
    if (f.can_run_avx2()) return avx2::sum_words_wide(p, n);
#endif
  }
  return sum_words_plain(p, n);
}

}  // namespace minfer::kernels
