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
#include "gguf/gguf_file.h"

namespace minfer::app {
namespace {

// The text of token `key` (e.g. tokenizer.ggml.bos_token_id), or "" when the file has none.
std::string special_token(const GgufFile& file, const char* key) {
  if (file.find(key) == nullptr) return "";
  auto id = file.get_integer(key);
  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!id.is_ok() || !tokens.is_ok()) return "";
  const std::vector<std::string>& list = *tokens.value();
  if (id.value() < 0 || static_cast<size_t>(id.value()) >= list.size()) return "";
  return list[static_cast<size_t>(id.value())];
}

int run_template(const std::string& model_path, const std::string& request_path) {
  auto file = GgufFile::open(model_path);
  if (!file.is_ok()) {
    std::fprintf(stderr, "%s\n", file.status().message().c_str());
    return 1;
  }
  const GgufFile& gguf = *file.value();
  std::string source = chat::kChatMlTemplate;
  if (gguf.find("tokenizer.chat_template") != nullptr) {
    auto tmpl = gguf.get_string("tokenizer.chat_template");
    if (!tmpl.is_ok()) {
      std::fprintf(stderr, "%s\n", tmpl.status().message().c_str());
      return 1;
    }
    source = tmpl.value();
  }
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
  auto tmpl = chat::ChatTemplate::create(source, special_token(gguf, "tokenizer.ggml.bos_token_id"),
                                         special_token(gguf, "tokenizer.ggml.eos_token_id"));
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
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "template", "Render a model's chat template for an OpenAI-style request and print it");
  cmd->add_option("-m,--model", opts->model, "GGUF model file")->required();
  cmd->add_option("-i,--input", opts->request, "request JSON (messages, tools, ...)")->required();
  registry.add(cmd, [opts]() { return run_template(opts->model, opts->request); });
}

}  // namespace minfer::app
