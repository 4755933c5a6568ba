// The OpenAI-compatible wire format, request side: bodies checked and turned into scheduler
// requests, and the error JSON. The replies are built in server/openai_reply.h.
// https://platform.openai.com/docs/api-reference/chat, .../completions
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"

namespace minfer::server {

using Json = nlohmann::ordered_json;

// An error as an HTTP status and OpenAI's error object.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field ("" → null)
  std::string code;   // a machine-readable code ("" → null)

  Json to_json() const;
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "");
// A field of the wrong JSON type: "[server] 'FIELD' must be EXPECTED, got TYPE" (400).
ApiError wrong_type(const std::string& field, const char* expected, const Json& v);
// obj[key] when obj is an object and that is a string, else "".
std::string string_field(const Json& obj, const char* key);
// Calls fn(item, "FIELD[i]") for each element of the array `items` (named `field`), each checked
// to be an object (`expected` says which, for the error); the first error stops.
using ItemCheck = std::function<std::optional<ApiError>(const Json& item, const std::string& name)>;
std::optional<ApiError> for_each_object(const Json& items, const std::string& field,
                                        const char* expected, const ItemCheck& fn);

enum class Endpoint { kChat, kCompletion };

// The most choices one request may ask for ('n').
constexpr int32_t kMaxChoices = 16;

// A checked request body: everything but the prompt tokens, which need the template/tokenizer.
struct ParsedRequest {
  Endpoint endpoint = Endpoint::kChat;
  GenerateParams params;
  bool stream = false;
  int32_t n = 1;                    // choices, each its own sample (1..kMaxChoices)
  bool include_usage = false;       // stream_options.include_usage
  bool logprobs = false;            // chat: logprobs true; completions: logprobs given
  Json messages;                    // chat: the messages, normalised for the template
  std::string prompt_text;          // completions: a string prompt
  std::vector<int32_t> prompt_ids;  // completions: a token-id prompt
  bool prompt_is_ids = false;
  // chat: reasoning_format as the request gave it ("none", "deepseek", "auto"), "" when absent
  // (the server's --reasoning-format applies). tools, tool_choice and parallel_tool_calls go to
  // params (parse_tool_calls, tools, tool_choice, tool_choice_name, parallel_tool_calls).
  std::string reasoning_format;
  // chat: reasoning_budget (llama.cpp's name) or reasoning_effort as a budget
  // (reasoning_effort_budget)
  std::optional<int32_t> reasoning_budget;
  // completions: best_of candidates (>= n; the n with the highest mean token logprob are returned)
  // and suffix, the text after the insertion (fill-in-the-middle: fim_prompt)
  int32_t best_of = 1;
  std::optional<std::string> suffix;
};

// reasoning_effort as a reasoning budget in tokens: none and minimal 0 (no thinking), low 1024,
// medium 4096, high -1 (no budget). nullopt for another word.
std::optional<int32_t> reasoning_effort_budget(std::string_view effort);

// OpenAI's legacy function calling, rewritten in place as tools: `functions` → tools,
// `function_call` ("none", "auto", {"name"}) → tool_choice (one call per reply, as the legacy API
// made), and in the history role "function" messages → tool results and an assistant's
// function_call → tool_calls. `legacy` says the request used functions, so the reply is written
// in that shape (ReplyInfo::legacy_functions). Error: functions beside tools, function_call
// without functions or beside tool_choice, or a field of the wrong shape.
std::optional<ApiError> translate_legacy_functions(Json& body, bool& legacy);

// Checks the fields of a /v1/chat/completions or /v1/completions body (types, ranges, roles).
// n_vocab bounds token ids in prompts and logit_bias.
std::optional<ApiError> parse_request(const Json& body, Endpoint endpoint, int32_t n_vocab,
                                      ParsedRequest& out);

// Sampling parameters as request fields (temperature, top_k, …, n_predict; seed -1: random per
// request): what /props reports as the defaults.
Json sampling_json(const GenerateParams& params);

// JSON text for the wire: invalid UTF-8 (a token piece can end mid-character) becomes U+FFFD.
std::string dump(const Json& j);

}  // namespace minfer::server
