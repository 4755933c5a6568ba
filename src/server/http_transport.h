// The connection layer of the server: HTTP/1.1 over Boost.Beast and Asio. One event-loop thread
// (the one that calls serve()) owns every socket: it accepts, reads each request's head and body
// under deadlines, and writes replies; an idle or slow connection costs a socket and a few KiB,
// no thread. A complete request goes to a small pool of worker threads (the handlers block on
// the scheduler), and its reply comes back to the loop to be written. A streamed reply's chunks
// wait in a bounded queue per connection: a client that reads too slowly is dropped, and nothing
// else waits for it.
//
//   HttpTransport t(options, handlers);
//   t.bind("127.0.0.1", 0);    // the port is taken
//   t.serve();                 // on its own thread, until stop()
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/non_copyable.h"
#include "core/status.h"
#include "server/http_message.h"

namespace minfer::server {

struct TransportOptions {
  size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  int read_timeout_s = 10;           // deadline for a request's head, and again for its body
  int write_timeout_s = 10;          // a reply's pending bytes must be taken within it
  int keep_alive_timeout_s = 5;      // an idle kept-alive connection is closed after it
  int max_connections = 4096;        // past it new connections are closed at once
  int n_threads = 64;                // workers running handlers
  // Bytes of request bodies held at once, across connections: a body is counted from its head's
  // Content-Length (or each chunk's header) until its request was handled; one that would pass
  // the total gets 503 (answer_refused). Taken as at least max_body_bytes.
  size_t max_body_bytes_total = 256u << 20;
  // Bytes of a streamed reply that may wait for a slow client; past it the client is dropped.
  size_t max_stream_queue_bytes = 1u << 20;
  // After stop(): how long replies being written may take before their connections are closed.
  int stop_grace_s = 5;
};

struct TransportHandlers {
  // Answers a request (on a worker thread): fills the response, or its stream producer.
  std::function<void(HttpRequest&, HttpResponse&)> handle;
  // A request the transport refused (400 malformed, 413 too large, 503 over the bodies' total;
  // on the loop thread): the response has its status and no body yet.
  std::function<void(const HttpRequest&, HttpResponse&)> answer_refused;
};

class HttpTransport : NonCopyable {
 public:
  HttpTransport(TransportOptions options, TransportHandlers handlers);
  ~HttpTransport();

  // Takes the port (0: any free one). Error: the address is in use or invalid.
  Status bind(const std::string& host, int port);
  int port() const;
  // Runs the event loop and the workers until stop(); returns at once after a stop().
  void serve();
  // Stops accepting; idle connections close, replies being written finish (within stop_grace_s),
  // then serve() returns.
  void stop();
  // Connections open now.
  int n_connections() const;
  // Bytes of request bodies held now (see TransportOptions::max_body_bytes_total).
  size_t body_bytes_held() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer::server
