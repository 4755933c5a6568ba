// `minfer run`: one-shot generation from a prompt, streamed to stdout (llama.cpp's flag names and
// defaults). The reason generation stopped and the metrics go to stderr.
//
// Also defines the flags and helpers that `minfer chat` shares (generation_flags.h).
#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "commands.h"
#include "generation_flags.h"
#include "minfer/minfer.h"
#include "observe_options.h"

namespace minfer::app {

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true, std::memory_order_relaxed);
}

// llama.cpp's --logit-bias syntax: TOKEN_ID followed by a signed bias ("2+100", "15043-inf").
Result<std::pair<int32_t, float>> parse_logit_bias(const std::string& spec) {
  const size_t sign = spec.find_first_of("+-");
  const auto bad = [&spec]() {
    return make_error(ErrorCode::kInvalidArgument,
                      "[sampler] logit bias '{}': expected TOKEN_ID(+/-)BIAS, e.g. 2+100", spec);
  };
  if (sign == 0 || sign == std::string::npos) return bad();
  int64_t id = 0;
  for (size_t i = 0; i < sign; ++i) {
    if (spec[i] < '0' || spec[i] > '9' || id > INT32_MAX / 10) return bad();
    id = id * 10 + (spec[i] - '0');
  }
  std::string value = spec.substr(sign);
  if (value[0] == '+') value.erase(0, 1);
  size_t used = 0;
  float bias = 0.0f;
  try {
    bias = std::stof(value, &used);
  } catch (const std::exception&) {
    return bad();
  }
  if (used != value.size()) return bad();
  return std::make_pair(static_cast<int32_t>(id), bias);
}

}  // namespace

void add_generation_flags(CLI::App* cmd, GenerationFlags& flags) {
  LoadOptions& model = flags.load;
  add_model_flags(cmd, flags.model_path, flags.source);
  add_weight_memory_flags(cmd, model.use_mmap, model.use_mlock);
  cmd->add_option("-c,--ctx-size", model.n_ctx,
                  "context size in tokens (default: the model's training context, reduced to fit "
                  "its KV cells in 1/4 of RAM; --verbose says which)");
  cmd->add_option("-b,--batch-size", model.n_batch,
                  fmt::format("most prompt tokens per forward (default {})", kDefaultBatch));
  add_threads_flag(cmd, model.n_threads);
  cmd->add_option(
      "--cache-type", model.cache_type,
      fmt::format(
          "KV cell type: f32, f16, bf16, q8_0 (default MINFER_CACHE_TYPE, else {} as llama.cpp)",
          kDefaultCacheType));
  GenerateParams& s = flags.generate;
  cmd->add_option("-n,--n-predict", s.max_tokens,
                  "tokens to generate (-1: until end of generation or a full context)");
  cmd->add_option("--temp", s.temperature, "temperature (0: greedy; default 0.8)");
  cmd->add_option("--top-k", s.top_k, "top-k sampling (0: off; default 40)");
  cmd->add_option("--top-p", s.top_p, "top-p sampling (1: off; default 0.95)");
  cmd->add_option("--min-p", s.min_p, "min-p sampling (0: off; default 0.05)");
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "repeat penalty (1: off; default 1)");
  cmd->add_option("--repeat-last-n", s.repeat_last_n,
                  "tokens the penalties look back on (0: off, -1: all; default 64)");
  cmd->add_option("--presence-penalty", s.presence_penalty, "presence penalty (default 0)");
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (default 0)");
  cmd->add_option("--seed", s.seed,
                  "sampling seed (default: random; --verbose prints the one drawn)");
  // Parsed by finish_generation_flags, so that a bad value is one error line like the others.
  cmd->add_option("-l,--logit-bias",
                  "TOKEN_ID(+/-)BIAS added to a token's logit, e.g. 2+100 or 15043-inf "
                  "(repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // Unbound, like --logit-bias: a bound vector option would also swallow a stray argument after it.
  cmd->add_option("--stop", "stop string (repeatable); it is not printed")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--system-prompt", flags.system, "system message (also -sys TEXT)");
  cmd->add_flag("--verbose", flags.verbose,
                "print the model, kernels, threads and cache type first");
  add_grammar_flags(cmd, flags.grammar);
  cmd->add_option("--reasoning-budget", s.reasoning_budget,
                  "reasoning tokens before the engine closes <think> itself (-1: unlimited, "
                  "default; 0: no thinking)");
  cmd->add_flag("--show-reasoning", flags.show_reasoning,
                "print the model's reasoning when stdout is not a terminal (on a terminal it is "
                "always shown, dimmed)");
  cmd->add_flag("--context-shift", s.context_shift,
                "when the context is full, discard the older half of the tokens after --keep and "
                "go on (kept keys re-rotated in place, nothing computed again); default: stop");
  cmd->add_option("--spec-ngram", s.spec_ngram,
                  "speculative decoding by prompt lookup: draft the tokens that followed the "
                  "last earlier occurrence of the last N tokens, verify them in one forward "
                  "(same output; 0: off)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--model-draft", model.draft_model,
                  "draft model for speculative decoding (also -md; same vocabulary): its tokens "
                  "are verified in one forward (greedy: the same output; sampled: drafts kept by "
                  "the accept/resample rule, the same distribution)");
  cmd->add_option("--draft-max", s.draft_max, "tokens drafted per forward, at most (16)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--draft-min", s.draft_min,
                  "fewer drafts than this are not verified (a plain forward instead; 0)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--draft-p-min", s.draft_p_min,
                  "the draft model stops before a token it gives less probability (0)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--keep", flags.keep,
                  "tokens a context shift always keeps at the start (run: of the prompt, after "
                  "BOS, default 0; -1: the whole prompt; chat: default the system prompt)");
  add_observe_flags(*cmd, model);
  // llama.cpp spells the system prompt flag "-sys", a multi-letter single-dash name that CLI11
  // cannot declare; it arrives as an extra argument
  // (finish_generation_flags), and any other extra is reported there as an unknown argument.
  cmd->allow_extras();
}

