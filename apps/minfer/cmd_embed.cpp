// minfer embed: the embedding of each text — the model's last hidden state pooled (the file's
// pooling_type, else the last token; --pooling overrides) and L2-normalized — printed as one JSON
// array per line, or with --output json as one object in the shape of OpenAI's embeddings reply.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "minfer/minfer.h"
#include "model_source.h"

namespace minfer::app {

namespace {

struct EmbedCli {
  std::string model;
  ModelSourceFlags source;
  std::vector<std::string> prompts;
  std::string file;
  std::string pooling;
  std::string output = "lines";
  bool no_normalize = false;
  LoadOptions load;
};

// The texts: every -p, then each non-empty line of -f.
Result<std::vector<std::string>> read_texts(const EmbedCli& o) {
  std::vector<std::string> texts = o.prompts;
  if (!o.file.empty()) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, "[embed] cannot read '{}'", o.file);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) texts.push_back(std::move(line));
    }
  }
  if (texts.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[embed] no text: give -p TEXT (repeatable) or -f FILE (one per line)");
  }
  return texts;
}

std::string json_array(const std::vector<float>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

Status run_embed(EmbedCli& o) {
  if (o.output != "lines" && o.output != "json") {
    return make_error(ErrorCode::kInvalidArgument,
                      "[embed] unknown --output '{}': expected lines or json", o.output);
  }
  MINFER_ASSIGN_OR_RETURN(std::vector<std::string> texts, read_texts(o));
  MINFER_RETURN_IF_ERROR(resolve_model_path(o.model, o.source, "embed"));
  o.load.single_sequence = false;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model,
                          LanguageModel::load(o.model, o.load));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Embedder> embedder,
                          model->embedder({.pooling = o.pooling, .normalize = !o.no_normalize}));
  std::vector<std::vector<int32_t>> inputs;
  int64_t n_tokens = 0;
  for (const std::string& t : texts) {
    inputs.push_back(model->tokenize(t));
    n_tokens += static_cast<int64_t>(inputs.back().size());
  }
  MINFER_ASSIGN_OR_RETURN(std::vector<std::vector<float>> vectors, embedder->embed(inputs));
  std::string out;
  if (o.output == "lines") {
    for (const auto& v : vectors) out += json_array(v) + "\n";
  } else {
    out = "{\"object\":\"list\",\"data\":[";
    for (size_t i = 0; i < vectors.size(); ++i) {
      out += fmt::format("{}{{\"object\":\"embedding\",\"index\":{},\"embedding\":{}}}",
                         i > 0 ? "," : "", i, json_array(vectors[i]));
    }
    out += fmt::format(
        "],\"model\":{},\"pooling\":\"{}\",\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{}}}}}"
        "\n",
        json_string(o.model), embedder->pooling(), n_tokens, n_tokens);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return flush_stdout("embed");
}

}  // namespace

void register_embed_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<EmbedCli>(
      app, "embed", "Embed texts: the pooled last hidden state, L2-normalized");
  add_model_flags(cmd, opts->model, opts->source);
  cmd->add_option("-p,--prompt", opts->prompts, "a text to embed (repeatable)");
  cmd->add_option("-f,--file", opts->file, "a file of texts to embed, one per line");
  cmd->add_option("--pooling", opts->pooling,
                  "mean, cls or last (default: the file's pooling_type, else last)");
  cmd->add_flag("--no-normalize", opts->no_normalize, "print the pooled vectors unnormalized");
  cmd->add_option("--output", opts->output,
                  "lines: one JSON array per text (default); json: one object, OpenAI's shape");
  cmd->add_option("-c,--ctx-size", opts->load.n_ctx,
                  "longest text in tokens (default: the model's context, reduced to fit RAM)");
  add_threads_flag(cmd, opts->load.n_threads);
  registry.add_status(cmd, [opts = opts]() { return run_embed(*opts); });
}

}  // namespace minfer::app
