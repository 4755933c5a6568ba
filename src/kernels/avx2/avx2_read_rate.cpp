#include <immintrin.h>

#include "kernels/read_rate.h"

namespace minfer::kernels::avx2 {

uint64_t sum_words_wide(const uint64_t* p, size_t n) {
  __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (size_t i = 0; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k) {
      s[k] = _mm256_add_epi64(s[k],
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4 * k)));
    }
  }
  alignas(32) uint64_t lanes[4];  // [lane]
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3])));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace minfer::kernels::avx2
