// Attention over q8_0 cells that llama.cpp stores Hadamard-rotated (head dims that are multiples
// of 64; kv/kv_layout.h k_rotation / v_rotation): the keys scored against the query rotated and
// quantized, the output turned back from the values' rotation, on every kernel table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "graph/attention.h"
#include "kernels/hadamard.h"
#include "kernels/kernel_test_util.h"
#include "quant/act_quant.h"
#include "quant/quantize.h"

namespace minfer {
namespace {

constexpr int64_t kRotNHead = 4;
constexpr int64_t kRotNHeadKv = 2;
constexpr int64_t kRotCells = 40;  // positions stored, in blocks of 16

// x rotated in runs of `run`, then through a q8_0 row and back: with `act`, as Q is quantized
// (llama.cpp's x86 quantizer), else as cells are.
std::vector<double> rotated_q8(const float* x, int64_t n, int64_t run, bool act) {
  std::vector<float> r(x, x + n);
  kernels::hadamard_rotate(r.data(), n / run, run);
  std::vector<BlockQ8_0> blocks(static_cast<size_t>(n / 32));
  if (act) {
    quantize_act_q8_0(r.data(), blocks.data(), n);
  } else {
    quantize_row_q8_0(r.data(), blocks.data(), n);
  }
  dequantize_row_q8_0(blocks.data(), r.data(), n);
  return {r.begin(), r.end()};
}

// The row of (token at `pos`, head h) in double: softmax of the rotated, quantized query against
// the rotated cells, the weighted rotated values turned back by H_64.
std::vector<double> rotated_reference(const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, int64_t hd, int64_t pos,
                                      int64_t h, float scale, int64_t k_run) {
  const int64_t kv = h / (kRotNHead / kRotNHeadKv);
  const std::vector<double> qr = rotated_q8(q.data() + h * hd, hd, k_run, true);
  std::vector<double> scores;
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j <= pos; ++j) {
    const std::vector<double> kr =
        rotated_q8(k.data() + (j * kRotNHeadKv + kv) * hd, hd, k_run, false);
    double s = 0.0;
    for (int64_t d = 0; d < hd; ++d) s += qr[static_cast<size_t>(d)] * kr[static_cast<size_t>(d)];
    scores.push_back(s * scale);
    max = std::max(max, scores.back());
  }
  std::vector<double> acc(static_cast<size_t>(hd), 0.0);
  double sum = 0.0;
  for (int64_t j = 0; j <= pos; ++j) {
    const double w = std::exp(scores[static_cast<size_t>(j)] - max);
    const std::vector<double> vr =
        rotated_q8(v.data() + (j * kRotNHeadKv + kv) * hd, hd, 64, false);
    sum += w;
    for (int64_t d = 0; d < hd; ++d) acc[static_cast<size_t>(d)] += w * vr[static_cast<size_t>(d)];
  }
  std::vector<float> out(static_cast<size_t>(hd));
  for (int64_t d = 0; d < hd; ++d)
    out[static_cast<size_t>(d)] = static_cast<float>(acc[static_cast<size_t>(d)] / sum);
  kernels::hadamard_rotate(out.data(), hd / 64, 64);
  return {out.begin(), out.end()};
}

TEST(AttentionRotation, Q8CellsOfHeadDimsOf64AreScoredAndSummedRotated) {
  for (const auto& [hd, k_run] : {std::pair<int64_t, int64_t>{64, 64}, {128, 128}}) {
    KvCacheConfig c;
    c.n_layer = 1;
    c.n_head_kv = kRotNHeadKv;
    c.head_dim = hd;
    c.head_dim_v = hd;
    c.cell_type = GgmlType::kQ8_0;
    c.block_size = 16;
    c.n_ctx = 64;
    c.max_blocks = 4;
    const std::vector<float> k = kernels::test::random_floats(kRotCells * kRotNHeadKv * hd, 31);
    const std::vector<float> v = kernels::test::random_floats(kRotCells * kRotNHeadKv * hd, 32);
    // A prompt's last 5 positions in one batch, and the last position alone (a decode step).
    for (const int64_t first : {kRotCells - 5, kRotCells - 1}) {
      const int64_t n_tokens = kRotCells - first;
      const std::vector<float> q = kernels::test::random_floats(
          n_tokens * kRotNHead * hd, static_cast<uint32_t>(33 + first), -3.0f, 3.0f);
      for (const kernels::KernelTable* table : kernels::test::all_tables()) {
        auto cache = KvCache::create(c);
        ASSERT_TRUE(cache.is_ok()) << cache.status().message();
        KvCache& kv = **cache;
        ASSERT_EQ(kv.k_rotation(), k_run);
        ASSERT_TRUE(kv.reserve(0, kRotCells).is_ok());
        for (int64_t p = 0; p < kRotCells; ++p) {
          kv.store(*table, 0, 0, p, k.data() + p * kRotNHeadKv * hd,
                   v.data() + p * kRotNHeadKv * hd);
        }
        Batch batch;
        for (int64_t p = first; p < kRotCells; ++p) batch.add(0, static_cast<int32_t>(p), 0, true);
        std::vector<float> out(static_cast<size_t>(n_tokens * kRotNHead * hd));
        kernels::ThreadPool pool(2);
        attention(*table, pool, kv, batch, {q.data(), out.data(), 0, kRotNHead, 0.125f});
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> q_t(q.begin() + t * kRotNHead * hd,
                                       q.begin() + (t + 1) * kRotNHead * hd);
          for (int64_t h = 0; h < kRotNHead; ++h) {
            const std::vector<double> want =
                rotated_reference(q_t, k, v, hd, first + t, h, 0.125f, k_run);
            for (int64_t d = 0; d < hd; ++d) {
              const double got = out[static_cast<size_t>((t * kRotNHead + h) * hd + d)];
              ASSERT_NEAR(got, want[static_cast<size_t>(d)],
                          1e-5 * (1.0 + std::fabs(want[static_cast<size_t>(d)])))
                  << table->name << " hd " << hd << " token " << t << " head " << h << " dim " << d;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace minfer
