// --profile's op times account for the step: summed over the nodes of each step they come within
// 10% of the measured step time (the rest is the executor's own bookkeeping).
#include <gtest/gtest.h>

#include <cstdio>

#include "graph/observe.h"
#include "kernels/dispatch.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

TEST(Profile, OpTimesAddUpToTheStepTime) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  kernels::ThreadPool pool(1);
  auto cache = (*model)->make_cache(GgmlType::kF32, 128, 16);
  ASSERT_TRUE(cache.is_ok());
  Forward forward(**model, **cache, kernels::active_table(), pool);
  // A warm-up on another sequence builds the graphs and sizes the buffers (work the profile
  // rightly does not attribute to any op).
  Batch warm_prompt, warm_one;
  for (int32_t p = 0; p < 32; ++p) warm_prompt.add(p, p, 1, p == 31);
  warm_one.add(1, 32, 1, true);
  ASSERT_TRUE(forward.step(warm_prompt).is_ok());
  ASSERT_TRUE(forward.step(warm_one).is_ok());
  OpProfile profile;
  RunObservers observers;
  observers.profile = &profile;
  forward.set_observers(&observers);
  for (int32_t chunk = 0; chunk < 4; ++chunk) {
    Batch prompt;
    for (int32_t p = 0; p < 32; ++p) prompt.add((p * 7 + chunk) % 1000, p, 2 + chunk, p == 31);
    ASSERT_TRUE(forward.step(prompt).is_ok());
  }
  for (int32_t p = 0; p < 64; ++p) {
    Batch one;
    one.add(p * 13 % 1000, p, 0, true);
    ASSERT_TRUE(forward.step(one).is_ok());
  }
  for (StepKind kind : {StepKind::kPrefill, StepKind::kDecode}) {
    const double nodes = profile.total_node_seconds(kind);
    const double steps = profile.total_step_seconds(kind);
    ASSERT_GT(steps, 0.0);
    std::printf("[profile] %s: ops %.3f ms of %.3f ms (%.1f%%)\n", step_kind_name(kind),
                nodes * 1e3, steps * 1e3, 100.0 * nodes / steps);
    EXPECT_LE(nodes, steps);
    EXPECT_GE(nodes, 0.9 * steps) << step_kind_name(kind) << ": ops " << nodes * 1e3 << " ms of a "
                                  << steps * 1e3 << " ms step total";
  }
}

}  // namespace
}  // namespace minfer
