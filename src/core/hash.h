// A fast 64-bit hash of bytes, for checksums of files we write (state files) and fingerprints of
// what we read. Not cryptographic: it finds corruption and tells apart different inputs by
// accident, not by an attacker's design. The value is the same on every little-endian host and
// build, so it may be stored in files.
#pragma once

#include <cstdint>
#include <span>

namespace minfer {

uint64_t hash64(std::span<const uint8_t> bytes, uint64_t seed = 0);

}  // namespace minfer