Status check_keep(const std::string& command, int64_t keep, int64_t n_ctx) {
  if (keep < -1 && keep != -2) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] --keep {}: expected -1 (the whole prompt) or a count >= 0", command,
                      keep);
  }
  if (keep + 2 > n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] --keep {} is beyond the context: a shift needs 2 positions of n_ctx {} "
                      "after the kept tokens (expected at most {})",
                      command, keep, n_ctx, n_ctx - 2);
  }
  return Status::ok();
}

Status finish_generation_flags(CLI::App* cmd, GenerationFlags& flags) {
  const std::vector<std::string> extras = cmd->remaining();
  const std::string name = cmd->get_name();
  for (size_t i = 0; i < extras.size(); ++i) {
    if (extras[i] == "-sys") {
      if (i + 1 >= extras.size()) {
        return make_error(ErrorCode::kInvalidArgument, "[{}] -sys needs a value", name);
      }
      flags.system = extras[++i];
      continue;
    }

    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] unknown argument '{}' (see minfer {} --help)", name, extras[i], name);
  }
  for (const std::string& stop : cmd->get_option("--stop")->results()) {
    flags.generate.stop.push_back(stop);
  }
  for (const std::string& spec : cmd->get_option("--logit-bias")->results()) {
    MINFER_ASSIGN_OR_RETURN(auto bias, parse_logit_bias(spec));
    flags.generate.logit_bias.push_back(bias);
  }
  MINFER_ASSIGN_OR_RETURN(flags.generate.grammar, grammar_from_flags(flags.grammar, name));
  for (const char* flag :
       {"--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--repeat-last-n"}) {
    if (cmd->count(flag) > 0) flags.sampling_flags_given.emplace_back(flag);
  }
  // Random unless --seed gave one; drawn here so that --verbose can say which (load_model).
  flags.generate.seed = resolve_seed(flags.generate.seed);
  return resolve_model_path(flags.model_path, flags.source, name.c_str());
}

