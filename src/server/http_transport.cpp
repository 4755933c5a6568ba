#include "server/http_transport.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
// GCC 12 with ASan inlines Beast's parser into this file's handlers and then warns that a
// boost::optional<uint64_t> (the parsed Content-Length) "may be used uninitialized": a false
// positive inside the library (its headers are SYSTEM, but the warning lands here after inlining).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace minfer::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr uint32_t kHeaderLimit = 64u << 10;   // bytes of a request's line and headers
constexpr size_t kReadChunk = 4096;            // bytes read at once while idle or discarding
constexpr uint64_t kMaxDiscard = 64ull << 20;  // an oversized body read away before its 413
constexpr auto kAcceptRetry = std::chrono::milliseconds(50);  // after EMFILE and the like
// A connection's kernel send buffer (Linux doubles it). Left to autotuning it grows to several
// MiB, which a client that stops reading holds on top of its reply queue; a fixed size also
// makes a slow reader's writes wait, and so its write deadline and queue bound apply, soon.
constexpr int kSendBuffer = 256 << 10;

// Runs jobs on a fixed set of threads.
class WorkerPool {
 public:
  ~WorkerPool() { stop(); }

  void start(int n_threads) {
    for (int i = 0; i < n_threads; ++i) threads_.emplace_back([this] { run(); });
  }
  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  // Waits for the running jobs; the waiting ones are dropped.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::deque<std::function<void()>> dropped;
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(jobs_);
  }

 private:
  void run() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // under mu_
  bool stopping_ = false;                   // under mu_
  std::vector<std::thread> threads_;
};

// The bytes of request bodies held across connections, against their total
// (TransportOptions::max_body_bytes_total). Shared by the loop (which takes) and the workers
// (which give back once a request was handled).
class BodyBudget {
 public:
  explicit BodyBudget(size_t limit) : limit_(limit) {}
  // False (and nothing taken) when `n` more bytes would pass the total.
  bool take(size_t n) {
    size_t held = held_.load();
    do {
      if (n > limit_ - held) return false;
    } while (!held_.compare_exchange_weak(held, held + n));
    return true;
  }
  void give(size_t n) { held_.fetch_sub(n); }
  size_t held() const { return held_.load(); }

 private:
  const size_t limit_;
  std::atomic<size_t> held_{0};
};

// One request's share of the BodyBudget: it grows as the body's length becomes known and goes
// back when the lease is released or destroyed.
class BodyLease {
 public:
  BodyLease() = default;
  BodyLease(BodyLease&& other) noexcept
      : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  BodyLease& operator=(BodyLease&&) = delete;
  BodyLease(const BodyLease&) = delete;
  BodyLease& operator=(const BodyLease&) = delete;
  ~BodyLease() { release(); }

  // False when the budget has no room for `n` more bytes (the lease keeps what it held).
  bool grow(BodyBudget& budget, size_t n) {
    if (n == 0) return true;
    if (!budget.take(n)) return false;
    budget_ = &budget;
    bytes_ += n;
    return true;
  }
  void release() {
    if (budget_ != nullptr && bytes_ > 0) budget_->give(bytes_);
    bytes_ = 0;
  }

 private:
  BodyBudget* budget_ = nullptr;
  size_t bytes_ = 0;
};

// How the bytes handed to the loop end the reply being written.
enum class ReplyEnd {
  kMore,       // more of this reply follows
  kKeepAlive,  // the reply is complete; the next request may follow
  kClose,      // the reply is complete; the connection closes after it
  kDrop,       // the reply is broken off: close now
};

std::string_view as_view(beast::string_view s) {
  return {s.data(), s.size()};
}

// The client went away or let a deadline pass: nothing to answer.
bool is_disconnect(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::operation_aborted || ec == beast::error::timeout ||
         ec == asio::error::broken_pipe;
}

// The status line and headers of a reply; `content_length` null: chunked (a stream).
std::string reply_head(const HttpResponse& res, bool keep_alive, int keep_alive_s,
                       const size_t* content_length) {
  std::string out =
      fmt::format("HTTP/1.1 {} {}\r\n", res.status,
                  as_view(http::obsolete_reason(static_cast<http::status>(res.status))));
  auto add = std::back_inserter(out);
  for (const auto& [name, value] : res.headers) fmt::format_to(add, "{}: {}\r\n", name, value);
  if (content_length == nullptr) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (res.status != 204 && res.status != 304) {
    fmt::format_to(add, "Content-Length: {}\r\n", *content_length);
  }
  if (keep_alive) {
    fmt::format_to(add, "Connection: keep-alive\r\nKeep-Alive: timeout={}\r\n", keep_alive_s);
  } else {
    out += "Connection: close\r\n";
  }
  out += "\r\n";
  return out;
}

