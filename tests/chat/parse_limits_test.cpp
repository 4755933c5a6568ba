// The chat template parser's budgets (core/input_limits.h): a template nested past
// kMaxTemplateNesting is refused at load, fast, with the limit and the line; one within it parses
// and renders; a source past kMaxTemplateBytes is refused before it is read.
#include "chat/chat_template.h"
#include "chat_test_util.h"
#include "core/input_limits.h"
#include "hostile_templates.h"
#include "test_util.h"

namespace minfer::chat::test {
namespace {

Result<std::string> render_hello(const std::string& source) {
  auto t = ChatTemplate::create(source, "<s>", "</s>");
  if (!t.is_ok()) return t.status();
  return t->render(ojson::parse(R"([{"role": "user", "content": "hello"}])"), nullptr, true,
                   ojson::object());
}

TEST(TemplateParseLimits, DeepTemplatesAreRefusedAtLoadNamingTheLimitAndTheLine) {
  for (const DeepTemplate& d : deep_templates()) {
    SCOPED_TRACE(d.source.substr(0, 60));
    const double start = thread_seconds();
    auto t = ChatTemplate::create(d.source, "", "");
    [[maybe_unused]] const double seconds = thread_seconds() - start;
    ASSERT_FALSE(t.is_ok());
    EXPECT_EQ(t.status().message(),
              fmt::format("[chat] template line {}: expressions and statements nested deeper "
                          "than the limit of {}",
                          d.line, limits::kMaxTemplateNesting));
#if !defined(MINFER_TEST_ASAN)
    EXPECT_LT(seconds, 1.0);
#endif
  }
}

// What real templates write stays far inside the limit, and the deepest of each kind that the
// limit allows parses and renders (the interpreter's recursion over it fits the stack, ASan's
// larger frames included).
TEST(TemplateParseLimits, NestingWithinTheLimitRenders) {
  const int n = limits::kMaxTemplateNesting / 4;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{{ " + repeated("not ", n) + "true }}", n % 2 == 0 ? "True" : "False"},
      {"{{ " + repeated("(", n) + "7" + repeated(")", n) + " }}", "7"},
      {"{{ 1" + repeated(" + 1", n) + " }}", std::to_string(n + 1)},
      {"{{ " + repeated("[", n) + repeated("]", n) + "|length }}", "1"},
      {"{{ 'a'" + repeated("|upper", n) + " }}", "A"},
      {repeated("{% if true %}", n) + "x" + repeated("{% endif %}", n), "x"},
  };
  for (const auto& [source, expected] : cases) {
    SCOPED_TRACE(source.substr(0, 60));
    auto r = render_hello(source);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(*r, expected);
  }
}

TEST(TemplateParseLimits, OneLevelPastTheLimitIsRefusedAndTheLimitItselfParses) {
  // The printed expression is one level and each `(` opens one more inside it.
  const int at_limit = limits::kMaxTemplateNesting - 1;
  auto ok = ChatTemplate::create(
      "{{ " + repeated("(", at_limit) + "1" + repeated(")", at_limit) + " }}", "", "");
  EXPECT_TRUE(ok.is_ok()) << ok.status().message();
  auto over = ChatTemplate::create(
      "{{ " + repeated("(", at_limit + 1) + "1" + repeated(")", at_limit + 1) + " }}", "", "");
  ASSERT_FALSE(over.is_ok());
  EXPECT_NE(over.status().message().find("nested deeper than the limit"), std::string::npos);
}

TEST(TemplateParseLimits, ASourcePastTheSizeLimitIsRefusedBeforeItIsParsed) {
  const std::string source(limits::kMaxTemplateBytes + 1, 'x');
  auto t = ChatTemplate::create(source, "", "");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().message(),
            fmt::format("[chat] template: {} bytes, over the limit of {} bytes", source.size(),
                        limits::kMaxTemplateBytes));
  EXPECT_TRUE(ChatTemplate::create(std::string(limits::kMaxTemplateBytes, 'x'), "", "").is_ok());
}

}  // namespace
}  // namespace minfer::chat::test
