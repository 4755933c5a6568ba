// Shared helpers of the tokenizer tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::test {

// Opens a GGUF file under the shared test data and builds its tokenizer (fails the test on error).
inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& relative_path) {
  auto file = GgufFile::open(test_data_path(relative_path));
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  if (!tok.is_ok()) return nullptr;
  return std::move(tok).value();
}

// Tokenizers are slow-ish to build (150 K tokens): share them across the tests of a program.
inline const Tokenizer* shared_tokenizer(const std::string& relative_path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(relative_path);
  if (it == cache.end()) it = cache.emplace(relative_path, load_tokenizer(relative_path)).first;
  return it->second.get();
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// A text made printable for a failure message.
inline std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace minfer::test
