// A generation request in flight (PendingReply: events passed from the generator's thread to the
// handler's, the client's connection state watched so a departed client's request is cancelled),
// and the two writers of its reply: one JSON object, or server-sent events (SSE). Both take their
// text from the API's WireFormat (server/wire_format.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "minfer/minfer.h"
#include "server/http_message.h"
#include "server/metrics.h"
#include "server/openai_reply.h"
#include "server/wire_format.h"

namespace minfer::server {

// One generation request between its handler thread and the scheduler thread.
class PendingReply {
 public:
  // `metrics` (first-token and inter-token times, finished requests) must outlive the call.
  explicit PendingReply(Metrics& metrics);

  // The sink to submit the request with; it holds the call until the scheduler drops it.
  static std::function<void(const BatchEvent&)> sink(std::shared_ptr<PendingReply> call);
  // After a successful submit: the request's handle and the state of the client's connection
  // (null: not watched).
  void attach(std::shared_ptr<RequestHandle> handle,
              std::shared_ptr<const ConnectionState> connection);
  const std::shared_ptr<RequestHandle>& handle() const { return handle_; }
  // Another request answering into this call (the choices of n > 1); cancelled with it.
  void attach_more(std::shared_ptr<RequestHandle> handle) { more_.push_back(std::move(handle)); }
  const std::vector<std::shared_ptr<RequestHandle>>& more() const { return more_; }
  void cancel() {
    handle_->cancel();
    for (const auto& h : more_) h->cancel();
  }

  // Takes the events that arrived (waiting up to one poll interval); false when the client left,
  // and then the request is cancelled (its final event still comes).
  bool take_events(std::deque<BatchEvent>& out);

 private:
  using Clock = std::chrono::steady_clock;
  void on_event(const BatchEvent& event);

  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<BatchEvent> events_;  // under mu_
  std::shared_ptr<RequestHandle> handle_;
  std::shared_ptr<const ConnectionState> connection_;
  std::vector<std::shared_ptr<RequestHandle>> more_;
  Clock::time_point t_submit_;
  Clock::time_point t_last_token_;
  bool first_token_ = true;
};

// Waits for the request to end, calls `release`, and answers with the whole reply as one JSON
// object, or with the engine's error as a 500.
void write_blocking(HttpResponse& res, PendingReply& call, const WireFormat& format,
                    const std::function<void()>& release);

// Answers with server-sent events as tokens arrive: the format's opening frames, the frames of
// each event, its closing frames. `release` runs once the stream ended or the client left.
void write_stream(HttpResponse& res, std::shared_ptr<PendingReply> call,
                  std::unique_ptr<WireFormat> format, std::function<void()> release);

}  // namespace minfer::server
