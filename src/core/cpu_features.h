// What the CPU (and the operating system) lets us run. On x86-64: CPUID feature bits combined
// with the register state the OS saves on context switch (XCR0 via XGETBV). An instruction set is
// usable only when both say yes: a CPU with AVX-512 under an OS that does not save ZMM state must
// not run AVX-512 code (Intel SDM vol. 1 §13.3, "Enabling the XSAVE feature set"). On ARM64: the
// hardware capabilities the Linux kernel reports (getauxval AT_HWCAP / AT_HWCAP2), which are what
// it lets user space run. Detection fills only the fields of the architecture it runs on
// (cpu_features_x86.cpp, cpu_features_arm64.cpp).
#pragma once

#include <string>

namespace minfer {

struct CpuFeatures {
  // CPUID leaf 1 ECX.
  bool fma = false;
  bool f16c = false;
  // CPUID leaf 7 subleaf 0 EBX/ECX, leaf 7 subleaf 1 EAX.
  bool avx2 = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avxvnni = false;  // AVX-VNNI: vpdpbusd on ymm with a VEX encoding, no AVX-512 needed
  // CPUID leaf 7 subleaf 0 EDX: AMX tiles (bit 24) and their int8 dot products (bit 25).
  bool amx_tile = false;
  bool amx_int8 = false;
  // XCR0: the OS saves YMM state (bits 1, 2) / opmask and ZMM state (bits 5, 6, 7).
  bool os_saves_ymm = false;
  bool os_saves_zmm = false;
  // XCR0 bits 17, 18 (tile configuration and data state), and on Linux the process's permission
  // to use the tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once by
  // detection; a tile instruction without it faults).
  bool os_grants_amx = false;
  // ARM64 HWCAP_ASIMD (Advanced SIMD, "neon"), HWCAP_ASIMDDP (SDOT/UDOT), HWCAP2_I8MM (SMMLA).
  bool asimd = false;
  bool asimddp = false;
  bool i8mm = false;

  // What the kernels compiled for each ISA need (see src/kernels: avx2 is built with
  // -mavx2 -mfma -mf16c, avxvnni additionally with -mavxvnni, avx512 with F/BW/VL/DQ/VNNI).
  bool can_run_avx2() const { return avx2 && fma && f16c && os_saves_ymm; }
  bool can_run_avxvnni() const { return can_run_avx2() && avxvnni; }
  bool can_run_avx512() const {
    return can_run_avx2() && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni &&
           os_saves_zmm;
  }
  // The amx table is avx512's with AMX-INT8 tiles (src/kernels/amx, built with -mamx-tile
  // -mamx-int8 besides avx512's flags).
  bool can_run_amx() const { return can_run_avx512() && amx_tile && amx_int8 && os_grants_amx; }
};

// The features of the CPU this process runs on, detected once.
const CpuFeatures& cpu_features();

// Detects the features now (cpu_features() caches this).
CpuFeatures detect_cpu_features();

// The usable feature names, space-separated ("avx2 fma f16c avx512f …", "asimd asimddp i8mm");
// features the CPU has but the OS does not enable are left out, except AMX, which is named with
// the reason ("amx-int8(not granted by the OS: ...)"). "none" when there are none.
std::string cpu_feature_names(const CpuFeatures& features);

}  // namespace minfer
