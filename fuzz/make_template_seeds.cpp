// Writes the template fuzzer's seed corpus: the real chat templates (tests/chat/templates/*.jinja
// and those of the shared models with real tokenizers), each alone and followed by a NUL and a
// request body, plus the hostile templates of the budget tests.
// Usage: minfer_template_fuzz_seeds OUT_DIR TEMPLATES_DIR SHARED_MODELS_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chat/hostile_templates.h"
#include "gguf/gguf_file.h"

namespace {

namespace fs = std::filesystem;

const char* const kBody =
    R"({"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant",
"content": "4"}, {"role": "user", "content": "And 3+3?"}], "add_generation_prompt": true})";

int written = 0;

void write_seed(const fs::path& dir, const std::string& text) {
  for (const std::string& seed : {text, text + std::string(1, '\0') + kBody}) {
    std::ofstream out(dir / ("seed-" + std::to_string(written++)), std::ios::binary);
    out << seed;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR TEMPLATES_DIR SHARED_MODELS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(argv[2], ec)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    write_seed(out, text.str());
  }
  for (const char* model : {"qwen3-qwentok-tiny-q8_0.gguf", "qwen2.5-qwentok-tiny-q8_0.gguf",
                            "llama3-llamatok-tiny-q8_0.gguf"}) {
    auto file = minfer::GgufFile::open((fs::path(argv[3]) / model).string());
    if (!file.is_ok()) continue;
    auto source = (*file)->get_string("tokenizer.chat_template");
    if (source.is_ok()) write_seed(out, source.value());
  }
  for (const auto& h : minfer::chat::test::hostile_templates()) write_seed(out, h.source);
  std::printf("template seeds: %d files\n", written);
  return 0;
}
