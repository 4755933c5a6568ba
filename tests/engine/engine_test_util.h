// Helpers the engine's tests share: token ids to feed, and the tiny model with a real tokenizer
// that scheduler tests run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// Ids in [3, n_vocab) from a fixed recurrence (no specials at the low ids).
inline std::vector<int32_t> some_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::vector<int32_t> out;
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out.push_back(static_cast<int32_t>(3 + (x >> 8) % static_cast<uint32_t>(n_vocab - 3)));
  }
  return out;
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// A model of ../shared/models and its tokenizer (a failure is a test failure, and leaves the
// pointers it could not fill null).
inline Loaded load_model_file(const std::string& file) {
  Loaded l;
  auto model = Model::load(test::test_data_path("models/" + file));
  EXPECT_TRUE(model.is_ok()) << file << ": " << model.status().message();
  if (!model.is_ok()) return l;
  l.model = std::move(model).value();
  auto tok = Tokenizer::from_gguf(l.model->file());
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  if (tok.is_ok()) l.tokenizer = std::move(tok).value();
  return l;
}

// qwen2.5-qwentok-tiny-q8_0: tiny weights, the real Qwen2.5 tokenizer.
inline Loaded load_tiny() {
  return load_model_file("qwen2.5-qwentok-tiny-q8_0.gguf");
}

}  // namespace minfer::engine
