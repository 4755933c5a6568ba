// The generation routes, /v1/chat/completions and /v1/completions: each builds a generation
// request from the body, submits it, and hands the reply to a writer (server/reply_writer.h).
#include <algorithm>
#include <array>
#include <ctime>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "server/choices.h"
#include "server/http_io.h"
#include "server/http_server.h"
#include "server/openai_reply.h"
#include "server/reply_writer.h"
#include "server/wire_format.h"

namespace minfer::server {

namespace {

// The id of `marker` when the vocabulary has it as one token, else -1.
int32_t marker_token(const LanguageModel& model, const std::string& marker) {
  const std::vector<int32_t> ids = model.tokenize(marker, false, true);
  if (ids.size() != 1) return -1;
  Result<std::string> piece = model.token_piece(ids[0]);
  return piece.is_ok() && piece.value() == marker ? ids[0] : -1;
}

// Fill-in-the-middle (completions' suffix): prefix marker, the prompt, suffix marker, the suffix,
// middle marker (the prefix-suffix-middle order Qwen2.5-Coder and StarCoder are trained on), with
// the model's own FIM tokens; a vocabulary without them is a 400.
std::optional<ApiError> fim_prompt(const LanguageModel& model, const ParsedRequest& parsed,
                                   std::vector<int32_t>& out) {
  constexpr std::array<std::array<const char*, 3>, 2> kMarkers = {{
      {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},  // Qwen2.5-Coder, Qwen3
      {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},        // StarCoder, SantaCoder
  }};
  for (const auto& names : kMarkers) {
    std::array<int32_t, 3> ids{};
    for (size_t i = 0; i < 3; ++i) ids[i] = marker_token(model, names[i]);
    if (std::find(ids.begin(), ids.end(), -1) != ids.end()) continue;
    // The texts are tokenized without parsing special tokens: the user's code is text.
    const std::vector<int32_t> prefix =
        parsed.prompt_is_ids ? parsed.prompt_ids : model.tokenize(parsed.prompt_text, false, false);
    const std::vector<int32_t> suffix = model.tokenize(*parsed.suffix, false, false);
    out = model.tokenize("", true, false);  // BOS when the model adds one
    out.push_back(ids[0]);
    out.insert(out.end(), prefix.begin(), prefix.end());
    out.push_back(ids[1]);
    out.insert(out.end(), suffix.begin(), suffix.end());
    out.push_back(ids[2]);
    return std::nullopt;
  }
  return bad_request(
      "[server] 'suffix' needs fill-in-the-middle tokens (<|fim_prefix|>, "
      "<|fim_suffix|>, <|fim_middle|> or <fim_…>), which this model's vocabulary "
      "does not have",
      "suffix", "unsupported_parameter");
}

// The prompt's tokens: the chat's messages rendered by the model's template, or the completion's
// prompt (token ids as given, text tokenized with BOS and special tokens).
std::optional<ApiError> prompt_tokens(const Backend& b, const Json& body,
                                      const ParsedRequest& parsed, std::vector<int32_t>& out) {
  if (parsed.endpoint == Endpoint::kChat) {
    Json request = body;
    request["messages"] = parsed.messages;
    if (parsed.params.reasoning_budget == 0) {
      // No thinking at all: the template says so where it can (Qwen3 renders an empty block),
      // unless the request set enable_thinking itself.
      Json& kwargs = request["chat_template_kwargs"];
      if (!kwargs.is_object()) kwargs = Json::object();
      if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = false;
    }
    Result<std::vector<int32_t>> tokens = b.model->tokenize_chat_request(dump(request));
    if (!tokens.is_ok()) {
      std::string message = "[server] the chat template failed: " + tokens.status().message();
      if (tokens.status().code() == ErrorCode::kResourceExhausted) {
        // Over a render budget: the model file's template is at fault, not the request.
        return api_error(500, std::move(message), "server_error", "template_error");
      }
      return bad_request(std::move(message), "messages", "template_error");
    }
    out = std::move(tokens).value();
  } else if (parsed.suffix.has_value()) {
    if (auto e = fim_prompt(*b.model, parsed, out)) return e;
  } else if (parsed.prompt_is_ids) {
    out = parsed.prompt_ids;
  } else {
    out = b.model->tokenize(parsed.prompt_text, true, true);
  }
  return std::nullopt;
}

// The tokens of `prompt` that a context shift keeps (ServerOptions::keep): for a chat by
// default those of its leading system messages rendered alone (their common prefix with the
// prompt; none when the template cannot render them alone).
int64_t shift_keep(const Backend& b, const ParsedRequest& parsed, const ServerOptions& options,
                   const std::vector<int32_t>& prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (options.keep == -1) return n;
  if (options.keep >= 0) return std::min(n, options.keep);
  Json system = Json::array();
  if (parsed.endpoint == Endpoint::kChat) {
    for (const Json& m : parsed.messages) {
      if (!m.is_object() || m.value("role", "") != "system") break;
      system.push_back(m);
    }
  }
  if (system.empty()) return 0;
  Result<std::vector<int32_t>> tokens =
      b.model->tokenize_chat_request(dump(Json{{"messages", system}}));
  if (!tokens.is_ok()) return 0;
  const std::vector<int32_t>& s = tokens.value();
  return std::mismatch(s.begin(), s.end(), prompt.begin(), prompt.end()).first - s.begin();
}

// The request body checked and turned into generation parameters, and its prompt. Errors: the
// body's, the template's, a prompt with no tokens or no room in the context.
// The request asks for JSON of its own (response_format other than text): serve's default
// grammar does not apply.
bool has_json_format(const Json& body) {
  auto it = body.find("response_format");
  if (it == body.end() || !it->is_object()) return false;
  auto type = it->find("type");
  return type != it->end() && type->is_string() && type->get<std::string>() != "text";
}

// reasoning_budget: the request's own (another API's thinking settings), else the server's.
std::optional<ApiError> build_request(const Json& body, const Backend& b,
                                      const ServerOptions& options, Endpoint endpoint,
                                      ParsedRequest& out, std::vector<int32_t>& prompt,
                                      std::optional<int32_t> reasoning_budget = std::nullopt) {
  const int32_t n_vocab = static_cast<int32_t>(b.model->n_vocab());
  out.params = b.model->default_params();  // the file's sampling; the request's fields override
  // The server's speculative decoding, which the request's fields override too.
  out.params.spec_ngram = options.spec_ngram;
  out.params.draft_max = options.draft_max;
  out.params.draft_min = options.draft_min;
  out.params.draft_p_min = options.draft_p_min;
  if (auto e = parse_request(body, endpoint, n_vocab, out)) return e;
  if (out.params.grammar.empty() && !b.default_grammar.empty() && !has_json_format(body)) {
    out.params.grammar = b.default_grammar;
  }
  if (endpoint == Endpoint::kChat) {
    // Reasoning as the request says, else as the server does.
    const std::string& format =
        out.reasoning_format.empty() ? options.reasoning_format : out.reasoning_format;
    out.params.extract_reasoning = format != "none";
    out.params.reasoning_budget =
        reasoning_budget.value_or(out.reasoning_budget.value_or(options.reasoning_budget));
  }
  if (auto e = prompt_tokens(b, body, out, prompt)) return e;
  const int64_t n_ctx = b.generator->n_ctx();
  if (prompt.empty()) return bad_request("[server] the prompt has no tokens", "prompt");
  if (static_cast<int64_t>(prompt.size()) + 2 > n_ctx) {
    return bad_request(fmt::format("[server] the prompt is {} tokens but the context holds {} "
                                   "(leaving room for at least one generated token)",
                                   prompt.size(), n_ctx),
                       endpoint == Endpoint::kChat ? "messages" : "prompt",
                       "context_length_exceeded");
  }
  if (options.context_shift) {
    out.params.context_shift = true;
    out.params.n_keep = shift_keep(b, out, options, prompt);
  }
  return std::nullopt;
}

// A request the generator refused: a full queue is 503 (try again), anything else the request's.
ApiError submit_error(const Status& status) {
  if (status.code() == ErrorCode::kResourceExhausted) {
    return api_error(503, status.message(), "server_overloaded", "queue_full");
  }
  return bad_request(status.message());
}

}  // namespace

void HttpServer::handle_chat_completions(const HttpRequest& req, HttpResponse& res) {
  generate(req, res, Endpoint::kChat);
}

void HttpServer::handle_completions(const HttpRequest& req, HttpResponse& res) {
  generate(req, res, Endpoint::kCompletion);
}

void HttpServer::generate(const HttpRequest& req, HttpResponse& res, Endpoint endpoint) {
  generate_as(req, res, endpoint, WireApi{});
}

void HttpServer::generate_as(const HttpRequest& req, HttpResponse& res, Endpoint endpoint,
                             const WireApi& api) {
  if (ready_.load() && draining_.load()) {
    return send_error(
        res, api_error(503, "[server] shutting down", "unavailable_error", "shutting_down"));
  }
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);  // held until the reply is written
  if (b == nullptr) return;
  std::optional<int32_t> reasoning_budget;
  bool legacy_functions = false;
  if (endpoint == Endpoint::kChat && !api.translate) {
    if (auto e = translate_legacy_functions(body, legacy_functions)) return send_error(res, *e);
  }
  if (api.translate) {
    ChatTranslation translated;
    if (auto e = api.translate(body, translated)) return send_error(res, *e);
    body = std::move(translated.chat);
    reasoning_budget = translated.reasoning_budget;
  }
  ParsedRequest parsed;
  std::vector<int32_t> prompt;
  if (auto e = build_request(body, *b, options_, endpoint, parsed, prompt, reasoning_budget))
    return send_error(res, *e);

