// The routes of other APIs over the chat path: Anthropic's /v1/messages and
// /v1/messages/count_tokens (server/anthropic_api.h), OpenAI's /v1/responses
// (server/responses_api.h). Each names its translation and reply format; generation is the chat
// path's (server/routes_generate.cpp).

#include "server/anthropic_api.h"
#include "server/http_io.h"
#include "server/http_server.h"
#include "server/responses_api.h"
#include "server/wire_format.h"

namespace minfer::server {

namespace {

WireApi anthropic_api(bool count_only) {
  WireApi api;
  api.id_prefix = "msg_";
  api.translate = [count_only](const Json& body, ChatTranslation& out) {
    return anthropic_to_chat(body, count_only, out);
  };
  api.make_format = anthropic_format;
  return api;
}

// Errors answered as JSON (the body's, the backend's, the engine's before a stream began) in
// Anthropic's shape.
void to_anthropic_error(HttpResponse& res) {
  if (res.status >= 400 && !res.body.empty()) {
    res.set_content(anthropic_error_body(res.status, res.body), kJsonType);
  }
}

}  // namespace

void HttpServer::handle_messages(const HttpRequest& req, HttpResponse& res) {
  generate_as(req, res, Endpoint::kChat, anthropic_api(false));
  to_anthropic_error(res);
}

void HttpServer::handle_count_tokens(const HttpRequest& req, HttpResponse& res) {
  count_prompt_tokens(req, res, anthropic_api(true));
  to_anthropic_error(res);
}

void HttpServer::handle_responses(const HttpRequest& req, HttpResponse& res) {
  WireApi api;
  api.id_prefix = "resp_";
  api.translate = responses_to_chat;
  api.make_format = responses_format;
  generate_as(req, res, Endpoint::kChat, api);
}

}  // namespace minfer::server