class Connection;

// What the loop, its connections and stop() share. Everything but the atomics, the worker pool and
// the options belongs to the loop thread.
struct TransportCore {
  TransportCore(TransportOptions o, TransportHandlers h)
      : options(std::move(o)),
        handlers(std::move(h)),
        body_budget(std::max(options.max_body_bytes_total, options.max_body_bytes)) {}

  void accept();
  void on_accept(const beast::error_code& ec, tcp::socket socket);
  void begin_stop();
  void on_connection_closed(Connection* connection);

  TransportOptions options;
  TransportHandlers handlers;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  asio::steady_timer stop_timer{io};
  WorkerPool workers;
  BodyBudget body_budget;
  // Where bodies refused unread are read away; one for all connections (the loop reads one at a
  // time, and the bytes are thrown away).
  std::vector<char> discard_buffer = std::vector<char>(64u << 10);
  std::atomic<int> n_connections{0};
  std::atomic<bool> stop_requested{false};
  bool stopping = false;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
};

// One connection: its requests one after another (read, handled on a worker, written), and the
// client watched while a request runs so that a departed client is seen at once.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(TransportCore& core, tcp::socket socket)
      : core_(core),
        stream_(std::move(socket)),
        state_(std::make_shared<ConnectionState>()),
        on_chunk_header_([this](uint64_t size, beast::string_view, beast::error_code& ec) {
          take_body_bytes(size, ec);
        }) {}

  void start() { read_head(); }
  // Loop thread: closes the connection unless a request is being answered.
  void stop_if_idle() {
    if (!busy_) close();
  }
  // Loop thread: closes now; a reply being made sees it in its connection state.
  void close();

  // Worker thread: answers `req` and hands the reply to the loop; the body's lease goes back
  // once the handler returned.
  void answer(HttpRequest& req, BodyLease& body_lease);
  // Worker thread: one chunk of a streamed reply; false when over the slow-reader bound.
  bool queue_chunk(const char* data, size_t size);
  const ConnectionState& state() const { return *state_; }

 private:
  void read_head();
  void read_head_within_deadline();
  void on_head(const beast::error_code& ec);
  void read_body();
  // Loop thread: `n` more body bytes held, against the bodies' total; over it, `ec` stops the
  // read (a 503 follows).
  void take_body_bytes(uint64_t n, beast::error_code& ec);
  // Loop thread: a body refused unread is read away before the answer `status`.
  void discard_body(uint64_t remaining, int status);
  // Loop thread: answers with `status` (400, 413, 503) and closes.
  void refuse(int status);
  void dispatch();
  void watch_peer();
  void stop_watching();
  // Worker thread: bytes for the loop to write.
  void post(std::string bytes, ReplyEnd end);
  void stream_reply(HttpResponse& res, bool keep_alive);
  void enqueue(std::string bytes, ReplyEnd end);
  void write_queued();
  void finish_reply();
  HttpRequest request_from_parser();

  TransportCore& core_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool discarding_ = false;
  std::shared_ptr<ConnectionState> state_;
  BodyLease body_lease_;      // the body being read
  bool over_budget_ = false;  // the body would pass the bodies' total
  std::function<void(uint64_t, beast::string_view, beast::error_code&)> on_chunk_header_;
  std::deque<std::string> out_;  // bytes waiting to be written, in order
  std::atomic<size_t> queued_bytes_{0};
  ReplyEnd reply_end_ = ReplyEnd::kMore;
  bool writing_ = false;
  bool busy_ = false;      // a request is being answered
  bool watching_ = false;  // a wait for the client's close is pending
  bool closed_ = false;
  uint64_t n_requests_ = 0;  // requests taken, and the watch's generation
};

void Connection::read_head() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  parser_->on_chunk_header(on_chunk_header_);
  over_budget_ = false;
  discarding_ = false;
  // The head's Content-Length is checked below, so that a body over the limit gets its 413.
  parser_->body_limit(std::numeric_limits<uint64_t>::max());
  if (n_requests_ == 0 || buffer_.size() > 0) return read_head_within_deadline();
  // A kept-alive connection idles until its next request begins.
  stream_.expires_after(std::chrono::seconds(core_.options.keep_alive_timeout_s));
  stream_.async_read_some(buffer_.prepare(kReadChunk),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            if (ec) return self->close();
                            self->buffer_.commit(n);
                            self->read_head_within_deadline();
                          });
}

