// AlignedVector<T>: a std::vector whose storage starts on a cache line (64 bytes), for buffers
// that SIMD kernels read and write a vector at a time; AlignedArray<T> the same for an array
// left uninitialized. operator new gives 16 bytes; a 64-byte vector load from a buffer 16 bytes
// off a line crosses into the next line once every load, and the attention kernels ran 5-9%
// slower on such buffers than on aligned ones.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace minfer {

inline constexpr std::size_t kCacheLine = 64;

// `bytes` of storage starting on a cache line; freed by CacheLineDelete.
inline void* allocate_cache_lines(std::size_t bytes) {
  return ::operator new (bytes, std::align_val_t{kCacheLine});
}

struct CacheLineDelete {
  void operator()(void* p) const { ::operator delete (p, std::align_val_t{kCacheLine}); }
};

template <typename T>
struct CacheLineAllocator {
  using value_type = T;

  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) {}

  T* allocate(std::size_t n) { return static_cast<T*>(allocate_cache_lines(n * sizeof(T))); }
  void deallocate(T* p, std::size_t /*n*/) { CacheLineDelete{}(p); }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>& /*other*/) const {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

template <typename T>
using AlignedArray = std::unique_ptr<T[], CacheLineDelete>;

// n elements, uninitialized (trivial types only: their lifetime begins with the storage).
template <typename T>
AlignedArray<T> make_aligned_array_for_overwrite(std::size_t n) {
  static_assert(std::is_trivial_v<T>);
  return AlignedArray<T>(static_cast<T*>(allocate_cache_lines(n * sizeof(T))));
}

}  // namespace minfer
