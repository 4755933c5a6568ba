// The server's transport chosen by measurement (issue 21): Boost.Beast (server/http_transport.h,
// what `minfer serve` runs) against libmicrohttpd (its epoll mode: one internal thread), on the
// same trivial handlers under the same load. libmicrohttpd runs them twice: inline on its thread
// ("mhd"), and on 64 worker threads with the connection suspended meanwhile ("mhd+workers"), as
// the server's handlers would have to run (they wait for the scheduler). Built only where
// pkg-config finds libmicrohttpd; minfer does not depend on it.
//
//   build/bench/minfer_bench_transport [--idle 1000] [--events 20000] [--seconds 2]
//
// Each transport serves in a child process of its own (so that its threads and memory are its
// own): GET /json answers a short JSON body, GET /sse streams `events` SSE events, one chunk
// each (as the server writes a token's event). This process then measures, per transport:
//  1. `idle` connections each stopped partway through a request (half in the head, half in the
//     body) held open; the server's threads, and its resident memory per idle connection;
//  2. meanwhile, GET /json on a fresh connection: the latency (median and worst of 20);
//  3. short connections (a new one per GET /json, read to its close): requests per second from
//     one client and from four at once, for `seconds` each;
//  4. GET /sse read to its end: events per second and MiB/s.
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "server/http_transport.h"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr char kJson[] = R"({"object":"list","data":[{"id":"stories260K","object":"model"}]})";
// One token's event, as the server streams a completion.
constexpr char kEvent[] =
    "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1764662400,"
    "\"choices\":[{\"index\":0,\"text\":\" time\",\"finish_reason\":null}]}\n\n";

struct Settings {
  int idle = 1000;
  int events = 20000;
  double seconds = 2.0;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- the two servers (in the child) ----

[[noreturn]] void serve_beast(int events, int port_pipe) {
  using namespace minfer::server;
  TransportOptions options;  // the server's defaults (64 workers, 1 MiB stream queue, ...)
  options.max_stream_queue_bytes = 256u << 20;  // a producer this fast outruns any client
  TransportHandlers handlers{[events](HttpRequest& req, HttpResponse& res) {
                               if (req.path != "/sse")
                                 return res.set_content(kJson, "application/json");
                               auto sent = std::make_shared<int>(0);
                               res.set_chunked_content_provider(
                                   "text/event-stream",
                                   [sent, events](ChunkSink& sink) {
                                     if (*sent == events) {
                                       sink.done();
                                       return true;
                                     }
                                     ++*sent;
                                     return sink.write(kEvent, sizeof(kEvent) - 1);
                                   },
                                   nullptr);
                             },
                             [](const HttpRequest&, HttpResponse&) {}};
  HttpTransport transport(options, handlers);
  if (!transport.bind("127.0.0.1", 0).is_ok()) std::_Exit(2);
  const int port = transport.port();
  if (::write(port_pipe, &port, sizeof(port)) != sizeof(port)) std::_Exit(2);
  transport.serve();
  std::_Exit(0);
}

struct SseState {
  int left;
};

ssize_t sse_read(void* cls, uint64_t, char* buf, size_t max) {
  auto* state = static_cast<SseState*>(cls);
  if (state->left == 0) return MHD_CONTENT_READER_END_OF_STREAM;
  constexpr size_t kSize = sizeof(kEvent) - 1;
  if (max < kSize) return 0;
  std::memcpy(buf, kEvent, kSize);
  --state->left;
  return static_cast<ssize_t>(kSize);
}

// GET /sse's or /json's reply.
MHD_Response* mhd_response(const std::string& url, int events) {
  MHD_Response* response = nullptr;
  if (url == "/sse") {
    response = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 4096, &sse_read, new SseState{events},
        [](void* state) { delete static_cast<SseState*>(state); });
    MHD_add_response_header(response, "Content-Type", "text/event-stream");
  } else {
    response = MHD_create_response_from_buffer(sizeof(kJson) - 1, const_cast<char*>(kJson),
                                               MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
  }
  return response;
}

// Threads that run jobs (never stopped: the child process is killed).
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < n; ++i) {
      std::thread([this] {
        while (true) {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !jobs_.empty(); });
          std::function<void()> job = std::move(jobs_.front());
          jobs_.pop_front();
          lock.unlock();
          job();
        }
      }).detach();
    }
  }
  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
};

