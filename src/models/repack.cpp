#include "models/repack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"

namespace minfer {
namespace {

constexpr size_t kPieceBytes = size_t{4} << 20;  // repacked between two releases of file pages

// One repacked matrix: the WeightTensors that view its bytes (a tied output and token_embd share
// them).
struct RepackJob {
  std::vector<WeightTensor*> views;
  size_t bytes = 0;
};

// The matrices matmul reads: every layer kind's projections, shared experts, per-layer
// embedding projections and a MoE's experts (each of a 3-D weight's matrices interleaved on its
// own: its rows are whole groups); the router keeps its layout.
std::vector<WeightTensor*> matmul_weights(ModelWeights& w) {
  std::vector<WeightTensor*> out = {&w.output};
  const auto add = [&](WeightTensor* t) {
    if (t->data != nullptr) out.push_back(t);
  };
  for (LayerWeights& l : w.layers) {
    for (WeightTensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down}) add(t);
    for (std::optional<WeightTensor>* t :
         {&l.gate_exps, &l.up_exps, &l.down_exps, &l.gate_up_exps, &l.gate_shexp, &l.up_shexp,
          &l.down_shexp, &l.ple_inp_gate, &l.ple_proj}) {
      if (t->has_value()) add(&**t);
    }
    if (l.delta_net.has_value()) {
      LayerWeights::DeltaNet& d = *l.delta_net;
      for (WeightTensor* t : {&d.qkv, &d.gate, &d.alpha, &d.beta, &d.out}) add(t);
    }
  }
  return out;
}

bool qualifies(const WeightTensor& t, const kernels::KernelTable& table) {
  return kernels::matmul_supports_layout(table, t.type, kernels::WeightLayout::kRows16) &&
         kernels::can_interleave(t.type, t.n_rows, t.n_cols);
}

std::vector<RepackJob> plan_jobs(ModelWeights& w, const kernels::KernelTable& table) {
  std::vector<RepackJob> jobs;
  for (WeightTensor* t : matmul_weights(w)) {
    if (!qualifies(*t, table)) continue;
    bool seen = false;
    for (const RepackJob& j : jobs) seen = seen || j.views[0]->data == t->data;
    if (seen) continue;  // tied: the same bytes as a matrix already planned
    RepackJob job;
    job.views.push_back(t);
    job.bytes = static_cast<size_t>(t->n_mats * t->n_rows) * t->row_bytes;
    if (w.token_embd.data == t->data) job.views.push_back(&w.token_embd);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Drops the whole pages of [p, p + n) from this process's memory: the file's pages are read
// again from the file if touched (they are not: every view of them now points at the copy).
void release_pages(const uint8_t* p, size_t n, int advice = MADV_DONTNEED) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

}  // namespace

RepackedWeights::~RepackedWeights() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

bool repack_enabled(const kernels::KernelTable& table) {
  const char* env = std::getenv("MINFER_REPACK");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0}) {
    if (kernels::matmul_supports_layout(table, type, kernels::WeightLayout::kRows16)) return true;
  }
  return false;
}

Result<std::unique_ptr<RepackedWeights>> repack_weights(ModelWeights& w,
                                                        const kernels::KernelTable& table) {
  const std::vector<RepackJob> jobs = plan_jobs(w, table);
  if (jobs.empty()) return std::unique_ptr<RepackedWeights>();
  // Each copy starts on a 64-byte line (the tiles' loads of a block pair stay within lines).
  size_t total = 0;
  for (const RepackJob& j : jobs) total += (j.bytes + 63) / 64 * 64;
  void* mem = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    return make_error(ErrorCode::kIo,
                      "[repack] could not map {} bytes of anonymous memory for {} "
                      "repacked weights: {}",
                      total, jobs.size(), std::strerror(errno));
  }
  madvise(mem, total, MADV_HUGEPAGE);
  auto out = std::make_unique<RepackedWeights>(static_cast<uint8_t*>(mem), total,
                                               static_cast<int>(jobs.size()));
  kernels::ThreadPool pool(kernels::default_thread_count());
  auto* dst = static_cast<uint8_t*>(mem);
  for (const RepackJob& j : jobs) {
    const WeightTensor& t = *j.views[0];
    const uint8_t* src = t.data;
    // A few MB at a time, the file's pages of each piece released once it is copied: resident
    // memory never holds both copies of more than one piece (the output matrix alone is 140 MB
    // of a 0.5B q8_0 model).
    // No 2 MiB pages there any more: khugepaged would map the file's huge pages back in whole.
    release_pages(src, j.bytes, MADV_NOHUGEPAGE);
    const int64_t groups = t.n_mats * t.n_rows / kernels::kInterleaveRows;
    const size_t group_bytes = static_cast<size_t>(kernels::kInterleaveRows) * t.row_bytes;
    const int64_t piece = std::max<int64_t>(1, static_cast<int64_t>(kPieceBytes / group_bytes));
    for (int64_t g0 = 0; g0 < groups; g0 += piece) {
      const int64_t g1 = std::min(groups, g0 + piece);
      pool.parallel_for(g1 - g0, [&](int64_t begin, int64_t end) {
        kernels::interleave_rows(t.type, src, t.n_cols, (g0 + begin) * kernels::kInterleaveRows,
                                 (g0 + end) * kernels::kInterleaveRows, dst);
      });
      release_pages(src + static_cast<size_t>(g0) * group_bytes,
                    static_cast<size_t>(g1 - g0) * group_bytes);
    }
    for (WeightTensor* v : j.views) {
      v->data = dst;
      v->layout = kernels::WeightLayout::kRows16;
    }
    release_pages(src, j.bytes);  // the pages that straddled two pieces
    dst += (j.bytes + 63) / 64 * 64;
  }
  return out;
}

}  // namespace minfer