void add_grammar_flags(CLI::App* cmd, GrammarFlags& flags) {
  cmd->add_option("--grammar", flags.text,
                  "GBNF grammar the output must follow (llama.cpp's grammar language)");
  cmd->add_option("--grammar-file", flags.file, "file holding a GBNF grammar");
  cmd->add_option("-j,--json-schema", flags.json_schema,
                  "JSON Schema the output must follow (as response_format json_schema)");
  cmd->add_option("--json-schema-file", flags.json_schema_file,
                  "file holding a JSON Schema the output must follow");
}

Result<std::string> read_flag_file(const std::string& path, const std::string& command,
                                   std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "[{}] cannot read {} '{}'", command, what, path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Result<std::string> grammar_from_flags(const GrammarFlags& flags, const std::string& command) {
  const int given = !flags.text.empty() + !flags.file.empty() + !flags.json_schema.empty() +
                    !flags.json_schema_file.empty();
  if (given > 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] give one of --grammar, --grammar-file, --json-schema and "
                      "--json-schema-file",
                      command);
  }
  std::string schema = flags.json_schema;
  if (!flags.json_schema_file.empty()) {
    MINFER_ASSIGN_OR_RETURN(schema,
                            read_flag_file(flags.json_schema_file, command, "JSON Schema file"));
  }
  if (!schema.empty()) {
    Result<std::string> gbnf = json_schema_grammar(schema);
    if (!gbnf.is_ok()) {
      const std::string source =
          flags.json_schema_file.empty() ? "--json-schema" : flags.json_schema_file;
      return make_error(ErrorCode::kInvalidArgument, "[{}] {}: {}", command, source,
                        gbnf.status().message());
    }
    return gbnf;
  }
  std::string text = flags.text;
  if (!flags.file.empty()) {
    MINFER_ASSIGN_OR_RETURN(text, read_flag_file(flags.file, command, "grammar file"));
  }
  if (!text.empty()) {
    if (Status s = check_grammar(text); !s.is_ok()) {
      const std::string source = flags.file.empty() ? "--grammar" : flags.file;
      return make_error(ErrorCode::kInvalidArgument, "[{}] {}: {}", command, source, s.message());
    }
  }
  return text;
}

Result<std::unique_ptr<LanguageModel>> load_model(GenerationFlags& flags) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model,
                          LanguageModel::load(flags.model_path, flags.load));
  const GenerateParams file = model->default_params();
  auto unless_given = [&](const char* flag, auto SamplerParams::*field) {
    const std::vector<std::string>& given = flags.sampling_flags_given;
    if (std::find(given.begin(), given.end(), flag) == given.end()) {
      flags.generate.*field = file.*field;
    }
  };
  unless_given("--temp", &SamplerParams::temperature);
  unless_given("--top-k", &SamplerParams::top_k);
  unless_given("--top-p", &SamplerParams::top_p);
  unless_given("--min-p", &SamplerParams::min_p);
  unless_given("--repeat-penalty", &SamplerParams::repeat_penalty);
  unless_given("--repeat-last-n", &SamplerParams::repeat_last_n);
  if (flags.verbose) {
    std::fputs(model->describe().c_str(), stderr);
    std::fprintf(stderr, "seed: %llu (--seed %llu repeats this run)\n",
                 static_cast<unsigned long long>(flags.generate.seed),
                 static_cast<unsigned long long>(flags.generate.seed));
  }
  return model;
}

ReplyPrinter::ReplyPrinter(std::FILE* out, bool show_reasoning)
    : out_(out), terminal_(isatty(fileno(out)) != 0), show_reasoning_(show_reasoning) {}

void ReplyPrinter::write(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), out_);
}

