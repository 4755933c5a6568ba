// The connection layer alone (server/http_transport.h), in process over loopback with trivial
// handlers: the bytes of request bodies held across connections stay under their total (a body
// past it gets 503, and its share comes back once its request was handled), and a client that
// does not read its stream is dropped at its queue bound or write deadline while the others are
// answered.
#include "server/http_transport.h"

#include <poll.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "apps/child_process.h"

namespace minfer::server {
namespace {

using test::connect_loopback;
using test::exchange_raw;
using test::send_all;
using test::wait_until;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What a client reads until the server closes the connection or `seconds` pass.
std::string read_to_end(int fd, double seconds) {
  std::string raw;
  char buf[65536];
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  return raw;
}

int status_of(const std::string& raw) {
  return raw.size() > 12 ? std::atoi(raw.c_str() + 9) : 0;
}

std::string body_of(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return at == std::string::npos ? "" : raw.substr(at + 4);
}

std::string post_head(size_t length, const std::string& extra = "") {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
         std::to_string(length) + "\r\n" + extra + "\r\n";
}

// The transport on a free port, serving on a thread of its own until destroyed.
class Served {
 public:
  Served(TransportOptions options, TransportHandlers handlers)
      : transport_(std::move(options), std::move(handlers)) {
    ok_ = transport_.bind("127.0.0.1", 0).is_ok();
    if (ok_) thread_ = std::thread([this] { transport_.serve(); });
  }
  ~Served() {
    transport_.stop();
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return ok_; }
  int port() const { return transport_.port(); }
  HttpTransport& transport() { return transport_; }

