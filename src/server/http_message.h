// The server's own HTTP messages, between the connection layer (server/http_transport.h) and the
// route handlers: a parsed request, and the reply a handler fills in — a whole body, or a stream
// of chunks (SSE) that a producer writes while the connection layer sends them.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minfer::server {

// Header names compare without case (RFC 9110 §5.1).
struct CaseInsensitiveLess {
  bool operator()(std::string_view a, std::string_view b) const;
  using is_transparent = void;
};
using HttpHeaders = std::multimap<std::string, std::string, CaseInsensitiveLess>;

// What a handler sees of the connection its request came on: whether the client is still there.
// Set by the connection layer when the client closed its end, a write failed, or a slow reader
// was dropped.
class ConnectionState {
 public:
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  void mark_closed() { closed_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> closed_{false};
};

struct HttpRequest {
  std::string method;                              // "GET", "POST", ...
  std::string path;                                // the target without its query, not decoded
  std::vector<std::string> matches;                // [0] the path, then the route pattern's groups
  std::multimap<std::string, std::string> params;  // the query's fields, percent-decoded
  HttpHeaders headers;
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  bool keep_alive = true;  // the client asked to keep the connection (HTTP/1.1 default)
  std::shared_ptr<const ConnectionState> connection;

  // The header's first value, "" when absent.
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
  bool has_param(const std::string& name) const;
  // The query field's first value, "" when absent.
  std::string get_param_value(const std::string& name) const;
};

// Where a streamed reply's producer writes. write() is false once the client is gone or was
// dropped for reading too slowly; the producer then stops.
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual bool write(const char* data, size_t size) = 0;
  // The stream is complete: no more writes.
  virtual void done() = 0;
};

struct HttpResponse {
  // Called on the request's worker thread until it returns false (the stream is broken off) or
  // calls sink.done() (the stream is complete).
  using StreamProducer = std::function<bool(ChunkSink& sink)>;

  int status = 200;
  HttpHeaders headers;
  std::string body;
  StreamProducer stream;               // set: the reply is streamed (chunked), body unused
  std::function<void()> stream_ended;  // called once the stream ended or the client left

  void set_header(const std::string& name, const std::string& value);
  void set_content(std::string content, const std::string& content_type);
  // The reply is a stream of `content_type`; `ended` runs once it is over, however it ended.
  void set_chunked_content_provider(const std::string& content_type, StreamProducer producer,
                                    std::function<void()> ended);
};

// A query string's fields ("a=1&b=x%20y"), percent-decoded ('+' is a space).
std::multimap<std::string, std::string> parse_query(std::string_view query);

}  // namespace minfer::server
