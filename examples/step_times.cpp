// Time per token of one long generation on the public API: each chunk of text's arrival is
// timed, and the gaps between chunks (a decode step each, two where a character spans two tokens)
// are summarized — median, p99, max — with the slowest steps and the positions they ran at. A
// stall that the rates hide (memory taken all at once, say) shows in the max.
//
//   build/examples/minfer-step-times -m MODEL.gguf -n 2100 [-c 4096] [--ban ID ...] [PROMPT]
//
// --ban gives a token id a logit bias of -1e9 (e.g. a random-weight model's end-of-generation
// ids, so that it runs the whole -n).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "minfer/minfer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model_path;
  std::string prompt = "Once upon a time";
  int64_t n_predict = 0;
  int64_t n_ctx = 0;
  std::vector<int32_t> banned;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "-m" && has_value) {
      o.model_path = argv[++i];
    } else if (arg == "-n" && has_value) {
      o.n_predict = std::atoll(argv[++i]);
    } else if (arg == "-c" && has_value) {
      o.n_ctx = std::atoll(argv[++i]);
    } else if (arg == "--ban" && has_value) {
      o.banned.push_back(static_cast<int32_t>(std::atol(argv[++i])));
    } else {
      o.prompt = arg;
    }
  }
  return !o.model_path.empty() && o.n_predict > 0;
}

// The gaps (ms) in the order they came, summarized.
void report(const std::vector<double>& gaps, int64_t first_position, int64_t n_generated) {
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  double total = 0.0;
  for (const double g : gaps) total += g;
  std::printf(
      "%lld tokens, %zu gaps between chunks: median %.2f ms, p99 %.2f ms, max %.2f ms; "
      "%.2f s from the first chunk to the last\n",
      static_cast<long long>(n_generated), gaps.size(), sorted[sorted.size() / 2],
      sorted[sorted.size() * 99 / 100], sorted.back(), total / 1000.0);
  std::vector<size_t> order(gaps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gaps[a] > gaps[b]; });
  std::printf("slowest:");
  for (size_t k = 0; k < std::min<size_t>(8, order.size()); ++k) {
    // Gap i ends with the chunk of the (i + 2)-th token, the step that fed position
    // first_position + i (later where earlier chunks held two tokens).
    std::printf(" %.1f ms near position %lld%s", gaps[order[k]],
                static_cast<long long>(first_position + static_cast<int64_t>(order[k])),
                k + 1 < std::min<size_t>(8, order.size()) ? "," : "\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s -m MODEL.gguf -n N_PREDICT [-c N_CTX] [--ban ID ...] [PROMPT]\n",
                 argv[0]);
    return 1;
  }
  minfer::LoadOptions load;
  load.n_ctx = o.n_ctx;
  auto model = minfer::LanguageModel::load(o.model_path, load);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  const std::vector<int32_t> prompt = (*model)->tokenize(o.prompt);
  minfer::GenerateParams params;
  params.max_tokens = o.n_predict;
  params.temperature = 0.0f;  // greedy
  for (const int32_t id : o.banned) params.logit_bias.emplace_back(id, -1e9f);
  std::vector<double> gaps;
  Clock::time_point last{};
  auto reply = (*model)->generate(prompt, params, [&](std::string_view) {
    const Clock::time_point now = Clock::now();
    if (last != Clock::time_point{}) {
      gaps.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    }
    last = now;
    return true;
  });
  if (!reply.is_ok()) {
    std::fprintf(stderr, "%s\n", reply.status().message().c_str());
    return 1;
  }
  if (gaps.empty()) {
    std::fprintf(stderr, "fewer than two chunks of text: nothing to time\n");
    return 1;
  }
  report(gaps, static_cast<int64_t>(prompt.size()), reply->n_generated);
  return 0;
}
