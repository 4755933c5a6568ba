// Helpers for the kernel tests: the ISA tables this CPU can run, seeded random data, and
// tolerance checks that report the index and both values of the first mismatch.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/dispatch.h"

namespace minfer::kernels::test {

// The sizes every SIMD kernel is checked at: below, at and above the vector widths and a
// large odd tail.
inline const std::vector<int64_t> kSizes = {1, 31, 32, 33, 255, 256, 257, 4128};

// Whether the tests run under an emulator (qemu-aarch64 for a cross build: tests/CMakeLists.txt
// sets MINFER_TEST_EMULATED there), where float code runs hundreds of times slower: the heaviest
// tests then take fewer and smaller shapes, keeping every type, odd size and thread count.
inline bool under_emulation() {
  const char* v = std::getenv("MINFER_TEST_EMULATED");
  return v != nullptr && v[0] == '1';
}

// The SIMD tables this CPU runs (each test compares them with ref_table).
inline std::vector<const KernelTable*> simd_tables() {
  std::vector<const KernelTable*> out;
  for (Isa isa : compiled_isas()) {
    if (isa != Isa::kRef && isa_available(isa, cpu_features())) out.push_back(&table_for(isa));
  }
  return out;
}

// Every table this CPU runs, ref first.
inline std::vector<const KernelTable*> all_tables() {
  std::vector<const KernelTable*> out = {&ref_table};
  for (const KernelTable* t : simd_tables()) out.push_back(t);
  return out;
}

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// |a - b| <= abs_tol + rel_tol * |b| element by element.
inline ::testing::AssertionResult all_near(const std::vector<float>& actual,
                                           const std::vector<float>& expected, float rel_tol,
                                           float abs_tol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const float a = actual[i], e = expected[i];
    if (std::isnan(a) != std::isnan(e) ||
        !(std::fabs(a - e) <= abs_tol + rel_tol * std::fabs(e) || a == e)) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << actual.size() << ": got " << a << ", expected " << e
             << " (rel tol " << rel_tol << ", abs tol " << abs_tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace minfer::kernels::test
