// The render budgets (chat/budget.h): hostile templates stop fast with an error naming the
// budget and line; the limits can be lowered; real templates stay far inside them.
#include "chat/chat_template.h"
#include "chat/value.h"
#include "chat_test_util.h"
#include "hostile_templates.h"
#include "test_util.h"

namespace minfer::chat::test {
namespace {

Result<std::string> render(const std::string& source, const RenderLimits& limits = {}) {
  auto t = ChatTemplate::create(source, "<s>", "</s>");
  if (!t.is_ok()) return t.status();
  t->set_limits(limits);
  return t->render(ojson::parse(R"([{"role": "user", "content": "hello"}])"), nullptr, true,
                   ojson::object());
}

TEST(RenderBudget, HostileTemplatesStopWithinASecondNamingTheBudget) {
  for (const HostileTemplate& h : hostile_templates()) {
    SCOPED_TRACE(h.source);
    // CPU time of this thread: what the render costs, whatever else the test machine runs.
    const double start = thread_seconds();
    auto r = render(h.source);
    [[maybe_unused]] const double seconds = thread_seconds() - start;  // unchecked under ASan
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("[chat] template line 1: "), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(h.error), std::string::npos) << r.status().message();
#if !defined(MINFER_TEST_ASAN)
    EXPECT_LT(seconds, 1.0);
#endif
  }
}

TEST(RenderBudget, LoweredLimitsSayWhatWasAskedAndTheLimit) {
  RenderLimits small;
  small.max_steps = 100;
  small.max_value_bytes = 1000;
  small.max_output_bytes = 500;
  EXPECT_EQ(render("{{ 'ab' * 600 }}", small).status().message(),
            "[chat] template line 1: a string of 1200 bytes exceeds the 1000 bytes size budget");
  EXPECT_EQ(render("\n{{ [1, 2] * 1000 }}", small).status().message(),
            fmt::format("[chat] template line 2: a list of 2000 items ({} bytes) exceeds the 1000 "
                        "bytes size budget",
                        2000 * sizeof(Value)));
  EXPECT_EQ(render("{% for i in range(1000) %}{% endfor %}", small).status().message(),
            "[chat] template line 1: the render took more than 100 steps (loop iterations, calls, "
            "filters and data copied): it exceeds the step budget");
  RenderLimits small_output = small;
  small_output.max_steps = 1000;
  EXPECT_EQ(
      render("{% for i in range(60) %}{{ 'x' * 10 }}{% endfor %}", small_output).status().message(),
      "[chat] template line 1: the rendered text reached 510 bytes: it exceeds the 500 bytes "
      "output budget");
  // Under the limits, the same render succeeds.
  EXPECT_EQ(render("{% for i in range(3) %}{{ 'x' * 10 }}{% endfor %}", small).value(),
            std::string(30, 'x'));
  // The default budgets are the documented ones.
  RenderLimits defaults;
  EXPECT_EQ(defaults.max_steps, 1'000'000u);
  EXPECT_EQ(defaults.max_value_bytes, 16u << 20);
  EXPECT_EQ(defaults.max_output_bytes, 16u << 20);
}

// One user message with `content`.
ojson user_says(const ojson& content) {
  ojson messages = ojson::array();
  messages.push_back(ojson::object({{"role", "user"}, {"content", content}}));
  return messages;
}

TEST(RenderBudget, ABudgetErrorLeavesTheTemplateUsable) {
  const std::string source =
      "{% if messages[0].content == 'big' %}{{ 'a' * 10**12 }}{% else %}{{ messages[0].content "
      "}}{% endif %}";
  const ChatTemplate t = ChatTemplate::create(source, "", "").value();
  EXPECT_EQ(t.render(user_says("big"), nullptr, true, {}).status().code(),
            ErrorCode::kResourceExhausted);
  EXPECT_EQ(t.render(user_says("fine"), nullptr, true, {}).value(), "fine");
}

TEST(RenderBudget, NumbersOutOfRangeAreErrorsNotExceptions) {
  // Found by the fuzzer: std::stoll's exceptions escaped ChatTemplate.
  for (const char* source : {"{{ 0basic }}", "{{ 99999999999999999999 }}", "{{ 1e999999 }}",
                             "{{ '{99999999999999999999}'.format(1) }}"}) {
    SCOPED_TRACE(source);
    auto r = render(source);
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().message().rfind("[chat] ", 0), 0u);
    }
  }
}

TEST(RenderBudget, DeeplyNestedInputIsAnErrorNotACrash) {
  const ChatTemplate t = ChatTemplate::create("{{ messages|length }}", "", "").value();
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  auto r = t.render(user_says(ojson::parse(deep)), nullptr, true, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("nested more than 512 deep"), std::string::npos);
}

}  // namespace
}  // namespace minfer::chat::test
