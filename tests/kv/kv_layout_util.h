// Layouts for the tests of one part of the cache alone (block pool, block tables): blocks of 4
// positions of f32 rows of 4, a context of 64 positions and a budget of 16 blocks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/kv_layout.h"

namespace minfer {

// swa_layers and window as KvCacheConfig has them (empty, 0: every layer global).
inline KvLayout small_kv_layout(int64_t n_layer, int64_t n_head_kv,
                                std::vector<bool> swa_layers = {}, int64_t window = 0) {
  KvCacheConfig c;
  c.n_layer = n_layer;
  c.n_head_kv = n_head_kv;
  c.head_dim = c.head_dim_v = 4;
  c.block_size = 4;
  c.n_ctx = 64;
  c.max_blocks = 16;
  c.swa_layers = std::move(swa_layers);
  c.window = window;
  auto layout = KvLayout::create(c);
  EXPECT_TRUE(layout.is_ok()) << layout.status().message();
  return std::move(layout).value();
}

}  // namespace minfer
