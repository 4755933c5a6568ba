// A byte-level GGUF builder for tests, written from the GGUF spec independently of GgufWriter:
// it can emit what the writer refuses to (duplicate names, bad offsets, unknown type ids), and
// comparing its bytes with the writer's checks the writer's encoding.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace minfer::test {

class RawGguf {
 public:
  RawGguf& u8(uint8_t v) { return put(&v, 1); }
  RawGguf& u16(uint16_t v) { return put(&v, 2); }
  RawGguf& u32(uint32_t v) { return put(&v, 4); }
  RawGguf& u64(uint64_t v) { return put(&v, 8); }
  RawGguf& f32(float v) { return put(&v, 4); }
  RawGguf& f64(double v) { return put(&v, 8); }
  RawGguf& text(std::string_view s) {
    u64(s.size());
    return put(s.data(), s.size());
  }
  RawGguf& put(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }
  RawGguf& pad_to(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }

  // "GGUF", version, tensor count, key/value count (little-endian).
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put("GGUF", 4);
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
  }
  // A key followed by its value type id; the caller appends the value.
  RawGguf& key(std::string_view name, uint32_t type_id) {
    text(name);
    return u32(type_id);
  }
  RawGguf& kv_u32(std::string_view name, uint32_t v) { return key(name, 4).u32(v); }
  RawGguf& kv_string(std::string_view name, std::string_view v) { return key(name, 8).text(v); }
  // A tensor info record: name, n_dims, dims, ggml type id, offset into the data section.
  RawGguf& tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type_id,
                  uint64_t offset) {
    text(name);
    u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    u32(type_id);
    return u64(offset);
  }

  std::vector<uint8_t> bytes;
};

}  // namespace minfer::test
