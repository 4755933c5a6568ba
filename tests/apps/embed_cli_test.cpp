// `minfer embed`: one unit-length JSON array per text, the same text the same vector, --output json
// in OpenAI's shape, --pooling and --no-normalize, texts from a file, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace minfer::test {
namespace {

std::string embed_cmd(const std::string& args) {
  return minfer_binary() + " embed -t 2 -c 256 -m '" +
         test_data_path("models/qwen2-tiny-f32.gguf") + "' " + args;
}

std::vector<std::vector<float>> lines_of(const std::string& out) {
  std::vector<std::vector<float>> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    rows.push_back(nlohmann::json::parse(line).get<std::vector<float>>());
  }
  return rows;
}

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

TEST(EmbedCli, OneUnitArrayPerText) {
  MINFER_REQUIRE_TEST_DATA();
  const auto r = run_command(embed_cmd("-p 'hello world' -p 'a cat' -p 'hello world'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = lines_of(r.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].size(), 256u);  // n_embd
  for (const auto& v : rows) EXPECT_NEAR(norm(v), 1.0, 1e-5);
  EXPECT_EQ(rows[0], rows[2]);
  EXPECT_NE(rows[0], rows[1]);
}

TEST(EmbedCli, JsonOutputPoolingAndFile) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  const std::string text = "hello world\n\na cat\n";
  write_file_bytes(dir.file("in.txt"), std::vector<uint8_t>(text.begin(), text.end()));
  const auto r =
      run_command(embed_cmd("--output json --pooling mean -f '" + dir.file("in.txt") + "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["pooling"], "mean");
  ASSERT_EQ(j["data"].size(), 2u);  // the empty line is skipped
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 0);
  const auto mean = j["data"][0]["embedding"].get<std::vector<float>>();
  const auto last = lines_of(run_command(embed_cmd("-p 'hello world'")).out);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_NE(mean, last[0]);
  const auto raw = lines_of(run_command(embed_cmd("--no-normalize -p 'hello world'")).out);
  ASSERT_EQ(raw.size(), 1u);
  const double n = norm(raw[0]);
  EXPECT_GT(std::abs(n - 1.0), 1e-3);
  for (size_t i = 0; i < raw[0].size(); ++i) EXPECT_NEAR(raw[0][i] / n, last[0][i], 1e-5);
}

TEST(EmbedCli, Errors) {
  MINFER_REQUIRE_TEST_DATA();
  const auto none = run_command(embed_cmd(""));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("-p TEXT"), std::string::npos) << none.err;
  const auto pooling = run_command(embed_cmd("--pooling rank -p x"));
  EXPECT_EQ(pooling.exit_code, 1);
  EXPECT_NE(pooling.err.find("'rank'"), std::string::npos) << pooling.err;
  const auto output = run_command(embed_cmd("--output xml -p x"));
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_NE(output.err.find("xml"), std::string::npos) << output.err;
}

}  // namespace
}  // namespace minfer::test