void Connection::read_head_within_deadline() {
  stream_.expires_after(std::chrono::seconds(core_.options.read_timeout_s));
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_head(ec); });
}

void Connection::on_head(const beast::error_code& ec) {
  if (ec) return is_disconnect(ec) ? close() : refuse(400);
  const boost::optional<uint64_t> length = parser_->content_length();
  const bool expect_continue = beast::iequals(parser_->get()[http::field::expect], "100-continue");
  int refused = 0;
  if (length && *length > core_.options.max_body_bytes) {
    refused = 413;
  } else if (length && !body_lease_.grow(core_.body_budget, *length)) {
    refused = 503;
  }
  if (refused != 0) {
    // A client waiting for "100 Continue" has sent no body: it is answered at once.
    return expect_continue ? refuse(refused) : discard_body(*length, refused);
  }
  parser_->body_limit(core_.options.max_body_bytes);
  if (parser_->is_done()) return dispatch();
  if (expect_continue) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(std::chrono::seconds(core_.options.write_timeout_s));
    return asio::async_write(stream_, asio::buffer(kContinue),
                             [self = shared_from_this()](beast::error_code e, size_t) {
                               if (e) return self->close();
                               self->read_body();
                             });
  }
  read_body();
}

void Connection::read_body() {
  stream_.expires_after(std::chrono::seconds(core_.options.read_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     if (self->over_budget_) return self->refuse(503);
                     if (ec == http::error::body_limit) return self->refuse(413);
                     if (ec) return is_disconnect(ec) ? self->close() : self->refuse(400);
                     self->dispatch();
                   });
}

// A chunked body's bytes are taken as each chunk's header announces them.
void Connection::take_body_bytes(uint64_t n, beast::error_code& ec) {
  if (body_lease_.grow(core_.body_budget, static_cast<size_t>(n))) return;
  over_budget_ = true;
  ec = http::error::body_limit;
}

// A body refused unread (over the limit, or over the bodies' total) is read away (within the
// body's deadline) before the answer, so that the client, still sending, sees it rather than a
// reset connection.
void Connection::discard_body(uint64_t remaining, int status) {
  const uint64_t buffered = std::min<uint64_t>(remaining, buffer_.size());
  buffer_.consume(buffered);
  remaining -= buffered;
  if (remaining == 0 || remaining > kMaxDiscard) return refuse(status);
  if (!discarding_) {
    discarding_ = true;
    stream_.expires_after(std::chrono::seconds(core_.options.read_timeout_s));
  }
  std::vector<char>& sink = core_.discard_buffer;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining, sink.size()));
  stream_.async_read_some(asio::buffer(sink.data(), n), [self = shared_from_this(), remaining,
                                                         status](beast::error_code ec, size_t got) {
    if (ec) return self->close();
    if (got >= remaining) return self->refuse(status);
    self->discard_body(remaining - got, status);
  });
}

HttpRequest Connection::request_from_parser() {
  HttpRequest req;
  if (parser_ && parser_->is_header_done()) {
    http::request<http::string_body> msg = parser_->release();
    req.method = std::string(as_view(msg.method_string()));
    const std::string_view target(msg.target().data(), msg.target().size());
    const size_t query = target.find('?');
    req.path = std::string(target.substr(0, query));
    if (query != std::string_view::npos) req.params = parse_query(target.substr(query + 1));
    for (const auto& field : msg) {
      req.headers.emplace(as_view(field.name_string()), as_view(field.value()));
    }
    req.keep_alive = msg.keep_alive();
    req.body = std::move(msg.body());
  }
  beast::error_code ec;
  const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
  if (!ec) {
    req.remote_addr = peer.address().to_string();
    req.remote_port = peer.port();
  }
  req.connection = state_;
  return req;
}

void Connection::refuse(int status) {
  body_lease_.release();
  HttpRequest req = request_from_parser();
  HttpResponse res;
  res.status = status;
  core_.handlers.answer_refused(req, res);
  busy_ = true;
  const size_t length = res.body.size();
  queued_bytes_ += length;
  enqueue(reply_head(res, false, 0, &length) + res.body, ReplyEnd::kClose);
}

