// `minfer template -m MODEL -i REQUEST.json`: renders the model's chat template for an
// OpenAI-style request body and prints exactly the prompt (no newline added), so what the model
// would be fed can be inspected and diffed against other engines.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "commands.h"
#include "engine/conversation.h"
#include "gguf/gguf_file.h"

namespace minfer::app {
namespace {

int run_template(const std::string& model_path, const std::string& request_path) {
  auto file = GgufFile::open(model_path);
  if (!file.is_ok()) {
    std::fprintf(stderr, "%s\n", file.status().message().c_str());
    return 1;
  }
  const GgufFile& gguf = *file.value();
  std::ifstream in(request_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "[template] cannot open request file '%s'\n", request_path.c_str());
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::ordered_json body;
  try {
    body = nlohmann::ordered_json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "[template] request file '%s' is not valid JSON: %s\n",
                 request_path.c_str(), message.c_str());
    return 1;
  }
  auto tmpl = engine::load_chat_template(gguf);
  if (!tmpl.is_ok()) {
    std::fprintf(stderr, "%s\n", tmpl.status().message().c_str());
    return 1;
  }
  auto prompt = tmpl->render_request(body);
  if (!prompt.is_ok()) {
    std::string message = prompt.status().message();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "%s\n", message.c_str());
    return 1;
  }
  std::fwrite(prompt.value().data(), 1, prompt.value().size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void register_template_command(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string model;
    std::string request;
  };
  auto [cmd, opts] = add_command<Options>(
      app, "template", "Render a model's chat template for an OpenAI-style request and print it");
  cmd->add_option("-m,--model", opts->model, "GGUF model file")->required();
  cmd->add_option("-i,--input", opts->request, "request JSON (messages, tools, ...)")->required();
  registry.add(cmd, [opts = opts]() { return run_template(opts->model, opts->request); });
}

}  // namespace minfer::app
