// minfer bench: the JSON and markdown reports, and the statistics they carry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/bench.h"
#include "models/model.h"
#include "test_util.h"
#include "tools/model_maker.h"

namespace minfer {
namespace {

TEST(Bench, JsonHasLlamaBenchFields) {
  test::TempDir dir;
  MakeModelOptions m;
  m.arch = "qwen2";
  m.type = "q8_0";
  m.output = dir.file("m.gguf");
  m.progress = ProgressStyle::kQuiet;
  ASSERT_TRUE(make_model(m).is_ok());
  auto r = test::run_command(test::minfer_binary() + " bench -m " + m.output +
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

TEST(Bench, MarkdownTable) {
  test::TempDir dir;
  MakeModelOptions m;
  m.arch = "llama";
  m.output = dir.file("m.gguf");
  m.progress = ProgressStyle::kQuiet;
  ASSERT_TRUE(make_model(m).is_ok());
  auto model = Model::load(m.output);
  ASSERT_TRUE(model.is_ok());
  engine::BenchOptions o;
  o.n_prompt = 16;
  o.n_gen = 4;
  o.repetitions = 1;
  o.n_threads = 1;
  o.progress = ProgressStyle::kQuiet;
  auto report = engine::run_bench(**model, m.output, o);
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
  EXPECT_FALSE(engine::run_bench(**model, m.output, o).is_ok());
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
    auto report = engine::run_bench(**model, name, o);
    ASSERT_TRUE(report.is_ok()) << report.status().message();
    EXPECT_EQ(report->decode_weight_bytes, expected_decode_bytes(**model)) << name;
    EXPECT_GT(report->read_bandwidth, 0.0);
    EXPECT_NEAR(report->roofline_ts(),
                report->read_bandwidth / static_cast<double>(report->decode_weight_bytes), 1e-9);
    const std::string md = engine::bench_markdown(*report);
    EXPECT_NE(md.find("of weights per token"), std::string::npos) << md;
    EXPECT_NE(md.find("tg2 reaches "), std::string::npos) << md;
    const nlohmann::json j = nlohmann::json::parse(engine::bench_json(*report));
    EXPECT_EQ(j[0]["decode_weight_bytes"].get<uint64_t>(), report->decode_weight_bytes);
  }
}

}  // namespace
}  // namespace minfer
