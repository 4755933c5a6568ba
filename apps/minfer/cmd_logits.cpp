// minfer logits: teacher-forced logits of a list of token ids, for comparing with other engines.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

struct LogitsOptions {
  std::string model;
  std::string ids;
  std::string ids_file;
  std::string output;
  int64_t batch = 0;
  int threads = 0;
  std::string cache_type;
  engine::ObserveOptions observe;
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

Status run_logits(const LogitsOptions& o) {
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
  MINFER_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_ids(text));
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model));
  engine::RuntimeOptions options;
  options.observe = o.observe;
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, o.cache_type, GgmlType::kF32));
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t n_ctx = model->config().n_ctx_train;
  if (n > n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[logits] {} ids do not fit the model's context of {} positions", n, n_ctx);
  }
  options.n_ctx = n;
  options.n_threads = o.threads;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<engine::Runtime> runtime,
                          engine::Runtime::create(*model, options));

  std::ofstream out(o.output, std::ios::binary);
  if (!out) return make_error(ErrorCode::kIo, "[logits] cannot create '{}'", o.output);
  const int64_t step = o.batch > 0 ? o.batch : n;
  for (int64_t start = 0; start < n; start += step) {
    Batch batch;
    for (int64_t t = start; t < std::min(n, start + step); ++t) {
      batch.add(ids[static_cast<size_t>(t)], static_cast<int32_t>(t), 0, true);
    }
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime->step(batch));
    if (runtime->trace() != nullptr) {
      // Teacher forcing: the step's "token" is the next id fed, its logits the last row's.
      const int64_t next = start + step;
      const size_t n_vocab = static_cast<size_t>(runtime->n_vocab());
      runtime->trace()->end_step(next < n ? ids[static_cast<size_t>(next)] : -1,
                                 logits.last(n_vocab));
    }
    out.write(reinterpret_cast<const char*>(logits.data()),
              static_cast<std::streamsize>(logits.size_bytes()));
  }
  if (!out) return make_error(ErrorCode::kIo, "[logits] short write to '{}'", o.output);
  std::fputs(runtime->profile_table().c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_logits_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, opts] = add_command<LogitsOptions>(
      app, "logits", "Write float32 logits [n_ids, n_vocab] of token ids fed at positions 0..n-1");
  cmd->add_option("-m,--model", opts->model, "GGUF model")->required();
  cmd->add_option("--ids", opts->ids, "comma-separated token ids");
  cmd->add_option("--ids-file", opts->ids_file, "file of token ids");
  cmd->add_option("-o,--output", opts->output, "output file")->required();
  cmd->add_option("--batch", opts->batch, "tokens per forward (default: all at once)");
  cmd->add_option("-t,--threads", opts->threads, "threads (default: all cores)");
  cmd->add_option("--cache-type", opts->cache_type, "KV cell type: f32, f16, q8_0");
  add_observe_flags(*cmd, opts->observe);
  registry.add_status(cmd, [opts = opts]() { return run_logits(*opts); });
}

}  // namespace minfer::app
