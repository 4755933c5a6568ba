// Grammar-constrained sampling on Qwen3's 151,936-token vocabulary: the mask (fill_allowed) per
// token of a tool call — a JSON object of 5 properties written as GBNF by hand, the shape a
// tool_choice grammar has — as median and p99 over the states a generated call passes through.
// "cold": a freshly compiled grammar (the first request with this grammar), on a vocabulary that
// earlier grammars used (its SharedSuffixSets, e.g. a JSON string's, may hold sets: iterations
// after the first find them); "first": nothing cached anywhere, a fresh vocabulary each iteration
// (the first grammar after the model loads: the string set is made once, a one-off walk of the
// whole vocabulary); "warm": the same states again (later requests with the grammar share its
// cache). And the
// json_object grammar on the reply bench/json_constraint.cpp uses, for comparison with
// JsonConstraint, and the call's arguments under the grammar its schema compiles to
// ("tool_schema"). tests/grammar checks that the masks are right; this only measures them.
//
// Data: $MINFER_TEST_DATA, else ../shared next to the source tree.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_data.h"
#include "grammar/grammar_constraint.h"
#include "grammar/json_constraint.h"
#include "grammar/json_grammar.h"
#include "grammar/json_schema.h"

namespace {

using minfer::grammar::GrammarConstraint;
using minfer::grammar::TokenGrammar;
using minfer::grammar::VocabBytes;

constexpr const char* kToolCallGbnf = R"(root ::= ("{" ws "\"location\"" ws ":" ws string ws "," ws
  "\"unit\"" ws ":" ws ("\"celsius\"" | "\"fahrenheit\"") ws "," ws
  "\"days\"" ws ":" ws integer ws "," ws
  "\"include_hourly\"" ws ":" ws ("true" | "false") ws "," ws
  "\"notes\"" ws ":" ws string ws "}")
string ::= "\"" ([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
ws ::= [ \t\n]{0,20}
)";

constexpr const char* kToolCall =
    "{\"location\": \"São Paulo, Brazil\", \"unit\": \"celsius\", \"days\": 5, "
    "\"include_hourly\": false, \"notes\": \"Outdoor wedding on Saturday — will it rain? "
    "Prefer the 東京 model if available.\"}";

// The same call's arguments under the grammar a tool's schema compiles to (grammar/json_schema.h:
// bounded whitespace and numbers, as tool_choice grammars have them).
const std::string kToolSchemaGbnf =
    minfer::grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(R"({"type": "object",
      "properties": {"location": {"type": "string"},
                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                     "days": {"type": "integer"}, "include_hourly": {"type": "boolean"},
                     "notes": {"type": "string"}},
      "required": ["location", "unit", "days", "include_hourly", "notes"]})"))
        .value();

constexpr const char* kJsonReply = R"({
  "title": "Weekend trip to the coast",
  "days": 2,
  "travellers": [{"name": "Ana", "age": 34}, {"name": "Björn", "age": 29}],
  "notes": "Book the ferry early — it sells out; the café by the harbour opens at 7.",
  "weather": {"saturday": {"high_c": 21, "rain_mm": 0.4}, "sunday": {"rain_mm": 3e0}},
  "旅程": "海辺"
})";

std::shared_ptr<const VocabBytes> vocab(minfer::grammar::MarkupTokens markup) {
  const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
  return tok == nullptr ? nullptr : VocabBytes::from_tokenizer(*tok, markup);
}

// Times fill_allowed in each state of `text` (tokenized) under `grammar`: milliseconds per state.
std::vector<double> mask_times(const std::shared_ptr<TokenGrammar>& grammar, const char* text) {
  const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
  const std::vector<int32_t> ids = tok->encode(text, false, false);
  auto c = GrammarConstraint::create(grammar).value();
  std::vector<uint8_t> mask(static_cast<size_t>(grammar->vocab().n_vocab()));  // [n_vocab]
  std::vector<double> ms;
  for (const int32_t id : ids) {
    const auto t0 = std::chrono::steady_clock::now();
    c->fill_allowed(mask);
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (mask[static_cast<size_t>(id)] == 0 || !c->accept(id).is_ok()) return {};
  }
  return ms;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void report(benchmark::State& state, const std::vector<double>& all) {
  if (all.empty()) {
    state.SkipWithError("the text does not follow the grammar");
    return;
  }
  state.counters["median_ms"] = percentile(all, 0.5);
  state.counters["p99_ms"] = percentile(all, 0.99);
  state.counters["max_ms"] = percentile(all, 1.0);
  state.counters["states"] = static_cast<double>(all.size());
}

// Mask times in each state of `text` under `gbnf`, a grammar compiled afresh per iteration. warm:
// the states were met once before (by another request); max_masks 0: no mask is cached, so every
// mask is made again (from the suffix sets and warm transitions when warm). fresh_vocab: a new
// vocabulary each iteration, so no set is shared from an earlier grammar.
void BM_GrammarMask(benchmark::State& state, const std::string& gbnf, const char* text,
                    minfer::grammar::MarkupTokens markup, bool warm, size_t max_masks,
                    bool fresh_vocab = false) {
  auto v = vocab(markup);
  if (v == nullptr) {
    state.SkipWithError("shared test data not found (set MINFER_TEST_DATA)");
    return;
  }
  auto parsed = minfer::grammar::parse_gbnf(gbnf);
  if (!parsed.is_ok()) {
    state.SkipWithError(parsed.status().message().c_str());
    return;
  }
  minfer::grammar::TokenGrammarOptions options;
  options.max_masks = max_masks;
  std::vector<double> all;
  for (auto _ : state) {
    if (fresh_vocab) v = vocab(markup);
    auto grammar = std::make_shared<TokenGrammar>(parsed.value(), v, options);
    if (warm) mask_times(grammar, text);
    const std::vector<double> ms = mask_times(grammar, text);
    all.insert(all.end(), ms.begin(), ms.end());
  }
  report(state, all);
}

constexpr auto kText = minfer::grammar::MarkupTokens::kText;
constexpr auto kNoMarkup = minfer::grammar::MarkupTokens::kNever;
const std::string kJsonGbnf =
    minfer::grammar::json_object_gbnf(minfer::grammar::kGenerationJsonOptions);

BENCHMARK_CAPTURE(BM_GrammarMask, tool_call_cold, kToolCallGbnf, kToolCall, kText, false, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, tool_call_first, kToolCallGbnf, kToolCall, kText, false, 32, true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, tool_call_warm, kToolCallGbnf, kToolCall, kText, true, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, tool_call_walk_only, kToolCallGbnf, kToolCall, kText, true, 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, tool_schema_cold, kToolSchemaGbnf, kToolCall, kText, false, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, tool_schema_warm, kToolSchemaGbnf, kToolCall, kText, true, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, json_object_cold, kJsonGbnf, kJsonReply, kNoMarkup, false, 32)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_GrammarMask, json_object_first, kJsonGbnf, kJsonReply, kNoMarkup, false, 32,
                  true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
