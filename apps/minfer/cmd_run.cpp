// `minfer run`: one-shot generation from a prompt, streamed to stdout (llama.cpp's flag names and
// defaults). The reason generation stopped and the metrics go to stderr.
//
// Also defines the flags and helpers that `minfer chat` shares (generation_flags.h).
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "engine/conversation.h"
#include "engine/generate.h"
#include "engine/setup.h"
#include "generation_flags.h"
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

void add_generation_flags(CLI::App* cmd, engine::ModelOptions& model,
                          engine::GenerateOptions& generate, std::string& system, bool& verbose) {
  cmd->add_option("-m,--model", model.path, "GGUF model file")->required();
  cmd->add_option("-c,--ctx-size", model.n_ctx,
                  "context size in tokens (default: the model's, at most 4096)");
  cmd->add_option("-b,--batch-size", model.n_batch,
                  "most prompt tokens per forward (default 2048)");
  cmd->add_option("-t,--threads", model.n_threads, "threads (default: all cores)");
  cmd->add_option("--cache-type", model.cache_type,
                  "KV cell type: f32, f16, q8_0 (default f32 or MINFER_CACHE_TYPE)");
  cmd->add_option("-n,--n-predict", generate.n_predict,
                  "tokens to generate (-1: until end of generation or a full context)");
  SamplerParams& s = generate.sampling;
  cmd->add_option("--temp", s.temperature, "temperature (0: greedy; default 0.8)");
  cmd->add_option("--top-k", s.top_k, "top-k sampling (0: off; default 40)");
  cmd->add_option("--top-p", s.top_p, "top-p sampling (1: off; default 0.95)");
  cmd->add_option("--min-p", s.min_p, "min-p sampling (0: off; default 0.05)");
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "repeat penalty (1: off; default 1)");
  cmd->add_option("--repeat-last-n", s.repeat_last_n,
                  "tokens the penalties look back on (0: off, -1: all; default 64)");
  cmd->add_option("--presence-penalty", s.presence_penalty, "presence penalty (default 0)");
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (default 0)");
  cmd->add_option("--seed", s.seed, "sampling seed (default 42)");
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
  cmd->add_option("--system-prompt", system, "system message (also -sys TEXT)");
  cmd->add_flag("--verbose", verbose, "print the model, kernels, threads and cache type first");
  add_observe_flags(*cmd, model.observe);
  // llama.cpp spells the system prompt flag "-sys", a multi-letter single-dash name that CLI11
  // cannot declare; it arrives as an extra argument (finish_generation_flags), and any other extra
  // is reported there as an unknown argument.
  cmd->allow_extras();
}

Status finish_generation_flags(CLI::App* cmd, std::string& system,
                               engine::GenerateOptions& generate) {
  const std::vector<std::string> extras = cmd->remaining();
  const std::string name = cmd->get_name();
  for (size_t i = 0; i < extras.size(); ++i) {
    if (extras[i] == "-sys") {
      if (i + 1 >= extras.size()) {
        return make_error(ErrorCode::kInvalidArgument, "[{}] -sys needs a value", name);
      }
      system = extras[++i];
      continue;
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "[{}] unknown argument '{}' (see minfer {} --help)", name, extras[i], name);
  }
  for (const std::string& stop : cmd->get_option("--stop")->results()) {
    generate.stops.push_back(stop);
  }
  for (const std::string& spec : cmd->get_option("--logit-bias")->results()) {
    MINFER_ASSIGN_OR_RETURN(auto bias, parse_logit_bias(spec));
    generate.sampling.logit_bias.push_back(bias);
  }
  return Status::ok();
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
  engine::ModelOptions model;
  engine::GenerateOptions generate;
  std::string system;
  bool verbose = false;
  std::string prompt;
  std::string prompt_file;
  bool chat = false;
  bool prompt_given = false;
};

void write_stdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

Status run_run(CLI::App* cmd, RunFlags& flags) {
  MINFER_RETURN_IF_ERROR(finish_generation_flags(cmd, flags.system, flags.generate));
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
  MINFER_ASSIGN_OR_RETURN(engine::LoadedModel setup, engine::load_for_generation(flags.model));
  if (flags.verbose) std::fputs(engine::describe_setup(setup, flags.model.path).c_str(), stderr);
  const Tokenizer& tokenizer = *setup.tokenizer;
  std::vector<int32_t> tokens;
  if (flags.chat) {
    MINFER_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl,
                            engine::load_chat_template(setup.model->file()));
    engine::Conversation conversation(tmpl, tokenizer, flags.system);
    conversation.add_user(prompt);
    MINFER_ASSIGN_OR_RETURN(tokens, conversation.tokens(/*add_generation_prompt=*/true));
  } else {
    if (!flags.system.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[run] -sys needs --chat (a system message only exists in a chat "
                        "template)");
    }
    // As llama.cpp's completion does: BOS (and EOS) as the model asks, special tokens parsed.
    tokens = tokenizer.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (flags.verbose) std::fprintf(stderr, "prompt tokens: %zu\n", tokens.size());

  engine::GenerateOptions options = flags.generate;
  options.cancel = &install_interrupt_handler();
  options.trace = setup.session->runtime().trace();
  MINFER_ASSIGN_OR_RETURN(
      engine::GenerateResult result,
      engine::generate(*setup.session, tokenizer, tokens, options, write_stdout));
  std::string report = fmt::format("\nstopped: {}", engine::finish_reason_text(result.finish));
  if (result.finish == engine::FinishReason::kStop) {
    report += fmt::format(" \"{}\"", result.stop);
  } else if (result.finish == engine::FinishReason::kLength) {
    report += fmt::format(" ({} tokens)", result.metrics.n_generated);
  } else if (result.finish == engine::FinishReason::kContext) {
    report += fmt::format(" (n_ctx {})", setup.session->n_ctx());
  }
  report += "\n" + engine::format_metrics(result.metrics);
  report += setup.session->runtime().profile_table();
  std::fputs(report.c_str(), stderr);
  return Status::ok();
}

}  // namespace

void register_run_command(CLI::App& app, CommandRegistry& registry) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Generate text after a prompt, streamed to stdout (metrics on stderr)");
  add_generation_flags(cmd, flags->model, flags->generate, flags->system, flags->verbose);
  CLI::Option* prompt = cmd->add_option("-p,--prompt", flags->prompt, "prompt text");
  cmd->add_option("-f,--file", flags->prompt_file, "file holding the prompt");
  cmd->add_flag("--chat", flags->chat,
                "render the prompt through the model's chat template as a user message");
  registry.add(cmd, [flags, cmd, prompt]() {
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
