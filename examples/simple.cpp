// The smallest complete program on minfer's public API (include/minfer/minfer.h): load a model,
// tokenize a prompt, generate greedily and print the text as it comes.
//
//   build/examples/minfer-simple -m ../shared/models/stories260K.gguf -n 32 "Once upon a time"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "minfer/minfer.h"

int main(int argc, char** argv) {
  std::string model_path;
  std::string prompt;
  int64_t n_predict = 32;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-m" && i + 1 < argc) {
      model_path = argv[++i];
    } else if (arg == "-n" && i + 1 < argc) {
      n_predict = std::atoll(argv[++i]);
    } else {
      prompt = arg;
    }
  }
  if (model_path.empty() || prompt.empty()) {
    std::fprintf(stderr, "usage: %s -m MODEL.gguf [-n N_PREDICT] PROMPT\n", argv[0]);
    return 1;
  }

  auto model = minfer::LanguageModel::load(model_path);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  const std::vector<int32_t> tokens = (*model)->tokenize(prompt);
  std::printf("%s", prompt.c_str());

  minfer::GenerateParams params;
  params.max_tokens = n_predict;
  params.temperature = 0.0f;  // greedy
  auto reply = (*model)->generate(tokens, params, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!reply.is_ok()) {
    std::fprintf(stderr, "\n%s\n", reply.status().message().c_str());
    return 1;
  }
  std::printf("\n");
  std::fprintf(stderr, "%zu tokens (%s), %.1f tok/s\n", reply->tokens.size(),
               reply->finish_reason.c_str(), reply->decode_tok_s);
  return 0;
}
