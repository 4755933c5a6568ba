// Helpers shared by the tools tests: teacher-forced logits of a model file and the KL
// divergence between two logit rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime.h"
#include "gguf/gguf_file.h"
#include "models/model.h"
#include "test_util.h"
#include "tools/model_maker.h"

namespace minfer::test {

// make-model's options for a preset at a type, written to out, on 2 threads, quietly.
inline MakeModelOptions make_options(const std::string& arch, const std::string& preset,
                                     const std::string& type, const std::string& out) {
  MakeModelOptions o;
  o.arch = arch;
  o.preset = preset;
  o.type = type;
  o.output = out;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  return o;
}

// Logits [ids.size(), n_vocab] of ids fed at positions 0.. in one forward.
inline std::vector<float> model_logits(const std::string& path, const std::vector<int32_t>& ids,
                                       int64_t* n_vocab_out = nullptr) {
  auto model = Model::load(path);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  if (!model.is_ok()) return {};
  const int64_t n = static_cast<int64_t>(ids.size());
  engine::RuntimeOptions options;
  options.n_threads = 2;
  options.n_ctx = n;
  auto runtime = engine::Runtime::create(**model, options);
  EXPECT_TRUE(runtime.is_ok()) << runtime.status().message();
  if (!runtime.is_ok()) return {};
  Batch batch;
  for (int64_t t = 0; t < n; ++t)
    batch.add(ids[static_cast<size_t>(t)], static_cast<int32_t>(t), 0, true);
  auto logits = (*runtime)->step(batch);
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  if (!logits.is_ok()) return {};
  if (n_vocab_out != nullptr) *n_vocab_out = (*model)->config().n_vocab;
  return std::vector<float>(logits->begin(), logits->end());
}

// KL(p || q) of the softmax distributions of two logit rows, in nats (double sums, max first).
inline double kl_divergence(const float* p_logits, const float* q_logits, int64_t n) {
  auto log_probs = [n](const float* l) {
    double m = l[0];
    for (int64_t i = 1; i < n; ++i) m = std::max(m, static_cast<double>(l[i]));
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(l[i]) - m);
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = l[i] - m - std::log(s);
    return out;
  };
  const std::vector<double> lp = log_probs(p_logits);
  const std::vector<double> lq = log_probs(q_logits);
  double kl = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    kl += std::exp(lp[static_cast<size_t>(i)]) *
          (lp[static_cast<size_t>(i)] - lq[static_cast<size_t>(i)]);
  }
  return kl;
}

// Mean KL over rows of two [rows, n_vocab] logit tables.
inline double mean_kl(const std::vector<float>& p, const std::vector<float>& q, int64_t n_vocab) {
  const int64_t rows = static_cast<int64_t>(p.size()) / n_vocab;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    sum += kl_divergence(&p[static_cast<size_t>(r * n_vocab)], &q[static_cast<size_t>(r * n_vocab)],
                         n_vocab);
  return sum / static_cast<double>(rows);
}

// Every "<arch>." key of the shared tiny file but vocab_size (the tokenizers differ) is in the
// made file with the same type and value; at least min_checked of them.
inline void expect_same_hyperparameters(const GgufFile& shared, const GgufFile& made,
                                        const std::string& arch, int min_checked) {
  std::map<std::string, const GgufValue*> keys;
  for (const GgufKeyValue& kv : made.metadata()) keys[kv.key] = &kv.value;
  int n_checked = 0;
  for (const GgufKeyValue& kv : shared.metadata()) {
    if (!kv.key.starts_with(arch + ".") || kv.key == arch + ".vocab_size") continue;
    ++n_checked;
    const auto it = keys.find(kv.key);
    ASSERT_NE(it, keys.end()) << kv.key;
    const GgufValue& v = *it->second;
    EXPECT_EQ(v.type(), kv.value.type()) << kv.key;
    if (kv.value.is_array()) {
      EXPECT_EQ(v.element_type(), kv.value.element_type()) << kv.key;
      EXPECT_EQ(v.array_bytes(), kv.value.array_bytes()) << kv.key;
    } else {
      EXPECT_EQ(v.raw_bits(), kv.value.raw_bits()) << kv.key;
    }
  }
  EXPECT_GE(n_checked, min_checked);
}

}  // namespace minfer::test
