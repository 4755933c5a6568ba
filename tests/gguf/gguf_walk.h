// Touches everything a parsed file exposes (every metadata value, nested arrays, every tensor's
// data span) so sanitizers see any out-of-bounds view the reader might have let through. Shared
// by the corrupt-file tests and the fuzz target.
#pragma once

#include <cstdint>

#include "gguf/gguf_file.h"

namespace minfer::test {

inline uint64_t walk_gguf_value(const GgufValue& v) {
  uint64_t h = static_cast<uint64_t>(v.type()) + v.raw_bits();
  if (const std::string* s = v.as_string()) {
    for (char c : *s) h = h * 31 + static_cast<uint8_t>(c);
  }
  if (v.is_array()) {
    h += v.array_size();
    for (uint8_t b : v.array_bytes()) h = h * 31 + b;
    if (const std::vector<std::string>* strings = v.as_string_array()) {
      for (const std::string& s : *strings) h = h * 31 + s.size() + (s.empty() ? 0 : s.back());
    }
    for (const GgufValue& inner : v.nested()) h += walk_gguf_value(inner);
  }
  h += v.describe().size();
  return h;
}

inline uint64_t walk_gguf(const GgufFile& file) {
  uint64_t h = 0;
  for (const GgufKeyValue& kv : file.metadata()) {
    h += kv.key.size() + walk_gguf_value(kv.value);
    if (file.find(kv.key) != &kv.value) h += 1;  // the index must point at this entry
  }
  for (const GgufTensorInfo& t : file.tensors()) {
    const std::span<const uint8_t> data = file.tensor_data(t);
    if (!data.empty()) h += data.front() + data.back();
    for (size_t i = 0; i < data.size(); i += 64) h += data[i];
    h += t.n_rows();
    if (file.find_tensor(t.name) != &t) h += 1;
  }
  return h;
}

}  // namespace minfer::test