struct MhdServer {
  int events = 0;
  // Handlers on worker threads, as the server's must be (they wait for the scheduler): the
  // connection is suspended meanwhile and resumed with the reply.
  std::unique_ptr<Workers> workers;
};

struct MhdRequest {
  MHD_Response* response = nullptr;  // set by the worker before it resumes the connection
  bool submitted = false;
};

MHD_Result mhd_answer(void* cls, MHD_Connection* connection, const char* url, const char*,
                      const char*, const char*, size_t* upload_data_size, void** con_cls) {
  auto* server = static_cast<MhdServer*>(cls);
  if (*con_cls == nullptr) {  // the head alone: go on to the body
    *con_cls = new MhdRequest;
    return MHD_YES;
  }
  auto* req = static_cast<MhdRequest*>(*con_cls);
  if (*upload_data_size != 0) {  // the body is not used
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (!server->workers) req->response = mhd_response(url, server->events);
  if (req->response == nullptr) {
    if (!req->submitted) {
      req->submitted = true;
      MHD_suspend_connection(connection);
      server->workers->submit([req, connection, path = std::string(url), server] {
        req->response = mhd_response(path, server->events);
        MHD_resume_connection(connection);
      });
    }
    return MHD_YES;
  }
  const MHD_Result r = MHD_queue_response(connection, 200, req->response);
  MHD_destroy_response(req->response);
  req->response = nullptr;
  return r;
}

void mhd_completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  delete static_cast<MhdRequest*>(*con_cls);
  *con_cls = nullptr;
}

[[noreturn]] void serve_mhd(int events, bool on_workers, int port_pipe) {
  static MhdServer server;
  server.events = events;
  if (on_workers) server.workers = std::make_unique<Workers>(64);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  MHD_Daemon* daemon =
      MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, nullptr,
                       nullptr, &mhd_answer, &server, MHD_OPTION_SOCK_ADDR, &addr,
                       MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                       MHD_OPTION_NOTIFY_COMPLETED, &mhd_completed, nullptr, MHD_OPTION_END);
  if (daemon == nullptr) std::_Exit(2);
  const int port = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
  if (::write(port_pipe, &port, sizeof(port)) != sizeof(port)) std::_Exit(2);
  while (true) ::pause();
}

// ---- the load (in this process) ----

struct ServerProcess {
  pid_t pid = -1;
  int port = 0;
};

ServerProcess start(const std::string& transport, int events) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  ServerProcess p;
  p.pid = ::fork();
  if (p.pid == 0) {
    ::close(fds[0]);
    if (transport == "beast") serve_beast(events, fds[1]);
    serve_mhd(events, transport == "mhd+workers", fds[1]);
  }
  ::close(fds[1]);
  if (::read(fds[0], &p.port, sizeof(p.port)) != sizeof(p.port)) p.port = 0;
  ::close(fds[0]);
  return p;
}

// A field of /proc/PID/status ("Threads", "VmRSS" in KiB).
long proc_status(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// A client connection to the server on loopback, with `bytes` sent; not open on failure.
tcp::socket dial(asio::io_context& io, int port, const std::string& bytes) {
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<uint16_t>(port)), ec);
  if (!ec) asio::write(socket, asio::buffer(bytes), ec);
  if (ec) socket.close(ec);
  return socket;
}

