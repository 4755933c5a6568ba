// minfer logits: teacher-forced logits of a list of token ids, for comparing with other engines.
#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "minfer/tools.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

// The flags: the library's options, with the ids as text (--ids) or a file of them (--ids-file).
struct LogitsCli {
  LogitsOptions options;
  std::string ids;
  std::string ids_file;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    // Accept commas, spaces, newlines and brackets as separators ("[1, 2]" or "1 2" or "1,2").
    std::istringstream words(item);
    std::string word;
    while (words >> word) {
      while (!word.empty() && (word.front() == '[')) word.erase(word.begin());
      while (!word.empty() && (word.back() == ']')) word.pop_back();
      if (word.empty()) continue;
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || v < 0 || v > INT32_MAX) {
        return make_error(ErrorCode::kInvalidArgument, "[logits] '{}' is not a token id", word);
      }
      ids.push_back(static_cast<int32_t>(v));
    }
  }
  if (ids.empty()) return make_error(ErrorCode::kInvalidArgument, "[logits] no token ids given");
  return ids;
}

Status run_logits(LogitsCli& o) {
  if (o.ids.empty() == o.ids_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[logits] give exactly one of --ids and --ids-file");
  }
  std::string text = o.ids;
  if (!o.ids_file.empty()) {
    std::ifstream in(o.ids_file);
    if (!in) return make_error(ErrorCode::kNotFound, "[logits] cannot read '{}'", o.ids_file);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  MINFER_ASSIGN_OR_RETURN(o.options.ids, parse_ids(text));
  MINFER_ASSIGN_OR_RETURN(const std::string profile, write_logits(o.options));
  std::fputs(profile.c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_logits_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<LogitsCli>(
      app, "logits", "Write float32 logits [n_ids, n_vocab] of token ids fed at positions 0..n-1");
  cmd->add_option("-m,--model", opts->options.model, "GGUF model")->required();
  cmd->add_option("--ids", opts->ids, "comma-separated token ids");
  cmd->add_option("--ids-file", opts->ids_file, "file of token ids");
  cmd->add_option("-o,--output", opts->options.output, "output file")->required();
  cmd->add_option("--batch", opts->options.batch, "tokens per forward (default: all at once)");
  add_threads_flag(cmd, opts->options.n_threads);
  cmd->add_option("--cache-type", opts->options.cache_type, "KV cell type: f32, f16, bf16, q8_0");
  add_observe_flags(*cmd, opts->options.observe);
  registry.add_status(cmd, [opts = opts]() { return run_logits(*opts); });
}

}  // namespace minfer::app
