#include "core/hash.h"

#include <cstring>

namespace minfer {

namespace {

// Odd 64-bit constants with well-mixed bits (the golden ratio's, and two from SplitMix64).
constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMulB = 0xbf58476d1ce4e5b9ull;
constexpr uint64_t kMulC = 0x94d049bb133111ebull;

uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

uint64_t load64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));  // little-endian hosts only (x86-64, as the engine)
  return v;
}

// One word into a lane: multiply-rotate-multiply, so each input bit reaches every output bit
// after the final mix.
uint64_t absorb(uint64_t lane, uint64_t word) {
  return rotl(lane ^ (word * kMulB), 29) * kMulA;
}

// SplitMix64's finalizer.
uint64_t avalanche(uint64_t z) {
  z = (z ^ (z >> 30)) * kMulB;
  z = (z ^ (z >> 27)) * kMulC;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t hash64(std::span<const uint8_t> bytes, uint64_t seed) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  // Four independent lanes over 32-byte stripes keep four multiplies in flight.
  uint64_t lanes[4] = {seed ^ kMulA, seed + kMulB, seed ^ kMulC, seed - kMulA};
  for (; n >= 32; n -= 32, p += 32) {
    for (int i = 0; i < 4; ++i) lanes[i] = absorb(lanes[i], load64(p + 8 * i));
  }
  uint64_t h = static_cast<uint64_t>(bytes.size()) * kMulC;
  for (int i = 0; i < 4; ++i) h = absorb(h, lanes[i]);
  for (; n >= 8; n -= 8, p += 8) h = absorb(h, load64(p));
  uint64_t tail = 0;
  if (n > 0) std::memcpy(&tail, p, n);
  h = absorb(h, tail ^ (static_cast<uint64_t>(n) << 56));
  return avalanche(h);
}

}  // namespace minfer
