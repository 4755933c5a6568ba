// A shared test model rewritten with changes: its metadata and tensors copied into a GgufWriter,
// `edit` applied, the image serialized (header-only; used by tests of several layers).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "test_util.h"

namespace minfer::test {

// The image of shared model `name` (metadata and tensors copied) after `edit`; with `keep_tensor`,
// only the tensors whose name it accepts are copied.
inline std::vector<uint8_t> edited_model(
    const std::string& name, const std::function<void(GgufWriter&)>& edit,
    const std::function<bool(const std::string&)>& keep_tensor = nullptr) {
  auto file = GgufFile::open(test_data_path("models/" + name));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return {};
  GgufWriter w;
  for (const GgufKeyValue& kv : (*file)->metadata()) w.set(kv.key, kv.value);
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    if (keep_tensor && !keep_tensor(t.name)) continue;
    const auto data = (*file)->tensor_data(t);
    EXPECT_TRUE(
        w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(data.begin(), data.end()))
            .is_ok());
  }
  edit(w);
  auto image = w.serialize();
  EXPECT_TRUE(image.is_ok()) << image.status().message();
  return image.is_ok() ? std::move(*image) : std::vector<uint8_t>{};
}

}  // namespace minfer::test
