// One forward over a few tokens, for the tests that compare two models' (or two loads') logits.
// Header-only: the engine and models test programs link the engine; test_util does not.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime.h"
#include "graph/batch.h"
#include "models/model.h"

namespace minfer::test {

// The logits of `tokens` at positions 0, 1, … in one step, every row an output:
// [tokens.size(), n_vocab]; empty (and a test failure) when the runtime or the step fails.
inline std::vector<float> forward_logits(const Model& model, std::span<const int32_t> tokens,
                                         int n_threads = 2) {
  engine::RuntimeOptions options;
  options.n_threads = n_threads;
  options.n_ctx = static_cast<int64_t>(tokens.size());
  auto runtime = engine::Runtime::create(model, options);
  EXPECT_TRUE(runtime.is_ok()) << runtime.status().message();
  if (!runtime.is_ok()) return {};
  Batch batch;
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.add(tokens[i], static_cast<int32_t>(i), 0, true);
  }
  auto logits = (*runtime)->step(batch);
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  if (!logits.is_ok()) return {};
  return {logits->begin(), logits->end()};
}

}  // namespace minfer::test
