// Tokenization throughput with the Qwen3 vocabulary on one thread: a few MB of English and of
// CJK text, built deterministically in memory by shuffling and repeating the shared tokenizer
// corpus (and, for English, the long golden prompts). Prints MB/s as "bytes_per_second".
//
// Data: $MINFER_TEST_DATA, else ../shared next to the source tree.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_data.h"
#include "tokenizer/streaming_decoder.h"

namespace {

constexpr size_t kTargetBytes = 4u << 20;

using minfer::bench::data_dir;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// corpus.txt holds texts separated by "\n__ggml_vocab_test__\n".
std::vector<std::string> corpus_texts() {
  const std::string raw = read_file(data_dir() + "/golden/tokenizer/corpus.txt");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    size_t next = raw.find(sep, pos);
    if (next == std::string::npos) next = raw.size();
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return texts;
}

bool is_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

// Han, kana or Hangul in the text (their UTF-8 lead bytes are 0xE3–0xED).
bool has_cjk(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<uint8_t>(c);
    return b >= 0xE3 && b <= 0xED;
  });
}

std::string build_text(std::vector<std::string> pool) {
  std::mt19937 rng(1234);
  std::string text;
  text.reserve(kTargetBytes + 4096);
  while (text.size() < kTargetBytes && !pool.empty()) {
    std::shuffle(pool.begin(), pool.end(), rng);
    for (const std::string& t : pool) {
      text += t;
      text += (rng() % 4 == 0) ? "\n\n" : " ";
    }
  }
  return text;
}

const std::string& english_text() {
  static const std::string text = [] {
    std::vector<std::string> pool;
    for (const std::string& t : corpus_texts()) {
      if (is_ascii(t) && t.size() > 8) pool.push_back(t);
    }
    // The long English prompts of the model goldens (license text), split into paragraphs.
    for (const char* name : {"llama-tiny-q8_0.long.json", "qwen2-tiny-f32.long.json"}) {
      const std::string json = read_file(data_dir() + "/golden/" + name);
      const size_t start = json.find("\"prompt\": \"");
      if (start == std::string::npos) continue;
      std::string prompt;
      for (size_t i = start + 11; i < json.size() && json[i] != '"'; ++i) {
        if (json[i] == '\\' && i + 1 < json.size()) {
          ++i;
          prompt += json[i] == 'n' ? '\n' : json[i];
        } else {
          prompt += json[i];
        }
      }
      std::istringstream lines(prompt);
      for (std::string line; std::getline(lines, line);) {
        if (line.size() > 20) pool.push_back(line);
      }
    }
    return build_text(pool);
  }();
  return text;
}

const std::string& cjk_text() {
  static const std::string text = [] {
    std::vector<std::string> pool;
    for (const std::string& t : corpus_texts()) {
      if (has_cjk(t)) pool.push_back(t);
    }
    return build_text(pool);
  }();
  return text;
}

void run_encode(benchmark::State& state, const std::string& text) {
  const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
  if (tok == nullptr || text.empty()) {
    state.SkipWithError("shared test data not found (set MINFER_TEST_DATA)");
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tok->encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["text_MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["bytes_per_token"] =
      static_cast<double>(text.size()) / std::max<size_t>(n_tokens, 1);
}

void BM_EncodeEnglishQwen3(benchmark::State& state) {
  run_encode(state, english_text());
}
void BM_EncodeCjkQwen3(benchmark::State& state) {
  run_encode(state, cjk_text());
}

void BM_StreamDecodeEnglishQwen3(benchmark::State& state) {
  const minfer::Tokenizer* tok = minfer::bench::qwen3_tokenizer();
  if (tok == nullptr) {
    state.SkipWithError("shared test data not found (set MINFER_TEST_DATA)");
    return;
  }
  const std::vector<int32_t> ids = tok->encode(english_text(), false, false);
  for (auto _ : state) {
    minfer::StreamingDecoder stream(*tok);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += stream.push(id).size();
    bytes += stream.flush().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_text().size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}

BENCHMARK(BM_EncodeEnglishQwen3)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EncodeCjkQwen3)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_StreamDecodeEnglishQwen3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
