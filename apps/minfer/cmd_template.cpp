// `minfer template -m MODEL -i REQUEST.json`: renders the model's chat template for an
// OpenAI-style request body and prints exactly the prompt (no newline added), so what the model
// would be fed can be inspected and diffed against other engines.
#include <cstdio>
#include <string>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

void register_template_command(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string model;
    std::string request;
  };
  auto [cmd, opts] = add_command<Options>(
      app, "template", "Render a model's chat template for an OpenAI-style request and print it");
  cmd->add_option("-m,--model", opts->model, "GGUF model file")->required();
  cmd->add_option("-i,--input", opts->request, "request JSON (messages, tools, ...)")->required();
  // Errors are printed as the library words them (a render error is one line already).
  registry.add(cmd, [opts = opts]() {
    const Result<std::string> prompt = render_chat_template({opts->model, opts->request});
    if (!prompt.is_ok()) {
      std::fprintf(stderr, "%s\n", prompt.status().message().c_str());
      return 1;
    }
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  });
}

}  // namespace minfer::app
