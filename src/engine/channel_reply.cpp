#include "engine/channel_reply.h"

#include <utility>

#include "engine/reply_markers.h"

namespace minfer::engine {

ChannelReplyParser::ChannelReplyParser(const ChannelReplyOptions& options)
    : options_(options), ids_(options.id_seed != 0 ? options.id_seed : std::random_device{}()) {}

ReplyDelta ChannelReplyParser::push(std::string_view text) {
  ReplyDelta out;
  pending_ += text;
  while (step(out, false)) {
  }
  return out;
}

ReplyDelta ChannelReplyParser::finish() {
  ReplyDelta out;
  while (step(out, true)) {
  }
  end(out);
  pending_.clear();
  return out;
}

void ChannelReplyParser::add_call(ReplyDelta& out, std::string name, std::string arguments) {
  if (!options_.return_calls) return;
  // The call's first piece (id and name) apart from its arguments, as the other formats send it.
  ToolCallDelta call;
  call.index = n_calls_++;
  call.id = random_call_id(ids_);
  call.name = std::move(name);
  out.tool_calls.push_back(std::move(call));
  out.tool_calls.push_back({n_calls_ - 1, "", "", std::move(arguments)});
}

}  // namespace minfer::engine
