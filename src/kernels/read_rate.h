// Sums of memory words read as fast as this CPU reads: what a streaming read bandwidth is
// measured with (minfer bench --roofline, minfer_bench_kernels), so that a roofline is the
// machine's best read rate rather than one way of reading. Which way is best depends on the
// machine: wide vector loads on some (Intel, where plain 64-bit loads reach less than the
// decode kernels do), plain loads on others (Zen 5, where AVX-512 loads read slower).
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::kernels {

enum class ReadWidth {
  kPlain,   // 64-bit words in eight independent chains
  kWidest,  // the widest vector loads the CPU has (AVX-512, AVX2), four independent sums
};

// The sum of words [0, n) of p, n a multiple of 32, read by `width` (kWidest falls back to
// kPlain on a CPU without AVX2).
uint64_t sum_words(ReadWidth width, const uint64_t* p, size_t n);

namespace avx2 {
uint64_t sum_words_wide(const uint64_t* p, size_t n);
}
namespace avx512 {
uint64_t sum_words_wide(const uint64_t* p, size_t n);
}

}  // namespace minfer::kernels