  auto call = std::make_shared<PendingReply>(metrics_);
  std::shared_ptr<ChoiceJoin> join;  // n > 1 or best_of: the choices (server/choices.h)
  const int32_t candidates = std::max(parsed.n, parsed.best_of);
  if (candidates > 1) {
    GenerateParams params = parsed.params;
    // best_of ranks by mean token logprob: computed for every token, returned only when asked.
    if (candidates > parsed.n) params.top_logprobs = std::max(params.top_logprobs, 0);
    Result<Choices> choices = submit_choices(*b->generator, prompt, params, candidates, metrics_);
    if (!choices.is_ok()) return send_error(res, submit_error(choices.status()));
    call = choices.value().call;
    join = choices.value().join;
    call->attach(call->handle(), req.connection);
  } else {
    Result<std::shared_ptr<RequestHandle>> handle =
        b->generator->submit(prompt, parsed.params, PendingReply::sink(call));
    if (!handle.is_ok()) return send_error(res, submit_error(handle.status()));
    call->attach(handle.value(), req.connection);
  }
  track(call->handle());
  for (const auto& h : call->more()) track(h);
  auto release = [this, call, b] {
    call->cancel();  // no-op once finished
    untrack(call->handle());
    for (const auto& h : call->more()) untrack(h);
  };

