// How one API puts a generation's reply on the wire: the whole reply as one JSON object, or its
// stream as server-sent-event frames. The writers (server/reply_writer.h) move the events; a
// format only turns them into text, so OpenAI's chat/completions chunks, Anthropic's Messages
// events (server/anthropic_api.h) and the Responses API's typed events
// (server/responses_api.h) share one writer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minfer/minfer.h"
#include "server/openai_api.h"
#include "server/openai_reply.h"

namespace minfer::server {

class WireFormat {
 public:
  virtual ~WireFormat() = default;

  // Streamed: the frames sent before any event (chat's role chunk, Anthropic's message_start).
  virtual std::vector<std::string> stream_open() = 0;
  // Streamed: the frames of one event, in order; those of the final event (done) close the
  // stream (finish, usage, [DONE] or the API's last event), or report its error.
  virtual std::vector<std::string> stream_event(const BatchEvent& event) = 0;
  // Blocking: the whole reply once its final event came (no error).
  virtual Json complete(const ReplyParts& parts, const std::vector<SampledToken>& tokens,
                        const BatchEvent& final_event) const = 0;
  // Blocking: the body of an engine error (status 500) in the API's shape.
  virtual Json error_body(const ApiError& error) const { return error.to_json(); }
};

// One SSE frame: "data: JSON\n\n", or with an event name "event: NAME\ndata: JSON\n\n".
std::string sse_frame(const Json& data);
std::string sse_frame(std::string_view event, const Json& data);

// OpenAI's chat/completions replies (the Reply's chunks; "data: [DONE]" last).
std::unique_ptr<WireFormat> openai_format(Reply reply);

// Another API's request as the chat request the OpenAI path builds.
struct ChatTranslation {
  Json chat;  // a /v1/chat/completions body
  // Replaces the server's --reasoning-budget (0: no thinking, and enable_thinking false for the
  // template; < 0: unlimited); nullopt: the server's.
  std::optional<int32_t> reasoning_budget;
};

// A generation route that speaks another API over the chat path (HttpServer::generate_as):
// how its body becomes a chat request, and its reply's format. Errors of `translate` are the
// request's (400).
struct WireApi {
  std::string id_prefix;  // of ReplyInfo::id: "msg_", "resp_"
  std::function<std::optional<ApiError>(const Json& body, ChatTranslation& out)> translate;
  // info: the request's id, model, created and seed; n_prompt: its prompt tokens.
  std::function<std::unique_ptr<WireFormat>(const ReplyInfo& info, int64_t n_prompt)> make_format;
};

}  // namespace minfer::server
