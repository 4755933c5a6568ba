// What the CPU (and the operating system) lets us run: CPUID feature bits combined with the
// register state the OS saves on context switch (XCR0 via XGETBV). An instruction set is usable
// only when both say yes: a CPU with AVX-512 under an OS that does not save ZMM state must not
// run AVX-512 code (Intel SDM vol. 1 §13.3, "Enabling the XSAVE feature set").
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
  // XCR0: the OS saves YMM state (bits 1, 2) / opmask and ZMM state (bits 5, 6, 7).
  bool os_saves_ymm = false;
  bool os_saves_zmm = false;

  // What the kernels compiled for each ISA need (see src/kernels: avx2 is built with
  // -mavx2 -mfma -mf16c, avx512 additionally with F/BW/VL/DQ/VNNI).
  bool can_run_avx2() const { return avx2 && fma && f16c && os_saves_ymm; }
  bool can_run_avx512() const {
    return can_run_avx2() && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni &&
           os_saves_zmm;
  }
};

// The features of the CPU this process runs on, detected once.
const CpuFeatures& cpu_features();

// Detects the features now (cpu_features() caches this).
CpuFeatures detect_cpu_features();

// The usable feature names, space-separated ("avx2 fma f16c avx512f …"); features the CPU has
// but the OS does not enable are left out. "none" when there are none.
std::string cpu_feature_names(const CpuFeatures& features);

}  // namespace minfer
