#include "golden.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace minfer::test {

std::vector<int32_t> Golden::all_tokens() const {
  std::vector<int32_t> out = prompt_tokens;
  out.insert(out.end(), greedy_tokens.begin(), greedy_tokens.end());
  return out;
}

namespace {

// The goldens this repository holds itself (tests/data/golden: llama.cpp's logits made with
// scripts/llama_reference/make_golden.py for cases the shared data has none of), beside the shared
// data's golden/.
std::string repo_golden_dir() {
  return std::string(MINFER_SOURCE_DIR) + "/tests/data/golden";
}

}  // namespace

std::string golden_file(const std::string& relative) {
  const std::string repo = repo_golden_dir() + "/" + relative;
  if (std::filesystem::exists(repo)) return repo;
  return test_data_path("golden/" + relative);
}

std::vector<std::string> golden_names(const std::string& folder) {
  std::set<std::string> names;
  const std::string prefix = folder.empty() ? "" : folder + "/";
  for (const std::string& dir :
       {test_data_path("golden/" + folder), repo_golden_dir() + "/" + folder}) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string file = entry.path().filename().string();
      if (entry.path().extension() == ".json") {
        names.insert(prefix + file.substr(0, file.size() - 5));
      }
    }
  }
  return {names.begin(), names.end()};
}

Golden load_golden(const std::string& name) {
  const std::string json = golden_file(name + ".json");
  std::ifstream in(json);
  // The logits file sits beside the JSON ("arch/llama3-tiny-f32.short" → golden/arch/).
  const std::string folder = json.substr(0, json.rfind('/') + 1);
  const nlohmann::json j = nlohmann::json::parse(in);
  Golden g;
  g.name = name;
  g.model = j.at("model").get<std::string>();
  g.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  g.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
  g.n_vocab = j.at("n_vocab").get<int64_t>();
  g.first_row = j.value("logits_first_row", int64_t{0});
  g.n_rows = j.at("logits_shape").at(0).get<int64_t>();
  g.cache_type = j.value("cache_type", std::string("f32"));
  g.llama_self_shift_mean_kl = j.value("llama_self_shift_mean_kl", 0.0);
  const std::vector<uint8_t> bytes =
      read_file_bytes(folder + j.at("logits_file").get<std::string>());
  if (bytes.size() != static_cast<size_t>(g.n_rows * g.n_vocab) * 4) {
    throw std::runtime_error("golden logits file size does not match logits_shape: " + name);
  }
  g.logits.resize(static_cast<size_t>(g.n_rows * g.n_vocab));
  std::memcpy(g.logits.data(), bytes.data(), bytes.size());
  return g;
}

namespace {

std::vector<double> log_softmax(const float* x, int64_t n) {
  const double max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  const double log_sum = std::log(sum) + max;
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] - log_sum;
  return out;
}

}  // namespace

Agreement compare_to_golden(const Golden& g, const std::vector<float>& ours) {
  Agreement a;
  a.n_rows = g.n_rows;
  int64_t same_top1 = 0;
  for (int64_t r = 0; r < g.n_rows; ++r) {
    const float* ref = g.logits.data() + r * g.n_vocab;
    const float* got = ours.data() + (g.first_row + r) * g.n_vocab;
    const std::vector<double> lp = log_softmax(ref, g.n_vocab);
    const std::vector<double> lq = log_softmax(got, g.n_vocab);
    double kl = 0.0;
    for (int64_t i = 0; i < g.n_vocab; ++i) {
      const double p = std::exp(lp[static_cast<size_t>(i)]);
      kl += p * (lp[static_cast<size_t>(i)] - lq[static_cast<size_t>(i)]);
      a.max_abs_diff = std::max(a.max_abs_diff, static_cast<double>(std::fabs(ref[i] - got[i])));
    }
    a.mean_kl += kl;
    a.max_kl = std::max(a.max_kl, kl);
    if (std::max_element(ref, ref + g.n_vocab) - ref ==
        std::max_element(got, got + g.n_vocab) - got) {
      ++same_top1;
    }
  }
  a.mean_kl /= static_cast<double>(g.n_rows);
  a.top1_agreement = static_cast<double>(same_top1) / static_cast<double>(g.n_rows);
  return a;
}

}  // namespace minfer::test
