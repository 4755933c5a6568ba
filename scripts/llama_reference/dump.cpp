// llama.cpp's side of a numerics comparison: evaluates token ids as one batch, every row's
// logits kept (as the shared goldens were made: f32 cells, flash attention off), and writes
//   OUT/logits.f32                 [n_ids, n_vocab] float32
//   OUT/NAME.K.bin, NAME.K.shape   the K-th output of each graph tensor named NAME (llama.cpp's
//                                  callback names: "attn_norm-0", "ffn_moe_topk-3", "l_out-3", …)
// for compare.py to set beside minfer's MINFER_DUMP_DIR nodes. Not part of the build: it links
// llama.cpp's library. Build llama.cpp (CPU, Release, native), then
//   g++ -O2 -std=c++17 scripts/llama_reference/dump.cpp -I$LLAMA/include -I$LLAMA/ggml/include
//     -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin -o /tmp/llama_dump
// (one line).
//   /tmp/llama_dump MODEL.gguf IDS.txt OUT THREADS [NAME ...]
// IDS.txt: whitespace-separated token ids. FA=1 turns flash attention on; KV=f16 (or q8_0, bf16)
// gives those cells; BATCH=k feeds the ids k at a time (1: token by token, as decoding does)
// instead of in one batch; PROMPT=k feeds the first k ids as one batch and the rest one at a time
// (as the shared goldens were made: a prompt, then its greedy tokens). With either, each name's K
// counts calls across the batches.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

namespace {

struct DumpState {
  std::set<std::string> names;
  std::string out;
  std::map<std::string, int> calls;
};

bool write_file(const std::string& path, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

bool on_tensor(ggml_tensor* t, bool ask, void* user) {
  auto* st = static_cast<DumpState*>(user);
  if (ask) return st->names.count(t->name) > 0;
  std::vector<char> bytes(ggml_nbytes(t));
  ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
  const std::string base = st->out + "/" + t->name + "." + std::to_string(st->calls[t->name]++);
  char shape[256];
  const int n =
      std::snprintf(shape, sizeof shape, "%s %lld %lld %lld %lld\n", ggml_type_name(t->type),
                    static_cast<long long>(t->ne[0]), static_cast<long long>(t->ne[1]),
                    static_cast<long long>(t->ne[2]), static_cast<long long>(t->ne[3]));
  if (!ggml_is_contiguous(t) || !write_file(base + ".bin", bytes.data(), bytes.size()) ||
      !write_file(base + ".shape", shape, static_cast<size_t>(n))) {
    std::fprintf(stderr, "llama_dump: cannot write %s (or it is not contiguous)\n", base.c_str());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: llama_dump MODEL.gguf IDS.txt OUT THREADS [NAME ...]\n");
    return 1;
  }
  DumpState st;
  st.out = argv[3];
  const int n_threads = std::atoi(argv[4]);
  for (int i = 5; i < argc; ++i) st.names.insert(argv[i]);
  std::vector<llama_token> ids;
  std::ifstream in(argv[2]);
  for (llama_token t; in >> t;) ids.push_back(t);
  if (ids.empty()) {
    std::fprintf(stderr, "llama_dump: no token ids in %s\n", argv[2]);
    return 1;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 2;
  llama_context_params cp = llama_context_default_params();
  const int n = static_cast<int>(ids.size());
  cp.n_ctx = static_cast<uint32_t>(n + 64);
  cp.n_batch = static_cast<uint32_t>(n);
  cp.n_ubatch = static_cast<uint32_t>(n);  // one graph: each name's K counts calls within it
  cp.n_threads = n_threads;
  cp.n_threads_batch = n_threads;
  const char* kv = std::getenv("KV");
  const std::string cells = kv != nullptr ? kv : "f32";
  cp.type_k = cells == "f16"    ? GGML_TYPE_F16
              : cells == "q8_0" ? GGML_TYPE_Q8_0
              : cells == "bf16" ? GGML_TYPE_BF16
                                : GGML_TYPE_F32;
  cp.type_v = cp.type_k;
  cp.flash_attn_type =
      std::getenv("FA") != nullptr ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.cb_eval = on_tensor;
  cp.cb_eval_user_data = &st;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 3;
  const char* batch_env = std::getenv("BATCH");
  const char* prompt_env = std::getenv("PROMPT");
  const int step = batch_env != nullptr ? std::max(1, std::atoi(batch_env)) : n;
  const int first = prompt_env != nullptr ? std::clamp(std::atoi(prompt_env), 1, n) : step;
  llama_batch batch = llama_batch_init(std::max(step, first), 0, 1);
  std::vector<float> logits;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (int i0 = 0; i0 < n;) {
    const int m = std::min(i0 == 0 ? first : prompt_env != nullptr ? 1 : step, n - i0);
    for (int i = 0; i < m; ++i) {
      batch.token[i] = ids[static_cast<size_t>(i0 + i)];
      batch.pos[i] = i0 + i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = m;
    if (llama_decode(ctx, batch) != 0) return 4;
    for (int i = 0; i < m; ++i) {
      const float* row = llama_get_logits_ith(ctx, i);
      logits.insert(logits.end(), row, row + n_vocab);
    }
    i0 += m;
  }
  const bool ok = write_file(st.out + "/logits.f32", logits.data(), logits.size() * sizeof(float));
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return ok ? 0 : 5;
}
