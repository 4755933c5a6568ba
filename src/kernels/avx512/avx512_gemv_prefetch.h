// Software prefetching for single-token matmuls (GEMV), which read every weight once and are
// bound by memory. Include only from AVX-512 translation units; everything is in an anonymous
// namespace (see avx512_math.h). The AVX2 GEMV (avx2/avx2_gemv_quant.h) uses it too: it issues
// only SSE prefetches.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::avx512 {
namespace {

// Asks for the weights ahead of the gemv loops: 8 KB ahead into L2, then again 2 KB ahead into
// L1. Each row's blocks of a chunk are read in one run, so memory is read in order; but between
// two loads of a line the kernels compute for longer than a plain read loop does, and the
// hardware prefetcher alone keeps too few lines in flight. Every line is asked for exactly once
// per level: a software prefetch holds an L1 fill buffer until its line arrives, even when the
// line is already on its way, so overlapping requests starve the loads (worse than no prefetch).
// The two distances were chosen by measurement (the commits that set them give the figures).
class GemvPrefetch {
 public:
  static constexpr size_t kFar = 8192;
  static constexpr size_t kNear = 2048;

  GemvPrefetch(const uint8_t* w, size_t bytes)
      : near_(line_of(w)), far_(line_of(w + kFar)), end_(w + bytes) {}

  // Asks for every line not yet asked for up to kNear / kFar past `read_end` (the end of the run
  // about to be read), as far as the weights go. After changing this, check that the object
  // still has its prefetcht1 instructions (objdump -d): GCC 12 at -O3 silently deleted
  // _mm_prefetch loops of a variant that returned early ahead of the loop.
  void advance(const uint8_t* read_end) {
    for (const uint8_t* want = clamp(read_end + kNear); near_ < want; near_ += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(near_), _MM_HINT_T0);
    }
    for (const uint8_t* want = clamp(read_end + kFar); far_ < want; far_ += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(far_), _MM_HINT_T1);
    }
  }

 private:
  static const uint8_t* line_of(const uint8_t* p) {
    return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63});
  }
  const uint8_t* clamp(const uint8_t* p) const { return p < end_ ? p : end_; }

  const uint8_t* near_;  // the next line to ask for into L1
  const uint8_t* far_;   // the next line to ask for into L2
  const uint8_t* end_;   // the weights' end
};

}  // namespace
}  // namespace minfer::kernels::avx512
