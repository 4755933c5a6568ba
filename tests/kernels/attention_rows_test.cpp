// Attention's scores over q8_0 cells (kernels/attention_rows.h): the query rows quantized once
// (quantize_queries) and each cell scored by the Q8_0 matmul tile, as llama.cpp's CPU flash
// attention scores q8_0 keys. Every table gives ref's bits, and ref's are the definition:
// ref::vec_dot_q8_0_q8_0 of the cell and the quantized row, times the scale.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/attention_rows.h"
#include "kernels/ref/ref_dot.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {
namespace {

using test::all_tables;
using test::random_floats;

constexpr auto kQ8CellSlot = static_cast<size_t>(GgmlType::kQ8_0);
constexpr int64_t kQ8BlockBytes = 34;  // a q8_0 block: f16 scale, 32 int8 quants
constexpr float kScoreScale = 0.125f;

// n cells of dim values, as the cache holds them: rows of dim / 32 blocks back to back, written
// by ref's cell converter, starting 2 bytes into the buffer (a block's cells lie at any even
// offset of the pool).
struct Q8Cells {
  std::vector<uint8_t> bytes;
  int64_t row_bytes;
  const uint8_t* data() const { return bytes.data() + 2; }
};

Q8Cells make_cells(int64_t n, int64_t dim, uint32_t seed) {
  Q8Cells c{std::vector<uint8_t>(static_cast<size_t>(2 + n * dim / 32 * kQ8BlockBytes)),
            dim / 32 * kQ8BlockBytes};
  // Keys of a growing scale along the row, as roped keys vary: blocks of different d.
  std::vector<float> keys = random_floats(n * dim, seed, -1.0f, 1.0f);
  for (int64_t i = 0; i < n * dim; ++i) keys[static_cast<size_t>(i)] *= 0.5f + 0.01f * (i % dim);
  for (int64_t j = 0; j < n; ++j) {
    ref_table.cells_from_f32[kQ8CellSlot](keys.data() + j * dim,
                                          c.bytes.data() + 2 + j * c.row_bytes, dim);
  }
  return c;
}

// dot_cells over the cells for n_x quantized query rows through `table` ([n_x, out_stride]; the
// two floats past each row's n scores stay -1).
std::vector<float> q8_scores(const KernelTable& table, const Q8Cells& cells, int64_t n, int64_t dim,
                             const std::vector<uint8_t>& q8, int64_t n_x) {
  const int64_t out_stride = n + 2;
  std::vector<float> out(static_cast<size_t>(n_x * out_stride), -1.0f);
  const CellRows keys{CellRead::kQ8_0, cells.data(), nullptr, dim, cells.row_bytes};
  dot_cells(table, keys, n, {nullptr, q8.data(), nullptr, dim, q8_0_query_row_bytes(dim)}, n_x,
            kScoreScale, out.data(), out_stride);
  return out;
}

// Head sizes of 1 .. 8 blocks; cell counts across the tiles' row groups (8 for AVX2, 16 for
// AVX-512, a chunk of 128); query rows across their token groups (1 .. 4 in registers), a pass
// (64) and a prompt tile (16 tokens × 7 heads).
TEST(AttentionRows, Q8CellScoresAreRefsBitsOnEveryTable) {
  const bool small = test::under_emulation();
  const std::vector<int64_t> dims = {32, 64, 128, 256};
  const std::vector<int64_t> cell_counts =
      small ? std::vector<int64_t>{1, 9, 17}
            : std::vector<int64_t>{1, 7, 8, 9, 15, 16, 17, 33, 128};
  const std::vector<int64_t> row_counts =
      small ? std::vector<int64_t>{1, 4, 65}
            : std::vector<int64_t>{1, 2, 3, 4, 5, 7, 63, 64, 65, 112};
  for (const int64_t dim : dims) {
    for (const int64_t n : cell_counts) {
      const Q8Cells cells = make_cells(n, dim, static_cast<uint32_t>(7 * dim + n));
      for (const int64_t n_x : row_counts) {
        const std::vector<float> q =
            random_floats(n_x * dim, static_cast<uint32_t>(11 * dim + n_x), -3.0f, 3.0f);
        const int64_t q_bytes = q8_0_query_row_bytes(dim);
        std::vector<uint8_t> q8_ref(static_cast<size_t>(n_x * q_bytes));
        quantize_queries(ref_table, q.data(), n_x, dim, q8_ref.data());
        const std::vector<float> want = q8_scores(ref_table, cells, n, dim, q8_ref, n_x);
        // ref is the definition, pair by pair.
        for (int64_t i = 0; i < n_x; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            float s = 0.0f;
            ref::vec_dot_q8_0_q8_0(static_cast<int>(dim), &s, cells.data() + j * cells.row_bytes,
                                   q8_ref.data() + i * q_bytes);
            ASSERT_EQ(want[static_cast<size_t>(i * (n + 2) + j)], s * kScoreScale)
                << "dim " << dim << " cells " << n << " rows " << n_x << " (" << i << ", " << j
                << ")";
          }
          ASSERT_EQ(want[static_cast<size_t>(i * (n + 2) + n)], -1.0f) << "wrote past its row";
        }
        for (const KernelTable* t : all_tables()) {
          std::vector<uint8_t> q8(q8_ref.size());
          quantize_queries(*t, q.data(), n_x, dim, q8.data());
          ASSERT_EQ(0, std::memcmp(q8.data(), q8_ref.data(), q8.size()))
              << t->name << " quantize_queries dim " << dim << " rows " << n_x;
          const std::vector<float> got = q8_scores(*t, cells, n, dim, q8, n_x);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << t->name << " dim " << dim << " cells " << n << " rows " << n_x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
