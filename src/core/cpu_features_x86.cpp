// CPU feature detection on x86-64: CPUID and XCR0 (core/cpu_features.h).
#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>

#include <cstdint>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace minfer {
namespace {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  // __get_cpuid_count checks the leaf against the maximum supported leaf and returns 0 past it.
  if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return {};
  return r;
}

bool bit(uint32_t value, int index) {
  return ((value >> index) & 1u) != 0;
}

// XGETBV with ECX = 0 reads XCR0. Written as inline assembly so this file needs no -mxsave;
// only called once CPUID says OSXSAVE is set (otherwise the instruction faults).
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Asks Linux for this process's permission to use the AMX tile data (XFEATURE_XTILEDATA = 18)
// with arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023): process-wide, idempotent, and needed before
// any thread runs a tile instruction (Linux 5.16+; older kernels and other systems: false).
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  const CpuidRegs leaf1 = cpuid(1, 0);
  const CpuidRegs leaf7 = cpuid(7, 0);
  const CpuidRegs leaf7_1 = cpuid(7, 1);

  f.fma = bit(leaf1.ecx, 12);
  f.f16c = bit(leaf1.ecx, 29);
  const bool osxsave = bit(leaf1.ecx, 27);
  const bool avx = bit(leaf1.ecx, 28);

  f.avx2 = bit(leaf7.ebx, 5);
  f.avx512f = bit(leaf7.ebx, 16);
  f.avx512dq = bit(leaf7.ebx, 17);
  f.avx512bw = bit(leaf7.ebx, 30);
  f.avx512vl = bit(leaf7.ebx, 31);
  f.avx512vnni = bit(leaf7.ecx, 11);
  f.avx512bf16 = bit(leaf7_1.eax, 5);
  f.avxvnni = bit(leaf7_1.eax, 4);
  f.amx_tile = bit(leaf7.edx, 24);
  f.amx_int8 = bit(leaf7.edx, 25);

  if (osxsave && avx) {
    const uint64_t xcr0 = read_xcr0();
    // Bit 1: SSE (XMM) state, bit 2: AVX (upper YMM) state.
    f.os_saves_ymm = (xcr0 & 0x6) == 0x6;
    // Bits 5, 6, 7: opmask registers, upper ZMM0-15, ZMM16-31.
    f.os_saves_zmm = f.os_saves_ymm && (xcr0 & 0xE0) == 0xE0;
    // Bits 17, 18: tile configuration and tile data; then the process's permission.
    const bool tile_state = (xcr0 & 0x60000) == 0x60000;
    f.os_grants_amx = f.amx_tile && tile_state && request_amx_permission();
  }
  return f;
}

}  // namespace minfer

#endif  // __x86_64__ || __i386__
