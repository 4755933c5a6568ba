// Context shift (Session::shift_context, Runtime::shift_context): the shifted cache against a
// fresh prefill of the kept tokens at their new positions, and generation past n_ctx.
//
// The comparison is exact in exact arithmetic only where a token's K and V depend on nothing but
// the token and its position: the first layer. Deeper layers' cells also saw the discarded tokens
// (that is what a context shift gives up), so the models here are the shared tiny models cut to
// their first layer; their rope (plain NeoX, Llama 3 factors with adjacent pairs, YaRN, Gemma 3's
// sliding layer with its own base) is unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edited_model.h"
#include "engine/generate.h"
#include "engine/session.h"
#include "engine_test_util.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

struct ShiftCase {
  const char* model;  // in ../shared/models
  const char* arch;   // its GGUF architecture (the block_count key's prefix)
  GgmlType cell;
  float bound;  // on max |logit difference|; measured values in the comment of each group
};

// The shared model with only its first layer.
struct OneLayer {
  std::vector<uint8_t> bytes;  // the weights are views into them
  std::unique_ptr<Model> model;
};

OneLayer one_layer(const ShiftCase& c) {
  OneLayer out;
  const std::string arch = c.arch;
  out.bytes = test::edited_model(
      c.model, [&](GgufWriter& w) { w.set_scalar<uint32_t>(arch + ".block_count", 1); },
      [](const std::string& name) {
        return name.rfind("blk.", 0) != 0 || name.rfind("blk.0.", 0) == 0;
      });
  auto file = GgufFile::parse(out.bytes, c.model);
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return out;
  auto model = Model::from_file(std::move(file).value());
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  if (model.is_ok()) out.model = std::move(model).value();
  return out;
}

std::unique_ptr<Session> session_of(const Model& model, GgmlType cell) {
  SessionOptions o;
  o.n_ctx = 64;
  o.block_size = 8;
  o.cache_type = cell;
  o.n_threads = 1;
  auto s = Session::create(model, o);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

class ShiftedCache : public ::testing::TestWithParam<ShiftCase> {};

// A full context of 64 tokens shifted keeping 5 (29 discarded, 35 left), then one token decoded:
// its logits against a session that prefilled the 35 kept tokens at positions 0..34 and decoded
// the same token. Every kept key sits in a block cut at the kept boundary or moved across blocks.
TEST_P(ShiftedCache, NextLogitsMatchAFreshPrefillOfTheKeptTokens) {
  const ShiftCase& c = GetParam();
  const OneLayer m = one_layer(c);
  ASSERT_NE(m.model, nullptr);
  const int64_t n_vocab = m.model->config().n_vocab;
  const std::vector<int32_t> tokens = some_tokens(64, n_vocab, 11);
  const int32_t next = some_tokens(1, n_vocab, 12)[0];

  auto shifted = session_of(*m.model, c.cell);
  ASSERT_NE(shifted, nullptr);
  ASSERT_TRUE(shifted->set_prompt(tokens).is_ok());
  auto discarded = shifted->shift_context(5);
  ASSERT_TRUE(discarded.is_ok()) << discarded.status().message();
  EXPECT_EQ(discarded.value(), 29);
  ASSERT_EQ(shifted->n_past(), 35);
  std::vector<int32_t> kept(tokens.begin(), tokens.begin() + 5);
  kept.insert(kept.end(), tokens.begin() + 34, tokens.end());
  EXPECT_EQ(shifted->tokens(), kept);
  auto a = shifted->decode(next);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  const std::vector<float> after_shift(a.value().begin(), a.value().end());

  auto fresh = session_of(*m.model, c.cell);
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->set_prompt(kept).is_ok());
  auto b = fresh->decode(next);
  ASSERT_TRUE(b.is_ok()) << b.status().message();

  float max_diff = 0.0f;
  float max_abs = 0.0f;
  for (size_t i = 0; i < after_shift.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(after_shift[i] - b.value()[i]));
    max_abs = std::max(max_abs, std::fabs(b.value()[i]));
  }
  std::printf("[ shift    ] %s %s: max |d| %.3g (max |logit| %.3g)\n", c.model,
              std::string(kv_cell_type_name(c.cell)).c_str(), max_diff, max_abs);
  EXPECT_LE(max_diff, c.bound) << c.model << " " << kv_cell_type_name(c.cell);
}