// One request on a fresh connection, read to the server's close: the raw reply.
std::string fetch(int port, const std::string& path) {
  asio::io_context io;
  tcp::socket socket =
      dial(io, port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string raw;
  boost::system::error_code ec;
  if (socket.is_open()) asio::read(socket, asio::dynamic_buffer(raw), ec);  // to EOF
  return raw;
}

bool ok(const std::string& raw) {
  return raw.rfind("HTTP/1.1 200", 0) == 0;
}

// What one transport measured.
struct Figures {
  long threads[2] = {};       // before the idle connections, with them
  double kib_per_idle = 0;    // resident memory per idle connection
  int idle_held = 0;          // the server's descriptors with them
  double latency_ms[2] = {};  // GET /json meanwhile: median, worst
  double short_rps[2] = {};   // short connections per second: 1 client, 4 clients
  double events_per_s = 0, mib_per_s = 0;
  bool stream_complete = false;
};

// Steps 1 and 2: idle half-sent requests, then a request's latency.
void measure_idle(const ServerProcess& server, const Settings& s, Figures& f) {
  for (int i = 0; i < 200; ++i) fetch(server.port, "/json");  // warm up
  f.threads[0] = proc_status(server.pid, "Threads");
  const long rss_base = proc_status(server.pid, "VmRSS");
  asio::io_context io;
  std::vector<tcp::socket> idle;
  for (int i = 0; i < s.idle; ++i) {
    tcp::socket socket =
        dial(io, server.port,
             i % 2 == 0 ? std::string("GET /json HTTP/1.1\r\nHost: x\r\n")
                        : std::string("POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                      "100\r\n\r\n{\"prompt\": "));
    if (!socket.is_open()) break;
    idle.push_back(std::move(socket));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  f.threads[1] = proc_status(server.pid, "Threads");
  f.kib_per_idle = static_cast<double>(proc_status(server.pid, "VmRSS") - rss_base) /
                   std::max<size_t>(1, idle.size());
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid) + "/fd")) {
    f.idle_held += e.is_symlink() ? 1 : 0;
  }
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    const bool answered = ok(fetch(server.port, "/json"));
    ms.push_back(answered ? 1000 * seconds_since(t0) : 1e9);
  }
  std::sort(ms.begin(), ms.end());
  f.latency_ms[0] = ms[ms.size() / 2];
  f.latency_ms[1] = ms.back();
  idle.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

// Step 3: requests per second on short connections from `clients` client threads.
double short_connections(int port, int clients, double seconds) {
  std::atomic<long> n{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      while (seconds_since(t0) < seconds) n += ok(fetch(port, "/json")) ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  return static_cast<double>(n.load()) / seconds_since(t0);
}

Figures measure(const std::string& transport, const Settings& s) {
  Figures f;
  const ServerProcess server = start(transport, s.events);
  if (server.port == 0) {
    std::fprintf(stderr, "%s: the server did not start\n", transport.c_str());
    return f;
  }
  measure_idle(server, s, f);
  f.short_rps[0] = short_connections(server.port, 1, s.seconds);
  f.short_rps[1] = short_connections(server.port, 4, s.seconds);
  const auto t0 = Clock::now();
  const std::string raw = fetch(server.port, "/sse");
  const double took = seconds_since(t0);
  f.stream_complete =
      ok(raw) && raw.size() >= 5 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0;
  size_t n_events = 0;
  for (size_t at = raw.find("data: "); at != std::string::npos; at = raw.find("data: ", at + 1)) {
    ++n_events;
  }
  f.events_per_s = static_cast<double>(n_events) / took;
  f.mib_per_s = static_cast<double>(raw.size()) / took / (1 << 20);
  ::kill(server.pid, SIGKILL);
  ::waitpid(server.pid, nullptr, 0);
  return f;
}

void print(const char* name, const Figures& f, const Settings& s) {
  std::printf(
      "%-11s threads %ld -> %ld with %d idle (%d descriptors held), %.1f KiB resident per idle "
      "connection; GET /json meanwhile %.2f ms median, %.2f ms worst; short connections %.0f "
      "req/s (1 client), %.0f req/s (4 clients); stream of %d events: %.0f events/s, %.1f "
      "MiB/s%s\n",
      name, f.threads[0], f.threads[1], s.idle, f.idle_held, f.kib_per_idle, f.latency_ms[0],
      f.latency_ms[1], f.short_rps[0], f.short_rps[1], s.events, f.events_per_s, f.mib_per_s,
      f.stream_complete ? "" : " (INCOMPLETE)");
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--idle") s.idle = std::atoi(argv[i + 1]);
    if (flag == "--events") s.events = std::atoi(argv[i + 1]);
    if (flag == "--seconds") s.seconds = std::atof(argv[i + 1]);
  }
  ::signal(SIGPIPE, SIG_IGN);
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  for (const char* transport : {"beast", "mhd", "mhd+workers"}) {
    print(transport, measure(transport, s), s);
  }
  return 0;
}
