#include "server/reply_writer.h"

#include <utility>
#include <vector>

#include "server/http_io.h"

namespace minfer::server {

namespace {

// How long a waiting handler sleeps before it looks at its client's connection again.
constexpr auto kPollInterval = std::chrono::milliseconds(10);

}  // namespace

Call::Call(Metrics& metrics) : metrics_(metrics), t_submit_(Clock::now()) {}

std::function<void(const BatchEvent&)> Call::sink(std::shared_ptr<Call> call) {
  return [call = std::move(call)](const BatchEvent& event) { call->on_event(event); };
}

void Call::on_event(const BatchEvent& event) {
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

void Call::attach(std::shared_ptr<RequestHandle> handle,
                  std::shared_ptr<const ConnectionState> connection) {
  handle_ = std::move(handle);
  connection_ = std::move(connection);
}

// The connection is checked on every call, even while tokens keep coming: a fast model never
// leaves the queue empty, and a departed client's request would run to the end. The transport
// marks the state closed the moment the client's socket says so.
bool Call::take_events(std::deque<BatchEvent>& out) {
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

void write_blocking(HttpResponse& res, Call& call, const Reply& reply,
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
    return send_error(res, api_error(500, final_event.error, "server_error", ""));
  }
  send_json(res, reply.complete(parts, tokens, final_event.finish, final_event.stats));
}

namespace {

// The state of one SSE reply across the calls of its content provider.
class EventStream {
 public:
  EventStream(std::shared_ptr<Call> call, Reply reply)
      : call_(std::move(call)), reply_(std::move(reply)) {}

  // Writes what arrived; false stops the stream (the client left).
  bool write_some(ChunkSink& out) {
    if (reply_.info().endpoint == Endpoint::kChat && !role_sent_) {
      role_sent_ = true;
      if (!send(out, reply_.role_chunk())) return cancel();
    }
    std::deque<BatchEvent> events;
    if (!call_->take_events(events)) return false;
    for (BatchEvent& e : events) {
      for (const Json& chunk : reply_.event_chunks(e, text_offset_)) {
        if (!send(out, chunk)) return cancel();
      }
      if (e.done) {
        finish(out, e);
        return true;
      }
    }
    return true;
  }

 private:
  static bool send(ChunkSink& out, const Json& j) {
    const std::string line = "data: " + dump(j) + "\n\n";
    return out.write(line.data(), line.size());
  }

  bool cancel() {
    call_->cancel();
    return false;
  }

  // The last chunks (or the engine's error), then [DONE].
  void finish(ChunkSink& out, const BatchEvent& e) {
    if (!e.error.empty()) {
      send(out, api_error(500, e.error, "server_error", "").to_json());
    } else {
      send(out, reply_.finish_chunk(e.finish));
      if (reply_.info().include_usage) send(out, reply_.usage_chunk(e.stats));
    }
    const std::string end = "data: [DONE]\n\n";
    out.write(end.data(), end.size());
    out.done();
  }

  std::shared_ptr<Call> call_;
  Reply reply_;
  bool role_sent_ = false;
  int64_t text_offset_ = 0;  // bytes of text sent so far
};

}  // namespace

void write_stream(HttpResponse& res, std::shared_ptr<Call> call, Reply reply,
                  std::function<void()> release) {
  auto stream = std::make_shared<EventStream>(std::move(call), std::move(reply));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [stream](ChunkSink& out) { return stream->write_some(out); },
      std::move(release));
}

}  // namespace minfer::server