  ReplyInfo info;
  info.endpoint = endpoint;
  const std::string prefix = !api.id_prefix.empty()        ? api.id_prefix
                             : endpoint == Endpoint::kChat ? "chatcmpl-"
                                                           : "cmpl-";
  info.id = fmt::format("{}{:x}", prefix, next_id_.fetch_add(1));
  info.created = static_cast<int64_t>(std::time(nullptr));
  info.model = b->model_name;
  info.logprobs = parsed.logprobs;
  info.include_usage = parsed.include_usage;
  info.seed = parsed.params.seed;
  info.legacy_functions = legacy_functions;
  res.set_header("X-Minfer-Seed", std::to_string(parsed.params.seed));
  if (join != nullptr) {
    Reply reply(*b->model, std::move(info));
    if (parsed.stream) {
      write_stream(res, std::move(call), openai_choices_format(reply, join, parsed.n),
                   std::move(release));
    } else {
      write_blocking_choices(res, *call, reply, *join, candidates, parsed.n, release);
    }
    return;
  }
  std::unique_ptr<WireFormat> format =
      api.make_format ? api.make_format(info, static_cast<int64_t>(prompt.size()))
                      : openai_format(Reply(*b->model, std::move(info)));
  if (parsed.stream) {
    write_stream(res, std::move(call), std::move(format), std::move(release));
  } else {
    write_blocking(res, *call, *format, release);
  }
}

void HttpServer::count_prompt_tokens(const HttpRequest& req, HttpResponse& res,
                                     const WireApi& api) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  ChatTranslation translated;
  if (auto e = api.translate(body, translated)) return send_error(res, *e);
  ParsedRequest parsed;
  std::vector<int32_t> prompt;
  if (auto e = build_request(translated.chat, *b, options_, Endpoint::kChat, parsed, prompt,
                             translated.reasoning_budget)) {
    return send_error(res, *e);
  }
  send_json(res, Json{{"input_tokens", prompt.size()}});
}

}  // namespace minfer::server
