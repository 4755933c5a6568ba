// minfer bench: the JSON and markdown reports, and the statistics they carry.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/bench.h"
#include "engine/runtime.h"
#include "graph/batch.h"
#include "models/model.h"
#include "test_util.h"
#include "tools/model_maker.h"

namespace minfer {
namespace {

// A tiny random-weight `arch` model of quantize mix `type` made in dir; its path.
std::string make_test_model(const test::TempDir& dir, const std::string& arch,
                            const std::string& type = "q8_0") {
  MakeModelOptions m;
  m.arch = arch;
  m.type = type;
  m.output = dir.file(arch + ".gguf");
  m.progress = ProgressStyle::kQuiet;
  EXPECT_TRUE(make_model(m).is_ok());
  return m.output;
}

TEST(Bench, JsonHasLlamaBenchFields) {
  test::TempDir dir;
  const std::string path = make_test_model(dir, "qwen2");
  auto r = test::run_command(test::minfer_binary() + " bench -m " + path +
                             " -p 32 -n 8 -r 2 -t 2 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails) on invalid JSON
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  const auto& pp = j[0];
  const auto& tg = j[1];
  EXPECT_EQ(pp["test"], "pp32");
  EXPECT_EQ(pp["n_prompt"], 32);
  EXPECT_EQ(pp["n_gen"], 0);
  EXPECT_EQ(tg["test"], "tg8");
  EXPECT_EQ(tg["n_prompt"], 0);
  EXPECT_EQ(tg["n_gen"], 8);
  for (const auto& t : j) {
    EXPECT_EQ(t["n_threads"], 2);
    EXPECT_EQ(t["samples_ts"].size(), 2u);
    EXPECT_EQ(t["samples_ns"].size(), 2u);
    EXPECT_GT(t["avg_ts"].get<double>(), 0.0);
    EXPECT_GE(t["stddev_ts"].get<double>(), 0.0);
    const double s0 = t["samples_ts"][0].get<double>(), s1 = t["samples_ts"][1].get<double>();
    EXPECT_NEAR(t["avg_ts"].get<double>(), (s0 + s1) / 2, 1e-6 * (s0 + s1));
    // Sample standard deviation of two values: |a − b| / √2.
    EXPECT_NEAR(t["stddev_ts"].get<double>(), std::abs(s0 - s1) / std::sqrt(2.0),
                1e-6 * (s0 + s1) + 1e-9);
    EXPECT_EQ(t["model_type"].get<std::string>().rfind("qwen2 ", 0), 0u);
    EXPECT_NE(t["model_type"].get<std::string>().find("Q8_0"), std::string::npos);
    EXPECT_GT(t["model_size"].get<uint64_t>(), 0u);
    EXPECT_GT(t["model_n_params"].get<uint64_t>(), 0u);
  }
  // Progress: plain lines on a pipe.
  EXPECT_NE(r.err.find("bench: 100%"), std::string::npos) << r.err;
}

// llama-bench's names of the file types (general.file_type), gpt-oss's MXFP4 mix among them.
TEST(Bench, FileTypesAreNamedAsLlamaBenchNamesThem) {
  EXPECT_EQ(engine::file_type_name(15), "Q4_K - Medium");
  EXPECT_EQ(engine::file_type_name(38), "MXFP4 MoE");
  EXPECT_EQ(engine::file_type_name(99), "unknown, may not work");
}

TEST(Bench, MarkdownTable) {
  test::TempDir dir;
  const std::string path = make_test_model(dir, "llama", "f32");
  auto model = Model::load(path);
  ASSERT_TRUE(model.is_ok());
  engine::BenchOptions o;
  o.n_prompt = 16;
  o.n_gen = 4;
  o.repetitions = 1;
  o.n_threads = 1;
  o.progress = ProgressStyle::kQuiet;
  auto report = engine::run_bench(**model, path, o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  ASSERT_EQ(report->tests.size(), 2u);
  EXPECT_EQ(report->tests[0].stddev_ts, 0.0);  // one sample
  const std::string md = engine::bench_markdown(*report);
  EXPECT_EQ(md.rfind("| model ", 0), 0u) << md;
  EXPECT_NE(md.find(" pp16 |"), std::string::npos) << md;
  EXPECT_NE(md.find(" tg4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("all F32"), std::string::npos) << md;
  // Header, separator, two rows; every line has the same width (aligned columns).
  size_t lines = 0, width = std::string::npos;
  for (size_t at = 0; at < md.size();) {
    const size_t end = md.find('\n', at);
    const std::string line = md.substr(at, end - at);
    // Byte length: "±" is two bytes in each data row only.
    const size_t w = line.size() - (line.find("±") != std::string::npos ? 1 : 0);
    if (width == std::string::npos) width = w;
    EXPECT_EQ(w, width) << line;
    ++lines;
    at = end + 1;
  }
  EXPECT_EQ(lines, 4u);

  o.repetitions = 0;
  EXPECT_FALSE(engine::run_bench(**model, path, o).is_ok());
}

// The bytes a decode step reads: every tensor whole, except the embedding, of which one row is
// read (and, with a tied output, the whole of it again as the output matrix).
uint64_t expected_decode_bytes(const Model& model) {
  uint64_t bytes = 0;
  const GgufTensorInfo* embd = nullptr;
  for (const GgufTensorInfo& t : model.file().tensors()) {
    if (t.name == "token_embd.weight") {
      embd = &t;
    } else {
      bytes += t.n_bytes;
    }
  }
  EXPECT_NE(embd, nullptr);
  if (embd == nullptr) return 0;
  bytes += embd->n_bytes / embd->n_rows();  // one row
  if (model.config().tied_output) bytes += embd->n_bytes;
  return bytes;
}

TEST(Bench, RooflineFromTheDecodeGraphsWeightBytesAndTheReadBandwidth) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen2-tiny-q8_0.gguf", "qwen3-qwentok-tiny-q8_0.gguf"}) {
    auto model = Model::load(test::test_data_path(std::string("models/") + name));
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    engine::BenchOptions o;
    o.n_prompt = 0;
    o.n_gen = 2;
    o.repetitions = 1;
    o.n_threads = 2;
    o.progress = ProgressStyle::kQuiet;
    o.roofline = true;
    o.roofline_bytes = int64_t{16} << 20;
    o.cache_type = GgmlType::kF16;
    auto report = engine::run_bench(**model, name, o);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    EXPECT_EQ(report->decode_weight_bytes, expected_decode_bytes(**model)) << name;
    EXPECT_GT(report->read_bandwidth, 0.0);
    EXPECT_NEAR(report->roofline_ts(),
                report->read_bandwidth / static_cast<double>(report->decode_weight_bytes), 1e-9);
    // The hot roofline: every byte counted once, by type or as the rest; each type measured.
    const engine::HotRoofline& hot = report->tests[0].hot;
    ASSERT_FALSE(hot.types.empty()) << name;
    uint64_t bytes = hot.other_bytes;
    for (const engine::TypeRate& t : hot.types) {
      bytes += t.bytes;
      EXPECT_GT(t.hot_rate, 0.0) << name << " " << ggml_type_info(t.type).name;
    }
    EXPECT_EQ(bytes, report->decode_weight_bytes) << name;
    const double hot_ts = hot.ts(report->read_bandwidth);
    EXPECT_GT(hot_ts, 0.0);
    EXPECT_LE(hot_ts, report->roofline_ts() * (1 + 1e-9));
    const std::string md = engine::bench_markdown(*report);
    EXPECT_NE(md.find("of weights per token"), std::string::npos) << md;
    EXPECT_NE(md.find("min(stream, hot matmul) roofline"), std::string::npos) << md;
    EXPECT_NE(md.find("tg2 reaches "), std::string::npos) << md;
    const nlohmann::json j = nlohmann::json::parse(engine::bench_json(*report));
    EXPECT_EQ(j[0]["decode_weight_bytes"].get<uint64_t>(), report->decode_weight_bytes);
    EXPECT_NEAR(j[0]["roofline_hot_ts"].get<double>(), hot_ts, 1e-9 * hot_ts);
    EXPECT_EQ(j[0]["hot_matmul"].size(), hot.types.size());
    // With the KV cells: tg2 reads positions 0 and 0..1 of every layer (no depth), keys and
    // values of each KV head.
    const ModelConfig& mc = (*model)->config();
    const double row_pair = static_cast<double>(mc.n_head_kv * (mc.head_dim + mc.head_dim_v) * 2 *
                                                mc.n_layer);  // f16 cells, one position
    EXPECT_DOUBLE_EQ(report->tests[0].kv_bytes_per_token, row_pair * (1 + 2) / 2) << name;
    const double cells_ts = report->tests[0].cells_roofline_ts();
    EXPECT_NEAR(1 / cells_ts,
                1 / hot_ts + report->tests[0].kv_bytes_per_token / report->read_bandwidth,
                1e-9 / cells_ts);
    EXPECT_NE(md.find("of KV cells a token read at the stream rate"), std::string::npos) << md;
    EXPECT_NEAR(j[0]["roofline_cells_ts"].get<double>(), cells_ts, 1e-9 * cells_ts);
  }
}

// A grid with two thread counts: each thread count's tests carry its own rates (the better of the
// measurements before and after its tests), the report the first's bandwidth.
TEST(Bench, EachThreadCountsTestsShareItsRooflineRates) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-q8_0.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::BenchOptions o;
  o.repetitions = 1;
  o.progress = ProgressStyle::kQuiet;
  o.roofline = true;
  o.roofline_bytes = int64_t{16} << 20;
  engine::BenchGrid grid;
  grid.n_prompt = {4};
  grid.n_gen = {2};
  grid.n_depth = {0};
  grid.n_threads = {1, 2};
  auto report = engine::run_bench(**model, "tiny", o, grid);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  ASSERT_EQ(report->tests.size(), 4u);  // t1 pp4, t1 tg2, t2 pp4, t2 tg2
  EXPECT_EQ(report->read_bandwidth, report->tests[0].read_bandwidth);
  for (size_t first : {size_t{0}, size_t{2}}) {
    const engine::BenchTest& a = report->tests[first];
    const engine::BenchTest& b = report->tests[first + 1];
    EXPECT_EQ(a.n_threads, b.n_threads);
    EXPECT_GT(a.read_bandwidth, 0.0);
    EXPECT_EQ(a.read_bandwidth, b.read_bandwidth);
    ASSERT_EQ(a.hot.types.size(), b.hot.types.size());
    ASSERT_FALSE(a.hot.types.empty());
    for (size_t i = 0; i < a.hot.types.size(); ++i) {
      EXPECT_GT(a.hot.types[i].hot_rate, 0.0);
      EXPECT_EQ(a.hot.types[i].hot_rate, b.hot.types[i].hot_rate);
    }
  }
  EXPECT_EQ(report->tests[2].n_threads, 2);
}

// Each type's bytes go at the slower of the stream and its hot rate, the rest at the stream.
TEST(Bench, HotRooflineTakesTheSlowerRateOfEachType) {
  engine::HotRoofline hot;
  hot.types = {{GgmlType::kQ8_0, 100, 50.0}, {GgmlType::kQ5_0, 200, 400.0}};
  hot.other_bytes = 10;
  // 100 / 50 + 200 / 100 + 10 / 100 seconds.
  EXPECT_DOUBLE_EQ(hot.ts(100.0), 1.0 / 4.1);
  EXPECT_EQ(hot.ts(0.0), 0.0);
  hot.types[1].hot_rate = 0.0;  // a type not measured: no roofline rather than a wrong one
  EXPECT_EQ(hot.ts(100.0), 0.0);
  EXPECT_EQ(engine::HotRoofline{}.ts(100.0), 0.0);
}

// A tg test at depth d decodes exactly what a runtime decodes after prefilling the d depth tokens
// (so the bench's cache held those d cells when the timed part began), and each repetition starts
// from the same d cells (the last run's tokens are the first's).
TEST(Bench, DepthRunDecodesAfterTheDepthTokensInTheCache) {
  test::TempDir dir;
  auto model = Model::load(make_test_model(dir, "qwen2"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::BenchOptions o;
  o.n_prompt = 8;
  o.n_gen = 6;
  o.n_depth = 40;
  o.n_batch = 16;  // the depth prefill takes 3 forwards
  o.repetitions = 2;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  auto report = engine::run_bench(**model, "m", o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  ASSERT_EQ(report->tests.size(), 2u);
  EXPECT_EQ(report->tests[0].name, "pp8 @ d40");
  EXPECT_EQ(report->tests[1].name, "tg6 @ d40");
  EXPECT_EQ(report->tests[1].n_depth, 40);
  const std::vector<int32_t>& bench_tokens = report->tests[1].tokens;
  ASSERT_EQ(bench_tokens.size(), 6u);

  const engine::BenchTokens ids =
      engine::bench_tokens(o.seed, (*model)->config().n_vocab, o.n_prompt, o.n_depth);
  engine::RuntimeOptions ro;
  ro.n_threads = 1;
  ro.n_ctx = 64;
  ro.cache_type = o.cache_type;
  auto runtime = engine::Runtime::create(**model, ro);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  Batch depth;
  for (int32_t pos = 0; pos < 40; ++pos) {
    depth.add(ids.depth[static_cast<size_t>(pos)], pos, 0, pos == 39);
  }
  ASSERT_TRUE((*runtime)->step(depth).is_ok());
  EXPECT_EQ((*runtime)->cache().length(0), 40);
  int32_t token = ids.first_gen;
  std::vector<int32_t> expected;
  for (int32_t pos = 40; pos < 46; ++pos) {
    Batch b;
    b.add(token, pos, 0, true);
    auto logits = (*runtime)->step(b);
    ASSERT_TRUE(logits.is_ok()) << logits.status().message();
    token =
        static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    expected.push_back(token);
  }
  EXPECT_EQ(bench_tokens, expected);

  // Without the depth, the same first token decodes something else: the cells matter.
  o.n_depth = 0;
  o.n_prompt = 0;
  auto flat = engine::run_bench(**model, "m", o);
  ASSERT_TRUE(flat.is_ok()) << flat.status().message();
  EXPECT_EQ(flat->tests[0].name, "tg6");
  EXPECT_NE(flat->tests[0].tokens, expected);
}

TEST(Bench, RunOrderKeepsEachTestsRunsTogetherOrGoesRoundByRound) {
  using R = engine::BenchRun;
  EXPECT_EQ(engine::bench_run_order(2, 2, false),
            (std::vector<R>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(engine::bench_run_order(2, 2, true),
            (std::vector<R>{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}}));
  EXPECT_EQ(engine::bench_run_order(3, 0, true), (std::vector<R>{{0, 0}, {1, 0}, {2, 0}}));
  EXPECT_TRUE(engine::bench_run_order(0, 3, true).empty());
}

// Interleaved, every test still runs from a cache holding exactly its own depth: tests at depth
// 0 and 40 decode the tokens they decode run one after the other, with each test's repetitions.
TEST(Bench, InterleavedTestsDecodeWhatTheyDecodeAlone) {
  test::TempDir dir;
  auto model = Model::load(make_test_model(dir, "qwen2"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::BenchOptions o;
  o.n_batch = 16;
  o.repetitions = 2;
  o.progress = ProgressStyle::kQuiet;
  engine::BenchGrid grid;
  grid.n_prompt = {8};
  grid.n_gen = {6};
  grid.n_depth = {0, 40};
  grid.n_threads = {2};
  auto plain = engine::run_bench(**model, "m", o, grid);
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  o.interleave = true;
  auto rounds = engine::run_bench(**model, "m", o, grid);
  ASSERT_TRUE(rounds.is_ok()) << rounds.status().message();
  ASSERT_EQ(plain->tests.size(), 4u);
  ASSERT_EQ(rounds->tests.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const engine::BenchTest& a = plain->tests[i];
    const engine::BenchTest& b = rounds->tests[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(b.samples_ts.size(), 2u) << b.name;
    EXPECT_GT(b.avg_ts, 0.0) << b.name;
    EXPECT_EQ(a.tokens, b.tokens) << b.name;
  }
  EXPECT_EQ(rounds->tests[1].name, "tg6");
  EXPECT_EQ(rounds->tests[3].name, "tg6 @ d40");
  EXPECT_EQ(rounds->tests[3].tokens.size(), 6u);
  EXPECT_NE(rounds->tests[1].tokens, rounds->tests[3].tokens);  // the depth's cells matter
}

TEST(Bench, GridCasesInLlamaBenchOrder) {
  engine::BenchGrid grid;
  grid.n_prompt = {128, 0, 512};
  grid.n_gen = {64};
  grid.n_depth = {0, 4096};
  grid.n_threads = {1, 2};
  const std::vector<engine::BenchCase> cases = engine::bench_cases(grid);
  std::vector<std::string> names;
  for (const engine::BenchCase& c : cases) {
    names.push_back(fmt::format("t{} {}", c.n_threads,
                                engine::bench_test_name(c.n_prompt, c.n_gen, c.n_depth)));
  }
  const std::vector<std::string> expected = {
      "t1 pp128", "t1 pp512", "t1 tg64", "t1 pp128 @ d4096", "t1 pp512 @ d4096", "t1 tg64 @ d4096",
      "t2 pp128", "t2 pp512", "t2 tg64", "t2 pp128 @ d4096", "t2 pp512 @ d4096", "t2 tg64 @ d4096"};
  EXPECT_EQ(names, expected);
}

TEST(Bench, ParsesCommaListsAndRejectsBadOnes) {
  auto ok = engine::parse_bench_list("128,512", "-p", 0);
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(*ok, (std::vector<int64_t>{128, 512}));
  EXPECT_EQ(*engine::parse_bench_list("0", "-d", 0), (std::vector<int64_t>{0}));
  const struct {
    const char* text;
    const char* flag;
    int64_t min;
    const char* message;
  } bad[] = {
      {"1,,2", "-p", 0, "-p '1,,2': item 2 is '', expected a comma-separated list of integers ≥ 0"},
      {"-5", "-d", 0, "-d '-5': item 1 is -5, expected ≥ 0"},
      {"", "-n", 0, "item 1 is ''"},
      {"64,", "-n", 0, "item 2 is ''"},
      {"12x", "-p", 0, "item 1 is '12x'"},
      {" 1", "-p", 0, "item 1 is ' 1'"},
      {"99999999999999999999", "-p", 0, "item 1 is '99999999999999999999'"},
      {"1,0", "-t", 1, "-t '1,0': item 2 is 0, expected ≥ 1"},
  };
  for (const auto& b : bad) {
    auto r = engine::parse_bench_list(b.text, b.flag, b.min);
    ASSERT_FALSE(r.is_ok()) << b.text;
    EXPECT_NE(r.status().message().find(b.message), std::string::npos) << r.status().message();
  }
}

// One command measures the grid: every (threads, depth, test) once, with n_depth in the JSON and
// the depth in the test names; bad lists are errors that name the flag.
TEST(Bench, CommandMeasuresTheGrid) {
  test::TempDir dir;
  const std::string model = make_test_model(dir, "llama");
  auto r = test::run_command(test::minfer_binary() + " bench -m " + model +
                             " -p 8,16 -n 4 -d 0,24 -t 1,2 -r 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 12u);
  std::vector<std::string> tests;
  for (const auto& t : j) {
    tests.push_back(fmt::format("t{} {} d{} p{} g{}", t["n_threads"].get<int>(),
                                t["test"].get<std::string>(), t["n_depth"].get<int64_t>(),
                                t["n_prompt"].get<int64_t>(), t["n_gen"].get<int64_t>()));
  }
  EXPECT_EQ(tests[0], "t1 pp8 d0 p8 g0");
  EXPECT_EQ(tests[1], "t1 pp16 d0 p16 g0");
  EXPECT_EQ(tests[2], "t1 tg4 d0 p0 g4");
  EXPECT_EQ(tests[3], "t1 pp8 @ d24 d24 p8 g0");
  EXPECT_EQ(tests[5], "t1 tg4 @ d24 d24 p0 g4");
  EXPECT_EQ(tests[6], "t2 pp8 d0 p8 g0");
  EXPECT_EQ(tests[11], "t2 tg4 @ d24 d24 p0 g4");

  const auto md = test::run_command(test::minfer_binary() + " bench -m " + model +
                                    " -p 8 -n 4 -d 24 -t 1 -r 1 --interleave");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find(" pp8 @ d24 |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(" tg4 @ d24 |"), std::string::npos) << md.out;

  for (const std::string& args :
       {std::string("-p 1,,2"), std::string("-d -5"), std::string("-n 4,x"), std::string("-t 0")}) {
    const auto bad =
        test::run_command(test::minfer_binary() + " bench -m " + model + " " + args + " -r 1");
    EXPECT_EQ(bad.exit_code, 1) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find("[bench] " + args.substr(0, 2) + " '"), std::string::npos)
        << args << "\n"
        << bad.err;
  }
}

// --spec-ngram / -md: each tg test adds a plain and a speculative row, greedy after the same
// prompt (so the same tokens), with the drafts and the acceptance rate in the JSON and the
// markdown; the model as its own draft has every draft accepted.
TEST(Bench, SpeculativeRowsReportAcceptanceBesidePlainDecoding) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string stories = test::test_data_path("models/stories260K.gguf");
  auto model = Model::load(stories);
  ASSERT_TRUE(model.is_ok());
  engine::BenchOptions o;
  o.n_prompt = 0;
  o.n_gen = 16;
  o.repetitions = 2;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  o.speculative.ngram = 2;
  o.speculative.prompt_text = "Lily had a red ball. Lily had a red ball. Lily had a red ball.";
  auto report = engine::run_bench(**model, stories, o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  ASSERT_EQ(report->tests.size(), 3u);
  const engine::BenchTest& plain = report->tests[1];
  const engine::BenchTest& spec = report->tests[2];
  EXPECT_EQ(report->tests[0].name, "tg16");
  EXPECT_EQ(plain.name, "tg16 plain");
  EXPECT_EQ(spec.name, "tg16 ngram2");
  EXPECT_EQ(plain.speculative, "plain");
  EXPECT_EQ(spec.speculative, "ngram2");
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.tokens.size(), 16u);
  EXPECT_EQ(plain.n_drafted, 0);
  EXPECT_GT(spec.n_drafted, 0);
  EXPECT_LE(spec.n_accepted, spec.n_drafted);
  EXPECT_EQ(spec.samples_ts.size(), 2u);
  EXPECT_GT(spec.avg_ts, 0.0);
  const std::string md = engine::bench_markdown(*report);
  EXPECT_NE(md.find(fmt::format("tg16 ngram2: {} of {} drafts accepted", spec.n_accepted,
                                spec.n_drafted)),
            std::string::npos)
      << md;

  // The CLI's JSON, the model drafting for itself (-md).
  auto r = test::run_command(test::minfer_binary() + " bench -m " + stories + " -md " + stories +
                             " -p 0 -n 12 -r 1 -t 2 --draft-max 4 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u) << r.out;
  EXPECT_FALSE(j[0].contains("speculative"));
  EXPECT_EQ(j[1]["test"], "tg12 plain");
  EXPECT_EQ(j[1]["speculative"], "plain");
  EXPECT_EQ(j[1]["n_drafted"], 0);
  EXPECT_EQ(j[2]["test"], "tg12 draft");
  EXPECT_EQ(j[2]["speculative"], "draft");
  EXPECT_EQ(j[2]["n_depth"], engine::kSpecPromptLength);  // the default prompt, a pattern
  const int64_t drafted = j[2]["n_drafted"], accepted = j[2]["n_accepted"];
  EXPECT_GT(drafted, 0);
  EXPECT_GE(accepted, drafted - 4);  // all but the drafts past the 12th token
  EXPECT_DOUBLE_EQ(j[2]["acceptance"].get<double>(),
                   static_cast<double>(accepted) / static_cast<double>(drafted));
  // Both, or a missing prompt file: errors.
  auto both = test::run_command(test::minfer_binary() + " bench -m " + stories + " -md " + stories +
                                " --spec-ngram 2 -p 0 -n 4 -r 1");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  auto missing = test::run_command(test::minfer_binary() + " bench -m " + stories +
                                   " --spec-ngram 2 --spec-prompt /nonexistent/p.txt -p 0 -n 4");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("cannot read --spec-prompt file"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace minfer