 private:
  HttpTransport transport_;
  std::thread thread_;
  bool ok_ = false;
};

// Answers a request with its body's size; a refused one with "refused".
TransportHandlers echo_handlers() {
  return TransportHandlers{
      [](HttpRequest& req, HttpResponse& res) {
        res.set_content(std::to_string(req.body.size()), "text/plain");
      },
      [](const HttpRequest&, HttpResponse& res) { res.set_content("refused", "text/plain"); }};
}

TEST(HttpTransportBodies, BodiesPastTheirTotalGet503AndTheirShareComesBack) {
  constexpr size_t kBody = 600000;
  TransportOptions options;
  options.max_body_bytes = 1u << 20;
  options.max_body_bytes_total = 1u << 20;
  options.n_threads = 2;
  Served served(options, echo_handlers());
  ASSERT_TRUE(served.ok());
  const int port = served.port();

  // A body being sent slowly holds its whole length.
  const int holder = connect_loopback(port);
  ASSERT_GE(holder, 0);
  ASSERT_TRUE(send_all(holder, post_head(kBody) + std::string(1000, 'a')));
  ASSERT_TRUE(wait_until([&] { return served.transport().body_bytes_held() == kBody; }, 5.0))
      << served.transport().body_bytes_held() << " bytes held";

  // Another such body would pass the total: 503, whether it is sent whole, waits for
  // "100 Continue", or comes in chunks.
  std::string raw = exchange_raw(port, post_head(kBody) + std::string(kBody, 'b'));
  EXPECT_EQ(status_of(raw), 503) << raw.substr(0, 200);
  EXPECT_EQ(body_of(raw), "refused");
  raw = exchange_raw(port, post_head(kBody, "Expect: 100-continue\r\n"));
  EXPECT_EQ(status_of(raw), 503) << raw.substr(0, 200);
  EXPECT_EQ(raw.find("100 Continue"), std::string::npos);
  const std::string chunked =
      "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  // (Its first bytes only: the answer comes at the chunk's header.)
  raw = exchange_raw(port, chunked + "10\r\n" + std::string(16, 'c') + "\r\n" +
                               fmt::format("{:x}\r\n", kBody) + std::string(1000, 'c'));
  EXPECT_EQ(status_of(raw), 503) << raw.substr(0, 200);
  // A body that fits beside it is served, chunked or not.
  raw = exchange_raw(port, post_head(1000) + std::string(1000, 'd'));
  EXPECT_EQ(status_of(raw), 200) << raw.substr(0, 200);
  EXPECT_EQ(body_of(raw), "1000");
  raw = exchange_raw(port, chunked + "3e8\r\n" + std::string(1000, 'e') + "\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(raw), 200) << raw.substr(0, 200);
  EXPECT_EQ(served.transport().body_bytes_held(), kBody);

  // The holder leaves: its share comes back, and large bodies one after another are all served.
  ::close(holder);
  EXPECT_TRUE(wait_until([&] { return served.transport().body_bytes_held() == 0; }, 5.0))
      << served.transport().body_bytes_held() << " bytes held";
  for (int i = 0; i < 4; ++i) {
    raw = exchange_raw(port, post_head(kBody) + std::string(kBody, 'f'));
    EXPECT_EQ(status_of(raw), 200) << "request " << i << ": " << raw.substr(0, 200);
    EXPECT_EQ(body_of(raw), std::to_string(kBody));
  }
  EXPECT_TRUE(wait_until([&] { return served.transport().body_bytes_held() == 0; }, 5.0));
}

TEST(HttpTransportBodies, TheTotalIsAtLeastOneLargestBody) {
  TransportOptions options;
  options.max_body_bytes = 100000;
  options.max_body_bytes_total = 10;  // taken as max_body_bytes
  options.n_threads = 2;
  Served served(options, echo_handlers());
  ASSERT_TRUE(served.ok());
  std::string raw = exchange_raw(served.port(), post_head(100000) + std::string(100000, 'a'));
  EXPECT_EQ(status_of(raw), 200) << raw.substr(0, 200);
  raw = exchange_raw(served.port(), post_head(100001) + std::string(100001, 'a'));
  EXPECT_EQ(status_of(raw), 413) << raw.substr(0, 200);
}

// A stream that writes 4 KiB chunks until its sink refuses one; "/json" answers at once.
struct EndlessStream {
  std::atomic<size_t> bytes_written{0};
  std::atomic<bool> refused{false};

  TransportHandlers handlers(std::chrono::microseconds pause) {
    return TransportHandlers{[this, pause](HttpRequest& req, HttpResponse& res) {
                               if (req.path == "/json")
                                 return res.set_content("{}", "application/json");
                               res.set_chunked_content_provider(
                                   "text/event-stream",
                                   [this, pause](ChunkSink& sink) {
                                     const std::string chunk(4096, 'x');
                                     if (!sink.write(chunk.data(), chunk.size())) {
                                       refused.store(true);
                                       return false;
                                     }
                                     bytes_written += chunk.size();
                                     std::this_thread::sleep_for(pause);
                                     return true;
                                   },
                                   nullptr);
                             },
                             [](const HttpRequest&, HttpResponse&) {}};
  }
};

// A client that reads nothing of an endless stream: once `refused` the server dropped it (its
// connection ends without the last chunk), and meanwhile another client was answered.
void expect_dropped_while_others_served(Served& served, EndlessStream& stream, double within_s) {
  const int slow = connect_loopback(served.port(), 2048);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(send_all(slow, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(wait_until([&] { return stream.bytes_written.load() > 0; }, 5.0));
  const auto t0 = Clock::now();
  const std::string other =
      exchange_raw(served.port(), "GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(other), 200);
  EXPECT_LT(seconds_since(t0), 5.0) << "another client waited for the slow one";
  EXPECT_TRUE(wait_until([&] { return stream.refused.load(); }, within_s))
      << "the stream was not refused; " << stream.bytes_written.load() << " bytes written";
  const std::string raw = read_to_end(slow, 20.0);
  ::close(slow);
  EXPECT_EQ(status_of(raw), 200);
  EXPECT_EQ(raw.find("\r\n0\r\n\r\n"), std::string::npos) << "the stream ended as if complete";
  EXPECT_TRUE(wait_until([&] { return served.transport().n_connections() == 0; }, 5.0));
}

TEST(HttpTransportSlowReader, IsDroppedAtItsQueueBound) {
  EndlessStream stream;
  TransportOptions options;
  options.max_stream_queue_bytes = 256u << 10;
  options.write_timeout_s = 600;  // the queue bound comes first
  options.n_threads = 2;
  Served served(options, stream.handlers(std::chrono::microseconds(0)));
  ASSERT_TRUE(served.ok());
  expect_dropped_while_others_served(served, stream, 20.0);
  std::printf("dropped at the queue bound after %zu bytes written\n", stream.bytes_written.load());
}

TEST(HttpTransportSlowReader, IsDroppedAtItsWriteDeadline) {
  EndlessStream stream;
  TransportOptions options;
  options.max_stream_queue_bytes = 1u << 30;  // the deadline comes first
  options.write_timeout_s = 1;
  options.n_threads = 2;
  Served served(options, stream.handlers(std::chrono::milliseconds(2)));
  ASSERT_TRUE(served.ok());
  expect_dropped_while_others_served(served, stream, 20.0);
}

}  // namespace
}  // namespace minfer::server
