// minfer tokenize: shows how a model's tokenizer splits a text — the ids as one JSON array
// (--ids) or one "id<TAB>piece" line per token, the piece escaped so that every line stays one
// line and every byte stays visible.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace minfer::app {

namespace {

// Control characters, backslashes and bytes that are not part of a valid UTF-8 character (a
// token may hold half of one) are written as escapes; everything else is printed as is.
std::string escape_piece(std::string_view piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    const auto c = static_cast<uint8_t>(piece[i]);
    const size_t n = utf8::valid_sequence_length(piece.substr(i));
    if (c >= 0x80 && n > 0) {
      out.append(piece.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  return out;
}

}  // namespace

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
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(opts->model));
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::from_gguf(*file));
    const std::vector<int32_t> ids = tok->encode(text, !opts->no_bos, opts->special);
    std::string out;
    if (opts->ids) {
      out = "[";
      for (size_t i = 0; i < ids.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", ids[i]);
      out += "]\n";
    } else {
      for (int32_t id : ids) {
        out += fmt::format("{}\t{}\n", id, escape_piece(tok->token_to_piece(id, true)));
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return flush_stdout("tokenize");
  });
}

}  // namespace minfer::app