void ReplyPrinter::set_dim(bool dim) {
  if (!terminal_ || dim == dim_) return;
  write(dim ? "\x1b[2m" : "\x1b[0m");
  dim_ = dim;
}

bool ReplyPrinter::print(const ReplyDelta& delta) {
  if (!delta.reasoning.empty() && (terminal_ || show_reasoning_)) {
    set_dim(true);
    write(delta.reasoning);
    reasoning_shown_ = true;
  }
  if (!delta.content.empty()) {
    set_dim(false);
    if (reasoning_shown_) write("\n\n");
    reasoning_shown_ = false;
    write(delta.content);
  }
  for (const ToolCallDelta& call : delta.tool_calls) {
    set_dim(false);
    if (!call.id.empty()) {
      if (call_open_) write(")");
      write(fmt::format("\n[tool call] {}(", call.name));
      call_open_ = true;
    }
    write(call.arguments);
  }
  std::fflush(out_);
  return true;
}

void ReplyPrinter::end() {
  set_dim(false);
  if (call_open_) write(")");
  call_open_ = false;
  std::fflush(out_);
}

std::atomic<bool>& install_interrupt_handler() {
  // No SA_RESTART: a blocking read at the chat prompt returns EINTR, so Ctrl-C is seen there too.
  struct sigaction action = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  return g_interrupted;
}

namespace {

struct RunFlags {
  GenerationFlags common;
  std::string prompt;
  std::string prompt_file;
  bool chat = false;
  bool prompt_given = false;
  std::string prompt_cache;  // --prompt-cache FILE
};

// --prompt-cache FILE, before generating: the state FILE holds, when it exists, goes into the
// model's sequence, so that generation prefills only what the prompt adds to its longest common
// prefix with the state's tokens. A file that cannot be used (another model, cell type, corrupt)
// is an error: it is never loaded into the wrong model, and never silently ignored.
Status load_prompt_cache(LanguageModel& model, const std::string& path, bool verbose) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (verbose) std::fprintf(stderr, "prompt cache: '%s' does not exist yet\n", path.c_str());
    return Status::ok();
  }
  Result<StateReply> loaded = model.load_state(path);
  if (!loaded.is_ok()) {
    return make_error(loaded.status().code(),
                      "[run] --prompt-cache: {} (delete the file to start a new one)",
                      loaded.status().message());
  }
  if (verbose) {
    std::fprintf(stderr, "prompt cache: restored %lld tokens from '%s' in %.1f ms\n",
                 static_cast<long long>(loaded->n_tokens), path.c_str(), loaded->ms);
  }
  return Status::ok();
}

