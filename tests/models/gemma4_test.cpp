// Gemma 4's cache layout on the tiny E2B-style file (../shared/models/gemma4-tiny-f32.gguf:
// 8 layers, the last 4 sharing layers 2 and 3's cells, sliding head dim 16, full 32): the
// sharing layers get no cells, and each kind's cells have its own shape.
#include <gtest/gtest.h>

#include <memory>

#include "engine/runtime.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

TEST(Gemma4, SharingLayersKeepNoCellsAndEachKindHasItsShape) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma4-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_layer, 8);
  EXPECT_EQ(c.n_cache_layers(), 4);
  EXPECT_EQ(c.kv_source(6), 2);  // sliding
  EXPECT_EQ(c.kv_source(7), 3);  // full
  engine::RuntimeOptions options;
  options.n_ctx = 32;
  options.cache_type = GgmlType::kF32;
  auto runtime = engine::Runtime::create(**model, options);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  const KvCache& cache = (*runtime)->cache();
  EXPECT_EQ(cache.config().n_layer, 4);  // layers 4..7 have no cells
  EXPECT_EQ(cache.head_dim(2), 16);
  EXPECT_EQ(cache.head_dim(3), 32);
  EXPECT_EQ(cache.n_head_kv(2), 1);
  // One position: two sliding layers of 1 head × (16 + 16) and two full ones of 1 × (32 + 32),
  // f32 cells.
  EXPECT_EQ(cache.cells_bytes(1), (2 * 32 + 2 * 64) * sizeof(float));
}

}  // namespace
}  // namespace minfer
