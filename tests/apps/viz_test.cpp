// The pipeline viewer: `minfer viz` serves web/viz.html with a trace and a graph dump, and
// Debian's headless chromium loads it without a script error and shows every step's nodes.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace minfer {
namespace {

TEST(Viz, HeadlessChromiumLoadsATraceAndGraph) {
  MINFER_REQUIRE_TEST_DATA();
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    MINFER_SKIP_OR_FAIL("/usr/bin/chromium is not installed (scripts/setup.sh installs it)");
  }
  test::TempDir dir;
  const std::string bin = test::minfer_binary();
  const auto run =
      test::run_command(bin + " run -m " + test::test_data_path("models/stories260K.gguf") +
                        " -p 'Once upon a time' -n 4 --temp 0 --trace " + dir.file("t.jsonl") +
                        " --dump-graph " + dir.file("g.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Start the viewer on a free port, wait for its address, load it, stop it.
  const std::string script =
      bin + " viz --port 0 --trace " + dir.file("t.jsonl") + " --graph " + dir.file("g.json") +
      " > " + dir.file("viz.out") + " 2>&1 & pid=$!; " + "for i in $(seq 100); do grep -q http " +
      dir.file("viz.out") + " && break; sleep 0.1; done; " + "url=$(awk '{print $2}' " +
      dir.file("viz.out") + "); " +
      "timeout 60 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update "
      "--disable-sync --user-data-dir=" +
      dir.file("chromium") + " --virtual-time-budget=5000 --dump-dom \"$url\" 2>/dev/null; " +
      "status=$?; kill $pid; wait $pid; exit $status";
  const auto page = test::run_command("bash -c " + test::shell_quote(script));
  ASSERT_EQ(page.exit_code, 0) << page.err;
  // Four generated tokens: one prefill step and three decode steps; no script error.
  EXPECT_NE(page.out.find("data-steps=\"4\""), std::string::npos) << page.out.substr(0, 2000);
  EXPECT_EQ(page.out.find("data-errors"), std::string::npos) << page.out.substr(0, 2000);
  EXPECT_NE(page.out.find("data-node=\"blk.0.attn_q\""), std::string::npos);
  EXPECT_NE(page.out.find("0 with NaN/Inf"), std::string::npos);
  EXPECT_NE(page.out.find("graph: 85 nodes"), std::string::npos);
}

TEST(Viz, AMissingTraceIsAnError) {
  const auto r = test::run_command(test::minfer_binary() + " viz --port 0 --trace /nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("[viz] cannot read '/nonexistent'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace minfer