Status run_run(CLI::App* cmd, RunFlags& flags) {
  MINFER_RETURN_IF_ERROR(finish_generation_flags(cmd, flags.common));
  const std::string& system = flags.common.system;
  std::string prompt = flags.prompt;
  if (!flags.prompt_file.empty()) {
    if (flags.prompt_given) {
      return make_error(ErrorCode::kInvalidArgument, "[run] give -p or -f, not both");
    }
    std::ifstream in(flags.prompt_file, std::ios::binary);
    if (!in) {
      return make_error(ErrorCode::kNotFound, "[run] cannot read prompt file '{}'",
                        flags.prompt_file);
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    prompt = buffer.str();
  } else if (!flags.prompt_given) {
    return make_error(ErrorCode::kInvalidArgument, "[run] give a prompt with -p TEXT or -f FILE");
  }
  if (!flags.chat && !system.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[run] -sys needs --chat (a system message only exists in a chat "
                      "template)");
  }
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model, load_model(flags.common));
  std::vector<int32_t> tokens;
  if (flags.chat) {
    MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Chat> chat, model->start_chat(system));
    chat->add_user(prompt);
    MINFER_ASSIGN_OR_RETURN(tokens, chat->tokens(/*add_generation_prompt=*/true));
  } else {
    // As llama.cpp's completion does: BOS (and EOS) as the model asks, special tokens parsed.
    tokens = model->tokenize(prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (flags.common.verbose) std::fprintf(stderr, "prompt tokens: %zu\n", tokens.size());

  if (!flags.prompt_cache.empty()) {
    MINFER_RETURN_IF_ERROR(load_prompt_cache(*model, flags.prompt_cache, flags.common.verbose));
  }

  GenerateParams params = flags.common.generate;
  params.cancel = &install_interrupt_handler();
  if (params.context_shift) {
    // llama.cpp's rule: --keep N keeps the prompt's first N tokens after its BOS; -1 all of it.
    const int64_t keep = flags.common.keep;
    MINFER_RETURN_IF_ERROR(check_keep("run", keep, model->n_ctx()));
    const std::vector<int32_t> bos = model->tokenize("", /*add_special=*/true);
    const int64_t n_bos = !bos.empty() && !tokens.empty() && tokens[0] == bos[0] ? 1 : 0;
    const int64_t n_prompt = static_cast<int64_t>(tokens.size());
    params.n_keep = keep == -1 ? n_prompt : std::min(n_prompt, std::max<int64_t>(keep, 0) + n_bos);
  }
  // A chat reply is split into reasoning and content (and a budget needs to see the reasoning);
  // a raw completion is printed as it comes.
  params.extract_reasoning = flags.chat || params.reasoning_budget >= 0;
  params.parse_tool_calls = flags.chat;
  ReplyPrinter printer(stdout, flags.common.show_reasoning);
  MINFER_ASSIGN_OR_RETURN(
      GenerateReply reply,
      model->generate_reply(tokens, params,
                            [&printer](const ReplyDelta& delta) { return printer.print(delta); }));
  printer.end();
  std::string report = fmt::format("\nstopped: {}", reply.finish_text);
  if (reply.finish_reason == "stop") {
    report += fmt::format(" \"{}\"", reply.stop);
  } else if (reply.finish_reason == "length") {
    report += fmt::format(" ({} tokens)", reply.n_generated);
  } else if (reply.finish_reason == "context") {
    report += fmt::format(" (n_ctx {})", model->n_ctx());
  }
  report += "\n" + reply.metrics;
  report += model->profile_table();
  std::fputs(report.c_str(), stderr);
  if (!flags.prompt_cache.empty()) {
    // The prompt and the reply's tokens, so that a next run with a longer prompt reuses both.
    MINFER_ASSIGN_OR_RETURN(StateReply saved, model->save_state(flags.prompt_cache));
    std::fprintf(stderr,
                 "prompt cache: %lld of %lld prompt tokens reused; %lld tokens saved to '%s'\n",
                 static_cast<long long>(reply.n_cached), static_cast<long long>(reply.n_prompt),
                 static_cast<long long>(saved.n_tokens), flags.prompt_cache.c_str());
  }
  return Status::ok();
}

}  // namespace

void register_run_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, flags] = add_command<RunFlags>(
      app, "run", "Generate text after a prompt, streamed to stdout (metrics on stderr)");
  add_generation_flags(cmd, flags->common);
  CLI::Option* prompt = cmd->add_option("-p,--prompt", flags->prompt, "prompt text");
  cmd->add_option("-f,--file", flags->prompt_file, "file holding the prompt");
  cmd->add_flag("--chat", flags->chat,
                "render the prompt through the model's chat template as a user message");
  cmd->add_option("--prompt-cache", flags->prompt_cache,
                  "KV state file: reuse the longest prefix the prompt shares with the state it "
                  "holds (when it exists), then store the prompt and reply's state in it");
  registry.add(cmd, [flags = flags, cmd = cmd, prompt]() {
    flags->prompt_given = prompt->count() > 0;
    const Status st = run_run(cmd, *flags);
    if (!st.is_ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
    return 0;
  });
}

}  // namespace minfer::app
