// What both architectures share: the cached detection and the feature names.
#include "core/cpu_features.h"

namespace minfer {

const CpuFeatures& cpu_features() {
  static const CpuFeatures kFeatures = detect_cpu_features();
  return kFeatures;
}

std::string cpu_feature_names(const CpuFeatures& f) {
  std::string out;
  auto add = [&out](bool present, const char* name) {
    if (!present) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  const bool ymm = f.os_saves_ymm;
  const bool zmm = f.os_saves_zmm;
  add(ymm && f.avx2, "avx2");
  add(ymm && f.fma, "fma");
  add(ymm && f.f16c, "f16c");
  add(ymm && f.avxvnni, "avxvnni");
  add(zmm && f.avx512f, "avx512f");
  add(zmm && f.avx512dq, "avx512dq");
  add(zmm && f.avx512bw, "avx512bw");
  add(zmm && f.avx512vl, "avx512vl");
  add(zmm && f.avx512vnni, "avx512vnni");
  add(zmm && f.avx512bf16, "avx512bf16");
  add(f.amx_tile && f.os_grants_amx, "amx-tile");
  add(f.amx_int8 && f.os_grants_amx, "amx-int8");
  add(f.amx_tile && f.amx_int8 && !f.os_grants_amx,
      "amx-int8(not granted by the OS: XCR0 tile state or arch_prctl ARCH_REQ_XCOMP_PERM)");
  add(f.asimd, "asimd");
  add(f.asimddp, "asimddp");
  add(f.i8mm, "i8mm");
  return out.empty() ? std::string("none") : out;
}

}  // namespace minfer
