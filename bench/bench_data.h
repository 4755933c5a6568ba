// The shared test data the benchmarks read: $MINFER_TEST_DATA, else ../shared next to the source
// tree.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace minfer::bench {

inline std::string data_dir() {
  if (const char* env = std::getenv("MINFER_TEST_DATA")) return env;
  return (std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared").string();
}

// The Qwen3 tokenizer (151,936 tokens, models/qwen3-vocab.gguf), loaded once; nullptr when the
// data is missing.
inline const Tokenizer* qwen3_tokenizer() {
  static std::unique_ptr<GgufFile> file;
  static std::unique_ptr<Tokenizer> tok = []() -> std::unique_ptr<Tokenizer> {
    auto f = GgufFile::open(data_dir() + "/models/qwen3-vocab.gguf");
    if (!f.is_ok()) return nullptr;
    file = std::move(f).value();
    auto t = Tokenizer::from_gguf(*file);
    return t.is_ok() ? std::move(t).value() : nullptr;
  }();
  return tok.get();
}

}  // namespace minfer::bench
