#include <immintrin.h>

#include "kernels/read_rate.h"

namespace minfer::kernels::avx512 {

uint64_t sum_words_wide(const uint64_t* p, size_t n) {
  __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                  _mm512_setzero_si512()};
  for (size_t i = 0; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) s[k] = _mm512_add_epi64(s[k], _mm512_loadu_si512(p + i + 8 * k));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(s[0], s[1]), _mm512_add_epi64(s[2], s[3]))));
}

}  // namespace minfer::kernels::avx512
