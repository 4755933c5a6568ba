#include "server/wire_format.h"

#include <utility>

namespace minfer::server {

std::string sse_frame(const Json& data) {
  return "data: " + dump(data) + "\n\n";
}

std::string sse_frame(std::string_view event, const Json& data) {
  std::string frame = "event: ";
  frame.append(event);
  frame += "\n";
  return frame + sse_frame(data);
}

namespace {

class OpenAiFormat : public WireFormat {
 public:
  explicit OpenAiFormat(Reply reply) : reply_(std::move(reply)) {}

  std::vector<std::string> stream_open() override {
    if (reply_.info().endpoint != Endpoint::kChat) return {};
    return {sse_frame(reply_.role_chunk())};
  }

  std::vector<std::string> stream_event(const BatchEvent& e) override {
    std::vector<std::string> frames;
    for (const Json& chunk : reply_.event_chunks(e, text_offset_)) {
      frames.push_back(sse_frame(chunk));
    }
    if (!e.done) return frames;
    if (!e.error.empty()) {
      ApiError error;
      error.status = 500;
      error.message = e.error;
      error.type = "server_error";
      frames.push_back(sse_frame(error.to_json()));
    } else {
      Json finish = reply_.finish_chunk(e.finish);
      finish["timings"] = timings_json(e.stats);  // llama-server's, on the last chunk
      frames.push_back(sse_frame(finish));
      if (reply_.info().include_usage) frames.push_back(sse_frame(reply_.usage_chunk(e.stats)));
    }
    frames.emplace_back("data: [DONE]\n\n");
    return frames;
  }

  Json complete(const ReplyParts& parts, const std::vector<SampledToken>& tokens,
                const BatchEvent& final_event) const override {
    return reply_.complete(parts, tokens, final_event.finish, final_event.stats);
  }

 private:
  Reply reply_;
  int64_t text_offset_ = 0;  // bytes of text sent so far
};

}  // namespace

std::unique_ptr<WireFormat> openai_format(Reply reply) {
  return std::make_unique<OpenAiFormat>(std::move(reply));
}

}  // namespace minfer::server