void Connection::dispatch() {
  auto req = std::make_shared<HttpRequest>(request_from_parser());
  auto lease = std::make_shared<BodyLease>(std::move(body_lease_));
  busy_ = true;
  ++n_requests_;
  watch_peer();
  core_.workers.submit([self = shared_from_this(), req, lease] { self->answer(*req, *lease); });
}

// While a request runs, the client should send nothing: readable means it closed its end (or
// sent its next request early, which ends the watch).
void Connection::watch_peer() {
  watching_ = true;
  stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this(), n = n_requests_](beast::error_code ec) {
        if (n != self->n_requests_ || self->closed_) return;
        if (ec) {
          self->watching_ = false;
          return;
        }
        char c = 0;
        const ssize_t got =
            ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          return self->close();
        }
        if (got < 0) return self->watch_peer();
        self->watching_ = false;
      });
}

void Connection::stop_watching() {
  if (!watching_) return;
  watching_ = false;
  beast::error_code ec;
  stream_.socket().cancel(ec);  // nothing else is pending between two requests
}

void Connection::answer(HttpRequest& req, BodyLease& body_lease) {
  HttpResponse res;
  core_.handlers.handle(req, res);
  // The handler has read the body (a streamed reply keeps what it parsed, not the bytes).
  std::string().swap(req.body);
  body_lease.release();
  const bool keep_alive = req.keep_alive && !core_.stop_requested.load();
  const int keep_alive_s = core_.options.keep_alive_timeout_s;
  if (res.stream) return stream_reply(res, keep_alive);
  const size_t length = res.body.size();
  std::string bytes = reply_head(res, keep_alive, keep_alive_s, &length);
  if (req.method != "HEAD") bytes += res.body;
  post(std::move(bytes), keep_alive ? ReplyEnd::kKeepAlive : ReplyEnd::kClose);
}

// A streamed reply's sink on the worker thread: chunks go to the connection's queue.
class StreamSink : public ChunkSink {
 public:
  explicit StreamSink(Connection& connection) : session_(connection) {}
  bool write(const char* data, size_t size) override {
    if (broken_ || finished_ || session_.state().closed()) return !(broken_ = true);
    if (size == 0) return true;
    if (!session_.queue_chunk(data, size)) return !(broken_ = true);
    return true;
  }
  void done() override { finished_ = true; }
  bool finished() const { return finished_; }
  bool broken() const { return broken_; }

 private:
  Connection& session_;
  bool finished_ = false;
  bool broken_ = false;
};

void Connection::stream_reply(HttpResponse& res, bool keep_alive) {
  post(reply_head(res, keep_alive, core_.options.keep_alive_timeout_s, nullptr), ReplyEnd::kMore);
  StreamSink sink(*this);
  try {
    while (!sink.finished() && !sink.broken() && res.stream(sink)) {
    }
  } catch (...) {
  }
  if (sink.finished()) {
    post("0\r\n\r\n", keep_alive ? ReplyEnd::kKeepAlive : ReplyEnd::kClose);
  } else {
    post("", ReplyEnd::kDrop);  // no last chunk: the client sees the reply broken off
  }
  if (res.stream_ended) res.stream_ended();
}

bool Connection::queue_chunk(const char* data, size_t size) {
  if (queued_bytes_.load() + size > core_.options.max_stream_queue_bytes) return false;
  std::string framed = fmt::format("{:x}\r\n", size);
  framed.append(data, size);
  framed += "\r\n";
  post(std::move(framed), ReplyEnd::kMore);
  return true;
}

void Connection::post(std::string bytes, ReplyEnd end) {
  queued_bytes_ += bytes.size();
  asio::post(core_.io, [self = shared_from_this(), bytes = std::move(bytes), end]() mutable {
    self->enqueue(std::move(bytes), end);
  });
}

void Connection::enqueue(std::string bytes, ReplyEnd end) {
  if (closed_ || end == ReplyEnd::kDrop) {
    queued_bytes_ -= bytes.size();
    return close();
  }
  if (!bytes.empty()) {
    out_.push_back(std::move(bytes));
  }
  if (end != ReplyEnd::kMore) reply_end_ = end;
  if (!writing_) write_queued();
}

