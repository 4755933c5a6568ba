// The flags and helpers `run` and `chat` share (defined in cmd_run.cpp): llama.cpp's model,
// context and sampling flags, -sys, --stop, --logit-bias, the observability flags, and Ctrl-C.
// Both commands are clients of the public API (include/minfer/minfer.h).
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "minfer/minfer.h"
#include "model_source.h"

namespace minfer::app {

// --grammar TEXT, --grammar-file PATH, -j/--json-schema SCHEMA and --json-schema-file PATH
// (run, chat and serve): at most one of them.
struct GrammarFlags {
  std::string text;
  std::string file;
  std::string json_schema;
  std::string json_schema_file;
};
void add_grammar_flags(CLI::App* cmd, GrammarFlags& flags);
// The bytes of the file a flag names. Error: "[command] cannot read WHAT 'path'".
Result<std::string> read_flag_file(const std::string& path, const std::string& command,
                                   std::string_view what);
// After parsing: the GBNF text of the flags ("" when none), read and checked (a JSON Schema
// becomes its grammar). Error: two of the flags, an unreadable file, a grammar that does not parse
// (line and column), or a schema that is not JSON or uses a keyword minfer does not support.
Result<std::string> grammar_from_flags(const GrammarFlags& flags, const std::string& command);

// What `run` and `chat` both take.
struct GenerationFlags {
  std::string model_path;
  ModelSourceFlags source;  // -hf, --offline (resolved into model_path)
  LoadOptions load;
  GenerateParams generate;
  std::string system;
  bool verbose = false;
  GrammarFlags grammar;
  bool show_reasoning = false;  // print reasoning even when stdout is not a terminal
  // --keep N with --context-shift: < -1 when not given (the command's default).
  int64_t keep = -2;
  // The sampling flags given (--temp, …); load_model takes the others from the model file.
  std::vector<std::string> sampling_flags_given;
};

// Prints a reply as it streams: reasoning dimmed on a terminal (elsewhere only with
// --show-reasoning), content as it is, a tool call as "[tool call] name({...})".
class ReplyPrinter {
 public:
  ReplyPrinter(std::FILE* out, bool show_reasoning);
  // Prints one piece; always true (generation goes on).
  bool print(const ReplyDelta& delta);
  // Closes what is open (a call's parenthesis, the dim style).
  void end();

 private:
  void write(std::string_view text);
  void set_dim(bool dim);

  std::FILE* out_;
  bool terminal_;
  bool show_reasoning_;
  bool dim_ = false;
  bool reasoning_shown_ = false;  // a line break separates it from what follows
  bool call_open_ = false;
};

void add_generation_flags(CLI::App* cmd, GenerationFlags& flags);
// Checks `--keep keep` (-2: not given) for a context of n_ctx. Error: a negative count other than
// -1, or one that leaves fewer than 2 positions of n_ctx to shift.
Status check_keep(const std::string& command, int64_t keep, int64_t n_ctx);
// After parsing: -sys (an extra argument CLI11 cannot declare), --stop, --logit-bias and the
// grammar; any other extra argument is an error.
Status finish_generation_flags(CLI::App* cmd, GenerationFlags& flags);
// Loads the model of the flags and sets the sampling flags not given to the file's recommended
// ones (LanguageModel::default_params); with --verbose, describes the model and the seed on stderr.
Result<std::unique_ptr<LanguageModel>> load_model(GenerationFlags& flags);
// Ctrl-C raises the returned flag (generation checks it between tokens).
std::atomic<bool>& install_interrupt_handler();

}  // namespace minfer::app
