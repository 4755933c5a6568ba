// Choosing the kernel table: the best ISA the CPU runs, unless MINFER_FORCE_ISA names one.
#pragma once

#include <span>
#include <string_view>

#include "core/cpu_features.h"
#include "core/status.h"
#include "kernels/kernel_table.h"

namespace minfer::kernels {

// The ISAs this build has tables for, ref first and each after those it extends or is preferred
// to (best_isa takes the last available): ref, avx2, avxvnni, avx512, amx on x86-64 (avxvnni is
// AVX2 with vpdpbusd; AVX-512 has its own VNNI; amx is avx512 with AMX-INT8 tiles for the
// prefill GEMMs); ref, neon, dotprod, i8mm on ARM64; ref alone on other architectures.
std::span<const Isa> compiled_isas();

// Whether this build has a table for `isa`.
bool isa_compiled(Isa isa);

// The table of a compiled ISA, whether or not this CPU can run it (an ISA this build lacks
// stops the process: a programming error).
const KernelTable& table_for(Isa isa);

// "ref", "avx2", "avxvnni", "avx512", "amx", "neon", "dotprod", "i8mm".
const char* isa_name(Isa isa);

// Whether this build has `isa` and `features` can run its kernels.
bool isa_available(Isa isa, const CpuFeatures& features);

// The best ISA `features` can run.
Isa best_isa(const CpuFeatures& features);

// The table for a forced ISA name (empty: the best available). An unknown name or one the CPU
// cannot run is an kInvalidArgument / kUnsupported error naming it, where it came from
// (`source`: the environment variable or option that gave it) and what the CPU has.
Result<const KernelTable*> select_table(std::string_view forced, const CpuFeatures& features,
                                        std::string_view source = "MINFER_FORCE_ISA");

// Selects the active table once, from MINFER_FORCE_ISA and this CPU. Call at start-up to report
// a bad MINFER_FORCE_ISA as an error; later calls return the first call's outcome.
Status init_kernels();

// The active table. Initializes it if init_kernels() was not called; a bad MINFER_FORCE_ISA then
// stops the process with the error message (callers that want a Status call init_kernels()).
const KernelTable& active_table();

}  // namespace minfer::kernels
