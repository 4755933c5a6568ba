// CPU feature detection on ARM64 Linux: the hardware capabilities the kernel reports in the
// auxiliary vector (core/cpu_features.h). Bit numbers: the kernel's uapi asm/hwcap.h.
#include "core/cpu_features.h"

#if defined(__aarch64__)

#include <sys/auxv.h>

#include <cstdint>

namespace minfer {
namespace {

constexpr uint64_t kHwcapAsimd = uint64_t{1} << 1;     // HWCAP_ASIMD
constexpr uint64_t kHwcapAsimdDp = uint64_t{1} << 20;  // HWCAP_ASIMDDP
constexpr uint64_t kHwcap2I8mm = uint64_t{1} << 13;    // HWCAP2_I8MM

}  // namespace

CpuFeatures detect_cpu_features() {
  const uint64_t hwcap = getauxval(AT_HWCAP);
  const uint64_t hwcap2 = getauxval(AT_HWCAP2);
  CpuFeatures f;
  f.asimd = (hwcap & kHwcapAsimd) != 0;
  f.asimddp = (hwcap & kHwcapAsimdDp) != 0;
  f.i8mm = (hwcap2 & kHwcap2I8mm) != 0;
  return f;
}

}  // namespace minfer

#endif  // __aarch64__
