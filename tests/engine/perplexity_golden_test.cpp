// `minfer perplexity` with its defaults (f16 cells, llama.cpp's CPU flash-attention arithmetic)
// against llama-perplexity's printed values on stories260K
// (../shared/golden/perplexity/stories260K.tinystory.json), for both context sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer {
namespace {

struct Printed {
  std::vector<double> running;  // "[1]3.3644,[2]…"
  double ppl = NAN;             // "Final estimate: PPL = 4.0156 +/- 0.42810"
  double error = NAN;
};

Printed parse(const std::string& out) {
  Printed p;
  size_t at = 0;
  while ((at = out.find('[', at)) != std::string::npos) {
    int index = 0;
    double value = 0.0;
    if (std::sscanf(out.c_str() + at, "[%d]%lf,", &index, &value) == 2) p.running.push_back(value);
    ++at;
  }
  const size_t final_at = out.find("Final estimate: PPL = ");
  if (final_at != std::string::npos) {
    std::sscanf(out.c_str() + final_at, "Final estimate: PPL = %lf +/- %lf", &p.ppl, &p.error);
  }
  return p;
}

// Agreement to 3 decimals: within half a unit of the third decimal.
constexpr double kThreeDecimals = 5e-4;

TEST(PerplexityGolden, DefaultsMatchLlamaPerplexityToThreeDecimals) {
  MINFER_REQUIRE_TEST_DATA();
  std::ifstream in(test::test_data_path("golden/perplexity/stories260K.tinystory.json"));
  std::stringstream json;
  json << in.rdbuf();
  const nlohmann::json golden = nlohmann::json::parse(json.str());
  ASSERT_EQ(golden["runs"].size(), 2u);
  for (const auto& run : golden["runs"]) {
    const int n_ctx = run["n_ctx"].get<int>();
    SCOPED_TRACE("n_ctx " + std::to_string(n_ctx));
    const test::CommandResult r =
        test::run_command(test::minfer_binary() + " perplexity -m " +
                          test::test_data_path("models/stories260K.gguf") + " -f " +
                          test::test_data_path("golden/perplexity/tinystory.txt") + " -c " +
                          std::to_string(n_ctx) + " -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Printed p = parse(r.out);
    const std::vector<double> want = run["running_ppl"].get<std::vector<double>>();
    ASSERT_EQ(p.running.size(), want.size()) << r.out;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_LT(std::fabs(p.running[i] - want[i]), kThreeDecimals)
          << "chunk " << i + 1 << ": " << p.running[i] << " vs " << want[i];
    }
    EXPECT_LT(std::fabs(p.ppl - run["ppl"].get<double>()), kThreeDecimals) << r.out;
    EXPECT_LT(std::fabs(p.error - run["stderr"].get<double>()), kThreeDecimals) << r.out;
  }
}

}  // namespace
}  // namespace minfer
