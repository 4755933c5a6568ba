// minfer tokenize: shows how a model's tokenizer splits a text — the ids as one JSON array
// (--ids) or one "id<TAB>piece" line per token, the piece escaped so that every line stays one
// line and every byte stays visible.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

void register_tokenize_command(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string model;
    std::string prompt;
    std::string file;
    bool special = false;
    bool no_bos = false;
    bool ids = false;
  };
  auto [cmd, opts] =
      add_command<Options>(app, "tokenize", "Tokenize a text with a model's tokenizer");
  cmd->add_option("-m,--model", opts->model, "GGUF model (or vocabulary) file")->required();
  cmd->add_option("-p,--prompt", opts->prompt, "text to tokenize");
  cmd->add_option("-f,--file", opts->file, "file whose contents to tokenize");
  cmd->add_flag("--special", opts->special,
                "match special tokens such as <|im_start|> in the text");
  cmd->add_flag("--no-bos", opts->no_bos, "do not add the BOS token the model asks for");
  cmd->add_flag("--ids", opts->ids, "print only the ids, as one JSON array");
  registry.add_status(cmd, [opts = opts, cmd = cmd]() -> Status {
    const bool has_prompt = cmd->count("--prompt") > 0;
    const bool has_file = cmd->count("--file") > 0;
    if (has_prompt == has_file) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[tokenize] give exactly one of -p TEXT and -f FILE");
    }
    std::string text = opts->prompt;
    if (has_file) {
      std::ifstream in(opts->file, std::ios::binary);
      if (!in) return make_error(ErrorCode::kNotFound, "[tokenize] cannot read '{}'", opts->file);
      std::ostringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    MINFER_ASSIGN_OR_RETURN(const std::vector<TokenPiece> tokens,
                            tokenize_text({opts->model, text, !opts->no_bos, opts->special}));
    std::string out;
    if (opts->ids) {
      out = "[";
      for (size_t i = 0; i < tokens.size(); ++i) {
        out += fmt::format("{}{}", i ? ", " : "", tokens[i].id);
      }
      out += "]\n";
    } else {
      for (const TokenPiece& t : tokens) {
        out += fmt::format("{}\t{}\n", t.id, printable_piece(t.piece));
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return flush_stdout("tokenize");
  });
}

}  // namespace minfer::app
