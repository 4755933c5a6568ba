// JSON-constrained sampling on Qwen3's 151,936-token vocabulary, per token of a pretty-printed
// object (keys, prose with non-ASCII, numbers, nesting): building VocabBytes once per model, the
// full mask (fill_allowed, the trie walk), the fast-path check of one token (allows), and the
// unconstrained sampler on the same vocabulary for scale. tests/grammar checks that the masks are
// right; this only measures them.
//
// Data: $MINFER_TEST_DATA, else ../shared next to the source tree.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_data.h"
#include "grammar/json_constraint.h"
#include "sampling/sampler.h"

namespace {

using minfer::grammar::JsonConstraint;
using minfer::grammar::VocabBytes;

// A reply as a model would write it for response_format json_object.
constexpr const char* kReply = R"({
  "title": "Weekend trip to the coast",
  "days": 2,
  "budget_eur": 340.50,
  "travellers": [{"name": "Ana", "age": 34}, {"name": "Björn", "age": 29}],
  "notes": "Book the ferry early — it sells out; the café by the harbour opens at 7.",
  "confirmed": false,
  "deposit": null,
  "stops": ["Porto", "Aveiro", "Coimbra", "S\u00e9"],
  "weather": {"saturday": {"high_c": 21, "rain_mm": 0.4}, "sunday": {"rain_mm": 3e0}},
  "旅程": "海辺"
})";

struct Replay {
  std::shared_ptr<const VocabBytes> vocab;
  std::vector<int32_t> ids;               // the reply's tokens
  std::vector<JsonConstraint> before_id;  // [ids.size()] the constraint before each token
};

// The reply tokenized, and the constraint in each state it passes through; nullptr without data.
const Replay* replay() {
  static const std::unique_ptr<Replay> r = []() -> std::unique_ptr<Replay> {
    const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
    if (tok == nullptr) return nullptr;
    auto out = std::make_unique<Replay>();
    out->vocab = VocabBytes::from_tokenizer(*tok);
    out->ids = tok->encode(kReply, false, false);
    JsonConstraint json(out->vocab);
    for (const int32_t id : out->ids) {
      out->before_id.push_back(json);
      if (!json.accept(id).is_ok()) return nullptr;
    }
    return json.complete() ? std::move(out) : nullptr;
  }();
  return r.get();
}

bool have_data(benchmark::State& state) {
  if (replay() != nullptr) return true;
  state.SkipWithError("shared test data not found (set MINFER_TEST_DATA)");
  return false;
}

void BM_VocabBytesQwen3(benchmark::State& state) {
  if (!have_data(state)) return;
  const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
  for (auto _ : state) {
    auto vocab = VocabBytes::from_tokenizer(*tok);
    benchmark::DoNotOptimize(vocab.get());
  }
}

// fill_allowed in every state of the reply; items are tokens.
void BM_JsonMaskQwen3(benchmark::State& state) {
  if (!have_data(state)) return;
  const Replay& r = *replay();
  std::vector<uint8_t> mask(static_cast<size_t>(r.vocab->n_vocab()));  // [n_vocab]
  int64_t n_allowed = 0;
  for (auto _ : state) {
    n_allowed = 0;
    for (const JsonConstraint& json : r.before_id) {
      json.fill_allowed(mask);
      for (const uint8_t m : mask) n_allowed += m;
    }
    benchmark::DoNotOptimize(n_allowed);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.ids.size()));
  state.counters["allowed_per_token"] =
      static_cast<double>(n_allowed) / static_cast<double>(r.ids.size());
}

// allows(the token that comes next) in every state of the reply; items are tokens.
void BM_JsonAllowsQwen3(benchmark::State& state) {
  if (!have_data(state)) return;
  const Replay& r = *replay();
  for (auto _ : state) {
    for (size_t i = 0; i < r.ids.size(); ++i) {
      benchmark::DoNotOptimize(r.before_id[i].allows(r.ids[i]));
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.ids.size()));
}

// The unconstrained sampler (state.range(0): temperature ×10, 0 = greedy) on seeded random
// logits over the same vocabulary.
void BM_SampleUnconstrainedQwen3(benchmark::State& state) {
  if (!have_data(state)) return;
  const int32_t n_vocab = replay()->vocab->n_vocab();
  minfer::SamplerParams params;
  params.temperature = static_cast<float>(state.range(0)) / 10.0f;
  params.seed = 5;
  minfer::Sampler sampler(params, n_vocab);
  std::vector<float> logits(static_cast<size_t>(n_vocab));  // [n_vocab]
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& l : logits) l = normal(rng);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits));
}

BENCHMARK(BM_VocabBytesQwen3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonMaskQwen3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JsonAllowsQwen3)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleUnconstrainedQwen3)->Arg(10)->Arg(0)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