// Bounds on max |d|, about 3x above what was measured on the ref, avx2 and avx512 tables (logits
// up to 13-15, Gemma 3's up to 265):
// f32 cells, only the rounding of the re-rotation: measured 9.8e-7 .. 9.5e-6, bound 3e-5.
// f16 and q8_0 cells: the re-rotated key is rounded to the cell type a second time (converted,
// rotated, stored) where the fresh prefill rounds it once: f16 measured 8.6e-4 .. 1.3e-3, bound
// 5e-3; q8_0 measured 1.7e-2 .. 3.6e-2, bound 0.1. Without the re-rotation max |d| is 1.8 .. 3.2.
INSTANTIATE_TEST_SUITE_P(
    Models, ShiftedCache,
    ::testing::Values(ShiftCase{"qwen2-tiny-f32.gguf", "qwen2", GgmlType::kF32, 3e-5f},
                      ShiftCase{"llama3-tiny-f32.gguf", "llama", GgmlType::kF32, 3e-5f},
                      ShiftCase{"qwen2-yarn-tiny-f32.gguf", "qwen2", GgmlType::kF32, 3e-5f},
                      ShiftCase{"gemma3-tiny-f32.gguf", "gemma3", GgmlType::kF32, 3e-5f},
                      ShiftCase{"qwen2-tiny-f32.gguf", "qwen2", GgmlType::kF16, 5e-3f},
                      ShiftCase{"llama3-tiny-f32.gguf", "llama", GgmlType::kF16, 5e-3f},
                      ShiftCase{"qwen2-yarn-tiny-f32.gguf", "qwen2", GgmlType::kF16, 5e-3f},
                      ShiftCase{"gemma3-tiny-f32.gguf", "gemma3", GgmlType::kF16, 5e-3f},
                      ShiftCase{"qwen2-tiny-f32.gguf", "qwen2", GgmlType::kQ8_0, 1e-1f},
                      ShiftCase{"llama3-tiny-f32.gguf", "llama", GgmlType::kQ8_0, 1e-1f},
                      ShiftCase{"qwen2-yarn-tiny-f32.gguf", "qwen2", GgmlType::kQ8_0, 1e-1f},
                      ShiftCase{"gemma3-tiny-f32.gguf", "gemma3", GgmlType::kQ8_0, 1e-1f}));

TEST(ContextShift, RefusesAKeepThatLeavesNothingToDiscard) {
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto session = session_of(**model, GgmlType::kF32);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->set_prompt(some_tokens(10, 1000, 3)).is_ok());
  for (const int64_t keep : {-1, 9, 10, 100}) {
    auto r = session->shift_context(keep);
    ASSERT_FALSE(r.is_ok()) << keep;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("context shift keeping"), std::string::npos)
        << r.status().message();
  }
  EXPECT_EQ(session->n_past(), 10);
  auto r = session->shift_context(8);  // 2 after the kept: 1 discarded
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value(), 1);
  EXPECT_EQ(session->n_past(), 9);
}

// Three times the context, end-of-generation tokens banned: every token comes, with a shift each
// time the context fills (the 3-layer model, f16 cells as by default).
TEST(ContextShift, GenerationGoesOnPastTheContextAndChecksTheKeep) {
  const Loaded l = load_tiny();
  ASSERT_NE(l.model, nullptr);
  auto session = session_of(*l.model, GgmlType::kF16);
  ASSERT_NE(session, nullptr);
  GenerateOptions g;
  g.sampling.temperature = 0.0f;
  for (int32_t id = 0; id < static_cast<int32_t>(l.model->config().n_vocab); ++id) {
    if (l.tokenizer->is_eog(id)) g.sampling.logit_bias.emplace_back(id, -INFINITY);
  }
  g.n_predict = 192;
  g.context_shift = true;
  g.n_keep = 4;
  const std::vector<int32_t> prompt = l.tokenizer->encode("Once upon a time", true, false);
  auto r = generate(*session, *l.tokenizer, prompt, g, nullptr);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value().finish, FinishReason::kLength);
  EXPECT_EQ(r.value().metrics.n_generated, 192);
  EXPECT_GE(r.value().metrics.n_shifts, 5);
  EXPECT_LE(session->n_past(), 64);
  // The kept prompt tokens are still at the start of what the session holds.
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.begin() + 4, session->tokens().begin()));

  // Without the flag the same run ends at the context.
  g.context_shift = false;
  auto stopped = generate(*session, *l.tokenizer, prompt, g, nullptr);
  ASSERT_TRUE(stopped.is_ok()) << stopped.status().message();
  EXPECT_EQ(stopped.value().finish, FinishReason::kContext);
  EXPECT_EQ(stopped.value().metrics.n_shifts, 0);

  // A keep that leaves no 2 positions of the context to shift is an error before anything runs.
  g.context_shift = true;
  g.n_keep = 63;
  auto refused = generate(*session, *l.tokenizer, prompt, g, nullptr);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("expected at most 62"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace minfer::engine