// Everything queued goes out in one gathered write, under the write deadline.
void Connection::write_queued() {
  if (closed_) return;
  if (out_.empty()) {
    writing_ = false;
    if (reply_end_ != ReplyEnd::kMore) finish_reply();
    return;
  }
  writing_ = true;
  std::vector<asio::const_buffer> pieces;
  size_t n_bytes = 0;
  for (const std::string& s : out_) {
    pieces.push_back(asio::buffer(s));
    n_bytes += s.size();
  }
  stream_.expires_after(std::chrono::seconds(core_.options.write_timeout_s));
  asio::async_write(
      stream_, pieces,
      [self = shared_from_this(), n_pieces = pieces.size(), n_bytes](beast::error_code ec, size_t) {
        self->queued_bytes_ -= n_bytes;
        for (size_t i = 0; i < n_pieces; ++i) self->out_.pop_front();
        self->writing_ = false;
        if (ec) return self->close();
        self->write_queued();
      });
}

void Connection::finish_reply() {
  const ReplyEnd end = reply_end_;
  reply_end_ = ReplyEnd::kMore;
  busy_ = false;
  stop_watching();
  if (end == ReplyEnd::kKeepAlive && !core_.stopping) return read_head();
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  close();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  body_lease_.release();
  state_->mark_closed();
  stream_.close();
  core_.on_connection_closed(this);
}

void TransportCore::accept() {
  acceptor.async_accept(
      io, [this](beast::error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void TransportCore::on_accept(const beast::error_code& ec, tcp::socket socket) {
  if (stopping || ec == asio::error::operation_aborted) return;
  if (ec) {  // out of file descriptors, say: try again in a moment
    accept_retry.expires_after(kAcceptRetry);
    accept_retry.async_wait([this](beast::error_code e) {
      if (!e && !stopping) accept();
    });
    return;
  }
  beast::error_code ignored;
  if (n_connections.load() >= options.max_connections) {
    socket.close(ignored);
  } else {
    socket.set_option(tcp::no_delay(true), ignored);
    socket.set_option(asio::socket_base::send_buffer_size(kSendBuffer), ignored);
    auto connection = std::make_shared<Connection>(*this, std::move(socket));
    connections.emplace(connection.get(), connection);
    n_connections.fetch_add(1);
    connection->start();
  }
  accept();
}

void TransportCore::on_connection_closed(Connection* connection) {
  connections.erase(connection);
  n_connections.fetch_sub(1);
  if (stopping && connections.empty()) stop_timer.cancel();
}

void TransportCore::begin_stop() {
  if (stopping) return;
  stopping = true;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  auto live = [this] {
    std::vector<std::shared_ptr<Connection>> out;
    for (auto& [ptr, weak] : connections) {
      if (auto s = weak.lock()) out.push_back(std::move(s));
    }
    return out;
  };
  for (const auto& s : live()) s->stop_if_idle();
  if (connections.empty()) return;
  stop_timer.expires_after(std::chrono::seconds(options.stop_grace_s));
  stop_timer.async_wait([live](beast::error_code ec) {
    if (ec) return;
    for (const auto& s : live()) s->close();
  });
}

}  // namespace

struct HttpTransport::Impl : TransportCore {
  using TransportCore::TransportCore;
  int port = 0;
};

HttpTransport::HttpTransport(TransportOptions options, TransportHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}

HttpTransport::~HttpTransport() {
  stop();
}

Status HttpTransport::bind(const std::string& host, int port) {
  beast::error_code ec;
  tcp::endpoint endpoint;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, static_cast<uint16_t>(port));
  } else {
    tcp::resolver resolver(impl_->io);
    auto found = resolver.resolve(host, std::to_string(port), ec);
    if (!ec && !found.empty()) endpoint = *found.begin();
  }
  tcp::acceptor& acceptor = impl_->acceptor;
  if (!ec) acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    acceptor.close(ignored);
    if (port == 0) {
      return make_error(ErrorCode::kIo, "[server] cannot listen on {} (any port): {}", host,
                        ec.message());
    }
    return make_error(ErrorCode::kIo,
                      "[server] cannot listen on {}:{} (in use or not an "
                      "address): {}",
                      host, port, ec.message());
  }
  impl_->port = acceptor.local_endpoint().port();
  return Status::ok();
}

int HttpTransport::port() const {
  return impl_->port;
}

void HttpTransport::serve() {
  if (impl_->stop_requested.load()) return;
  impl_->workers.start(std::max(1, impl_->options.n_threads));
  impl_->accept();
  impl_->io.run();
  impl_->workers.stop();
}

void HttpTransport::stop() {
  impl_->stop_requested.store(true);
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

int HttpTransport::n_connections() const {
  return impl_->n_connections.load();
}

size_t HttpTransport::body_bytes_held() const {
  return impl_->body_budget.held();
}

}  // namespace minfer::server
