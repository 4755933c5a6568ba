// `minfer template -m MODEL -i REQUEST.json`: prints exactly the rendered prompt.
#include <fstream>

#include "chat/chat_test_util.h"
#include "gguf/gguf_file.h"

namespace minfer::chat::test {
namespace {

using minfer::test::minfer_binary;
using minfer::test::run_command;
using minfer::test::TempDir;
using minfer::test::test_data_path;

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.file(name);
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

const char* kRequest = R"({
  "model": "ignored",
  "temperature": 0.7,
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in 東京? 🌧"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}]},
    {"role": "tool", "tool_call_id": "call12345", "content": "rain, 18°C"}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
  "chat_template_kwargs": {"enable_thinking": false}
})";

TEST(TemplateCommand, PrintsExactlyThePromptJinja2Renders) {
  MINFER_REQUIRE_TEST_DATA();
  MINFER_REQUIRE_PYTHON_JINJA2();
  TempDir dir;
  std::string request = write_file(dir, "req.json", kRequest);
  std::string model = test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf");
  auto r = run_command(minfer_binary() + " template -m " + model + " -i " + request);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // The Qwen3 template ends the generation prompt with an empty think block when thinking is
  // off; nothing (no newline) follows it.
  const std::string tail = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  ASSERT_GE(r.out.size(), tail.size());
  EXPECT_EQ(r.out.substr(r.out.size() - tail.size()), tail);
  EXPECT_NE(
      r.out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}"),
      std::string::npos);

  // The same bytes as Python Jinja2 given the template from the file.
  Case c{"cli", "", ojson::parse(kRequest), "", ""};
  auto gguf = GgufFile::open(model);
  ASSERT_TRUE(gguf.is_ok());
  c.template_source = gguf.value()->get_string("tokenizer.chat_template").value();
  auto tokens = gguf.value()->get_string_array("tokenizer.ggml.tokens").value();
  c.bos_token = tokens->at(
      static_cast<size_t>(gguf.value()->get_integer("tokenizer.ggml.bos_token_id").value()));
  c.eos_token = tokens->at(
      static_cast<size_t>(gguf.value()->get_integer("tokenizer.ggml.eos_token_id").value()));
  std::vector<Rendered> py = render_with_python({c});
  ASSERT_EQ(py.size(), 1u);
  ASSERT_TRUE(py[0].ok) << py[0].output;
  EXPECT_EQ(r.out, py[0].output);
}

TEST(TemplateCommand, FallsBackToChatMlWithoutATemplate) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  std::string request = write_file(
      dir, "req.json",
      R"({"messages": [{"role": "user", "content": "Once upon a time"}], "add_generation_prompt": false})");
  auto r = run_command(minfer_binary() + " template -m " +
                       test_data_path("models/stories260K.gguf") + " -i " + request);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nOnce upon a time<|im_end|>\n");
}

TEST(TemplateCommand, ErrorsAreOneLineOnStderr) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  std::string model = test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf");
  struct Bad {
    std::string request;
    std::string needle;
  };
  const Bad kBad[] = {
      {"{ not json", "not valid JSON"},
      {R"({"messages": "hello"})", "messages: expected an array"},
      {R"({"prompt": "x"})", "missing 'messages'"},
      // The Qwen3 template calls .startswith on a user message's content: None has no such method.
      {R"({"messages": [{"role": "user", "content": null}]})", "[chat] template line"},
  };
  for (const Bad& b : kBad) {
    std::string request = write_file(dir, "bad.json", b.request);
    auto r = run_command(minfer_binary() + " template -m " + model + " -i " + request);
    EXPECT_EQ(r.exit_code, 1) << b.request;
    EXPECT_EQ(r.out, "") << b.request;
    EXPECT_NE(r.err.find(b.needle), std::string::npos) << b.request << " -> " << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  }
  auto missing = run_command(minfer_binary() + " template -m " + model + " -i " +
                             dir.file("does-not-exist.json"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot open request file"), std::string::npos);
  auto no_model = run_command(minfer_binary() + " template -m " + dir.file("nope.gguf") + " -i " +
                              write_file(dir, "ok.json", R"({"messages": []})"));
  EXPECT_EQ(no_model.exit_code, 1);
  EXPECT_FALSE(no_model.err.empty());
}

}  // namespace
}  // namespace minfer::chat::test
