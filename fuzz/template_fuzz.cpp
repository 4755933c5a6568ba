// libFuzzer target for the chat template interpreter. An input is a template source, optionally
// followed by a NUL byte and a JSON request body (messages, tools, template variables; a
// two-turn conversation when absent or not an object with messages). Properties checked on
// every input:
//  - parsing and rendering never crash, hang, leak or trip a sanitizer, whatever the template
//    asks for (the render budgets are lowered so that each input stays fast);
//  - a failure is one Status whose message starts "[chat] ";
//  - a successful render stays within the output budget.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace {

[[noreturn]] void property_failed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "template_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const minfer::Status& status) {
  if (status.message().rfind("[chat] ", 0) != 0) {
    property_failed("error without the component", status.message());
  }
}

nlohmann::ordered_json default_body() {
  return nlohmann::ordered_json::parse(
      R"({"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": "Hi <b>there</b> é 😀"},
                       {"role": "assistant", "content": "Hello.", "tool_calls": [{"type": "function",
                        "function": {"name": "f", "arguments": {"x": 1}}}]},
                       {"role": "tool", "content": "42"},
                       {"role": "user", "content": "Thanks"}],
          "tools": [{"type": "function", "function": {"name": "f", "parameters":
                     {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
          "enable_thinking": true})");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string source(input.substr(0, nul));
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1), nullptr,
      /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("messages")) body = default_body();

  auto tmpl = minfer::chat::ChatTemplate::create(source, "<s>", "</s>");
  if (!tmpl.is_ok()) {
    check_error(tmpl.status());
    return 0;
  }
  minfer::chat::RenderLimits limits;
  limits.max_steps = 20'000;
  limits.max_value_bytes = 256 << 10;
  limits.max_output_bytes = 256 << 10;
  tmpl->set_limits(limits);
  auto out = tmpl->render_request(body);
  if (!out.is_ok()) {
    check_error(out.status());
  } else if (out.value().size() > limits.max_output_bytes) {
    property_failed("output over the budget", std::to_string(out.value().size()));
  }
  return 0;
}
