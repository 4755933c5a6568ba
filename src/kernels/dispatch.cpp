#include "kernels/dispatch.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"
#if defined(__x86_64__)
#include "kernels/avx512/avx512_kernels.h"
#endif

namespace minfer::kernels {

#if defined(__x86_64__)
bool avx512::cpu_has_avx512bf16() {
  return cpu_features().avx512bf16;
}
#endif

std::span<const Isa> compiled_isas() {
#if defined(__x86_64__)
  static constexpr Isa kIsas[] = {Isa::kRef, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx};
#elif defined(__aarch64__)
  static constexpr Isa kIsas[] = {Isa::kRef, Isa::kNeon, Isa::kDotprod, Isa::kI8mm};
#else
  static constexpr Isa kIsas[] = {Isa::kRef};
#endif
  return kIsas;
}

bool isa_compiled(Isa isa) {
  for (Isa compiled : compiled_isas()) {
    if (compiled == isa) return true;
  }
  return false;
}

const KernelTable& table_for(Isa isa) {
  MINFER_CHECK(isa_compiled(isa), "table_for: this build has no table for the ISA");
#if defined(__x86_64__)
  switch (isa) {
    case Isa::kAvx2:
      return avx2_table;
    case Isa::kAvxVnni:
      return avxvnni_table;
    case Isa::kAvx512:
      return avx512_table;
    case Isa::kAmx:
      return amx_table;
    default:
      break;
  }
#elif defined(__aarch64__)
  switch (isa) {
    case Isa::kNeon:
      return neon_table;
    case Isa::kDotprod:
      return dotprod_table;
    case Isa::kI8mm:
      return i8mm_table;
    default:
      break;
  }
#endif
  return ref_table;
}

const char* isa_name(Isa isa) {
  return table_for(isa).name;
}

bool isa_available(Isa isa, const CpuFeatures& features) {
  if (!isa_compiled(isa)) return false;
  switch (isa) {
    case Isa::kAvx2:
      return features.can_run_avx2();
    case Isa::kAvxVnni:
      return features.can_run_avxvnni();
    case Isa::kAvx512:
      return features.can_run_avx512();
    case Isa::kAmx:
      return features.can_run_amx();
    case Isa::kNeon:
      return features.asimd;
    case Isa::kDotprod:
      return features.asimd && features.asimddp;
    case Isa::kI8mm:
      return features.asimd && features.asimddp && features.i8mm;
    case Isa::kRef:
      break;
  }
  return true;
}

Isa best_isa(const CpuFeatures& features) {
  // compiled_isas() lists ref first and each ISA after the ones it extends: the last available
  // is the best (ref is always available).
  const std::span<const Isa> isas = compiled_isas();
  for (auto it = isas.rbegin(); it != isas.rend(); ++it) {
    if (isa_available(*it, features)) return *it;
  }
  return Isa::kRef;
}

namespace {

// "ref, avx2, avxvnni, avx512, amx": the names MINFER_FORCE_ISA accepts in this build.
std::string compiled_isa_names() {
  std::string out;
  for (Isa isa : compiled_isas()) {
    if (!out.empty()) out += ", ";
    out += isa_name(isa);
  }
  return out;
}

}  // namespace

Result<const KernelTable*> select_table(std::string_view forced, const CpuFeatures& features,
                                        std::string_view source) {
  if (forced.empty()) return &table_for(best_isa(features));
  for (Isa isa : compiled_isas()) {
    if (forced != isa_name(isa)) continue;
    if (!isa_available(isa, features)) {
      return make_error(ErrorCode::kUnsupported,
                        "[kernels] {}={}: this CPU cannot run it (CPU features: {}; "
                        "best available: {})",
                        source, forced, cpu_feature_names(features), isa_name(best_isa(features)));
    }
    return &table_for(isa);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "[kernels] {}='{}' is not an ISA: expected one of {} "
                    "(CPU features: {}; best available: {})",
                    source, forced, compiled_isa_names(), cpu_feature_names(features),
                    isa_name(best_isa(features)));
}

namespace {

struct ActiveSelection {
  const KernelTable* table = nullptr;
  Status status;
};

const ActiveSelection& active_selection() {
  // A function-local static: thread-safe one-time initialization.
  static const ActiveSelection kSelection = [] {
    const char* env = std::getenv("MINFER_FORCE_ISA");
    Result<const KernelTable*> selected =
        select_table(env != nullptr ? std::string_view(env) : std::string_view(), cpu_features());
    ActiveSelection s;
    if (selected.is_ok()) {
      s.table = *selected;
    } else {
      s.status = selected.status();
    }
    return s;
  }();
  return kSelection;
}

}  // namespace

Status init_kernels() {
  return active_selection().status;
}

const KernelTable& active_table() {
  const ActiveSelection& s = active_selection();
  if (s.table == nullptr) {
    std::fprintf(stderr, "minfer: %s\n", s.status.message().c_str());
    std::abort();
  }
  return *s.table;
}

}  // namespace minfer::kernels
