// What every route shares: reading a JSON body, and writing a JSON reply or an OpenAI error.
#pragma once

#include <optional>
#include <string>

#include "server/http_message.h"
#include "server/openai_api.h"

namespace minfer::server {

inline constexpr const char* kJsonType = "application/json; charset=utf-8";

ApiError api_error(int status, std::string message, std::string type, std::string code);

// What every endpoint but / answers until the model is loaded.
ApiError model_loading();

// The request's body as a JSON object. Error: not JSON, or not an object.
std::optional<ApiError> parse_body(const HttpRequest& req, Json& body);

// The reply: `j` as JSON with status 200.
void send_json(HttpResponse& res, const Json& j);
// The reply: e's status and OpenAI error object.
void send_error(HttpResponse& res, const ApiError& e);

}  // namespace minfer::server
