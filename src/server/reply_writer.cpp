#include "server/reply_writer.h"

#include <utility>
#include <vector>

#include "server/http_io.h"

namespace minfer::server {

namespace {

// How long a waiting handler sleeps before it looks at its client's connection again.
constexpr auto kPollInterval = std::chrono::milliseconds(10);

}  // namespace

PendingReply::PendingReply(Metrics& metrics) : metrics_(metrics), t_submit_(Clock::now()) {}

std::function<void(const BatchEvent&)> PendingReply::sink(std::shared_ptr<PendingReply> call) {
  return [call = std::move(call)](const BatchEvent& event) { call->on_event(event); };
}

void PendingReply::on_event(const BatchEvent& event) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (!event.tokens.empty()) {
    if (first_token_) {
      metrics_.on_first_token(std::chrono::duration<double>(now - t_submit_).count());
    } else {
      metrics_.on_output_token(std::chrono::duration<double>(now - t_last_token_).count());
    }
    first_token_ = false;
    t_last_token_ = now;
  }
  if (event.done) {
    // vLLM's finished_reason labels: a reply that called tools stopped as it chose to.
    const char* reason = event.finish == FinishReason::kCancelled ? "abort"
                         : event.finish == FinishReason::kToolCalls
                             ? "stop"
                             : openai_finish_reason(event.finish);
    metrics_.on_request_done(event.stats, reason);
  }
  events_.push_back(event);
  cv_.notify_all();
}

void PendingReply::attach(std::shared_ptr<RequestHandle> handle,
                          std::shared_ptr<const ConnectionState> connection) {
  handle_ = std::move(handle);
  connection_ = std::move(connection);
}

// The connection is checked on every call, even while tokens keep coming: a fast model never
// leaves the queue empty, and a departed client's request would run to the end. The transport
// marks the state closed the moment the client's socket says so.
bool PendingReply::take_events(std::deque<BatchEvent>& out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, kPollInterval, [&] { return !events_.empty(); });
  out.swap(events_);
  lock.unlock();
  if (connection_ != nullptr && connection_->closed()) {
    cancel();
    return false;
  }
  return true;
}

void write_blocking(HttpResponse& res, PendingReply& call, const WireFormat& format,
                    const std::function<void()>& release) {
  ReplyParts parts;
  std::vector<SampledToken> tokens;
  BatchEvent final_event;
  bool done = false;
  while (!done) {
    std::deque<BatchEvent> events;
    call.take_events(events);  // a departed client is cancelled; its final event still comes
    for (BatchEvent& e : events) {
      parts.add(e);
      tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
      if (e.done) {
        final_event = std::move(e);
        done = true;
      }
    }
  }
  release();
  if (!final_event.error.empty()) {
    const ApiError error = api_error(500, final_event.error, "server_error", "");
    res.status = error.status;
    return send_json(res, format.error_body(error));
  }
  send_json(res, format.complete(parts, tokens, final_event));
}

namespace {

// The state of one SSE reply across the calls of its content provider.
class EventStream {
 public:
  EventStream(std::shared_ptr<PendingReply> call, std::unique_ptr<WireFormat> format)
      : call_(std::move(call)), format_(std::move(format)) {}

  // Writes what arrived; false stops the stream (the client left).
  bool write_some(ChunkSink& out) {
    if (!opened_) {
      opened_ = true;
      if (!send(out, format_->stream_open())) return cancel();
    }
    std::deque<BatchEvent> events;
    if (!call_->take_events(events)) return false;
    for (BatchEvent& e : events) {
      if (!send(out, format_->stream_event(e)) && !e.done) return cancel();
      if (e.done) {
        out.done();
        return true;
      }
    }
    return true;
  }

 private:
  static bool send(ChunkSink& out, const std::vector<std::string>& frames) {
    for (const std::string& frame : frames) {
      if (!out.write(frame.data(), frame.size())) return false;
    }
    return true;
  }

  bool cancel() {
    call_->cancel();
    return false;
  }

  std::shared_ptr<PendingReply> call_;
  std::unique_ptr<WireFormat> format_;
  bool opened_ = false;
};

}  // namespace

void write_stream(HttpResponse& res, std::shared_ptr<PendingReply> call,
                  std::unique_ptr<WireFormat> format, std::function<void()> release) {
  auto stream = std::make_shared<EventStream>(std::move(call), std::move(format));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [stream](ChunkSink& out) { return stream->write_some(out); },
      std::move(release));
}

}  // namespace minfer::server
