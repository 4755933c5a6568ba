// `minfer serve` under hostile load, on real processes over loopback: idle half-sent requests
// cost the others nothing, descriptors come back after many short connections, 200 concurrent
// streams each end complete or with a clean 503, a client that reads slowly slows no one else
// and is dropped at its queue bound or write deadline (its request cancelled), request bodies
// past --max-body-total get 503, and SIGTERM drains (/health 503 while a stream finishes, exit
// code 0).
//
// GCC 12 reports a false maybe-uninitialized inside <regex> (child_process.h) when it inlines
// under -O2 -fsanitize (the ASan build); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <fcntl.h>
#include <poll.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/child_process.h"
#include "test_util.h"

namespace minfer::test {
namespace {

// Wall-clock bounds hold for the release build; under ASan (several times slower) they are
// reported, not checked.
#if defined(MINFER_TEST_ASAN)
constexpr bool kCheckCosts = false;
constexpr int kShortConnections = 2000;
#else
constexpr bool kCheckCosts = true;
constexpr int kShortConnections = 10000;
#endif

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string model_path() {
  return test_data_path("models/stories260K.gguf");
}

std::string post_request(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string stream_body(int max_tokens) {
  return R"({"prompt": "Once upon a time", "max_tokens": )" + std::to_string(max_tokens) +
         R"(, "temperature": 0, "stream": true})";
}

// This process's open descriptors, or another's (/proc/PID/fd).
int count_fds(pid_t pid) {
  int n = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

// The server's descriptors once nothing is in flight: the fewest over a few samples (a connection
// just answered may still be closing).
int settled_fds(pid_t pid) {
  int n = count_fds(pid);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    n = std::min(n, count_fds(pid));
  }
  return n;
}

// Waits (up to `seconds`) for the server's descriptors to come back to `baseline`; the last
// count.
int wait_for_fds(pid_t pid, int baseline, double seconds) {
  wait_until([&] { return count_fds(pid) <= baseline; }, seconds);
  return count_fds(pid);
}

// A streamed reply read to the end: its status, and for a 200 whether it ended with [DONE] and
// the last chunk; its data events, and when the first and last came.
struct StreamReply {
  int status = 0;
  bool complete = false;
  bool clean_503 = false;
  int n_events = 0;
  double seconds_to_first = 0;
  double seconds_to_end = 0;
};

// Every client's reply, read with poll() until each server closes its end or `deadline_s`.
std::vector<StreamReply> read_replies(const std::vector<int>& fds, Clock::time_point t0,
                                      double deadline_s) {
  std::vector<std::string> raw(fds.size());
  std::vector<StreamReply> out(fds.size());
  std::vector<bool> open(fds.size(), true);
  size_t n_open = fds.size();
  char buf[65536];
  while (n_open > 0 && seconds_since(t0) < deadline_s) {
    std::vector<pollfd> polls;
    std::vector<size_t> which;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!open[i]) continue;
      polls.push_back(pollfd{fds[i], POLLIN, 0});
      which.push_back(i);
    }
    if (::poll(polls.data(), polls.size(), 200) <= 0) continue;
    for (size_t k = 0; k < polls.size(); ++k) {
      if (polls[k].revents == 0) continue;
      const size_t i = which[k];
      const ssize_t n = ::recv(fds[i], buf, sizeof(buf), 0);
      if (n > 0) {
        if (raw[i].empty()) out[i].seconds_to_first = seconds_since(t0);
        raw[i].append(buf, static_cast<size_t>(n));
        continue;
      }
      open[i] = false;
      --n_open;
      out[i].seconds_to_end = seconds_since(t0);
    }
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    const std::string& r = raw[i];
    StreamReply& s = out[i];
    if (r.size() > 12) s.status = std::atoi(r.c_str() + 9);
    const size_t end = r.size() >= 64 ? r.size() - 64 : 0;
    s.complete = !open[i] && s.status == 200 && r.find("data: [DONE]", end) != std::string::npos &&
                 r.size() >= 5 && r.compare(r.size() - 5, 5, "0\r\n\r\n") == 0;
    s.clean_503 = !open[i] && s.status == 503 && r.find("\"error\"") != std::string::npos;
    for (size_t at = r.find("data: {"); at != std::string::npos; at = r.find("data: {", at + 1)) {
      ++s.n_events;
    }
  }
  return out;
}

// `n` streaming completions at once, each of `max_tokens`; their replies.
std::vector<StreamReply> run_streams(int port, int n, int max_tokens, double deadline_s) {
  std::vector<int> fds;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    const int fd = connect_loopback(port);
    if (fd >= 0 && !send_all(fd, post_request("/v1/completions", stream_body(max_tokens)))) {
      ::close(fd);
      continue;
    }
    if (fd >= 0) fds.push_back(fd);
  }
  std::vector<StreamReply> replies = read_replies(fds, t0, deadline_s);
  for (const int fd : fds) ::close(fd);
  return replies;
}

TEST(ServeLoad, IdleHalfSentRequestsDoNotDelayOthersAndDescriptorsComeBack) {
  MINFER_REQUIRE_TEST_DATA();
  ServeChild server(model_path(), {"--timeout", "30"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  ASSERT_EQ(http_request(server.port(), "GET", "/health").status, 200);
  const int baseline = settled_fds(server.pid());

  // 1,000 connections, each stopped partway: in the head, or in the body.
  std::vector<int> idle;
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n";
  for (int i = 0; i < 1000; ++i) {
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0) << "connection " << i;
    ASSERT_TRUE(send_all(fd, i % 2 == 0 ? head : head + "\r\n{\"prompt\": "));
    idle.push_back(fd);
  }
  const auto t0 = Clock::now();
  HttpReply r = http_request(server.port(), "POST", "/v1/completions",
                             R"({"prompt": "Once upon a time", "max_tokens": 8})");
  const double seconds = seconds_since(t0);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("text_completion"), std::string::npos) << r.body;
  std::printf("completion with 1000 idle half-sent requests open: %.3f s\n", seconds);
  if (kCheckCosts) {
    EXPECT_LT(seconds, 1.0);
  }
  EXPECT_GE(count_fds(server.pid()), baseline + 1000);
  for (const int fd : idle) ::close(fd);
  EXPECT_EQ(wait_for_fds(server.pid(), baseline, 10.0), baseline);

  // Short connections: whole requests, requests cut off, and connections that send nothing.
  const auto t1 = Clock::now();
  int n_ok = 0;
  for (int i = 0; i < kShortConnections; ++i) {
    if (i % 3 == 0) {
      n_ok += http_request(server.port(), "GET", "/health").status == 200 ? 1 : 0;
      continue;
    }
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0) << "connection " << i;
    if (i % 3 == 1) send_all(fd, "GET /health HTTP/1.1\r\nHo");
    ::close(fd);
  }
  std::printf("%d short connections in %.2f s; server descriptors: baseline %d\n",
              kShortConnections, seconds_since(t1), baseline);
  EXPECT_EQ(n_ok, (kShortConnections + 2) / 3);
  EXPECT_EQ(wait_for_fds(server.pid(), baseline, 10.0), baseline);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeLoad, PastMaxConnectionsNewConnectionsAreClosedAtOnce) {
  MINFER_REQUIRE_TEST_DATA();
  ServeChild server(model_path(), {"--max-connections", "20", "--timeout", "30"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  std::vector<int> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(connect_loopback(server.port()));
    ASSERT_GE(held.back(), 0);
  }
  // The server has taken all 20 once the 21st is refused; until then one may still be pending.
  const auto t0 = Clock::now();
  int status = http_request(server.port(), "GET", "/health").status;
  while (status != 0 && seconds_since(t0) < 5.0) {
    status = http_request(server.port(), "GET", "/health").status;
  }
  EXPECT_EQ(status, 0) << "the 21st connection was answered";
  EXPECT_LT(seconds_since(t0), 5.0);
  for (const int fd : held) ::close(fd);
  EXPECT_TRUE(
      wait_until([&] { return http_request(server.port(), "GET", "/health").status == 200; }, 5.0));
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeLoad, TwoHundredConcurrentStreamsEachCompleteOrGetA503) {
  MINFER_REQUIRE_TEST_DATA();
  ServeChild server(model_path(), {"-np", "8", "--max-queue", "32"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  const auto t0 = Clock::now();
  const std::vector<StreamReply> replies = run_streams(server.port(), 200, 32, 120.0);
  ASSERT_EQ(replies.size(), 200u);
  int n_complete = 0;
  int n_503 = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    const StreamReply& s = replies[i];
    EXPECT_TRUE(s.complete || s.clean_503)
        << "client " << i << ": status " << s.status << ", " << s.n_events << " events";
    n_complete += s.complete ? 1 : 0;
    n_503 += s.clean_503 ? 1 : 0;
  }
  std::printf("200 concurrent streams on -np 8: %d complete, %d answered 503, in %.2f s\n",
              n_complete, n_503, seconds_since(t0));
  EXPECT_GT(n_complete, 0);
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// Tokens per second of the other streams, the mean over clients.
double mean_tokens_per_s(const std::vector<StreamReply>& replies) {
  double sum = 0;
  for (const StreamReply& s : replies) sum += s.n_events / std::max(1e-3, s.seconds_to_end);
  return replies.empty() ? 0 : sum / static_cast<double>(replies.size());
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n == 0 ? 0 : n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

// The value of the first sample in GET /metrics whose line starts with `name` and contains
// `label` (a Prometheus text line: NAME{LABELS} VALUE); -1 when there is none.
double metric_value(int port, const std::string& name, const std::string& label = "") {
  const std::string text = http_request(port, "GET", "/metrics").body;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    if (at > 0 && text[at - 1] != '\n') continue;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    if (line.find(label) == std::string::npos) continue;
    return std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return -1;
}

// No request running and every KV block back.
bool scheduler_idle(int port) {
  return metric_value(port, "vllm:num_requests_running") == 0 &&
         metric_value(port, "minfer_kv_blocks_used") == 0;
}

double n_aborted(int port) {
  return metric_value(port, "vllm:request_success_total", "finished_reason=\"abort\"");
}

// Reads one byte a second from a socket, on a thread of its own, until stopped.
class SlowReader {
 public:
  explicit SlowReader(int fd) : thread_([this, fd] { run(fd); }) {}
  ~SlowReader() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int n_read() const { return n_read_.load(); }

 private:
  void run(int fd) {
    while (!stop_.load()) {
      char c = 0;
      if (::recv(fd, &c, 1, MSG_DONTWAIT) == 1) ++n_read_;
      for (int i = 0; i < 20 && !stop_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> n_read_{0};
  std::thread thread_;
};

// One round of `k` streaming clients of `max_tokens` each, the same in every round. With `slow`
// the last of them reads one byte a second; its request must leave the scheduler (done, its KV
// blocks back, not cancelled) while it has read only a few bytes: no step waits for a reader.
// The replies of the first k - 1, read at full speed.
std::vector<StreamReply> fair_round(int port, int k, int max_tokens, bool slow) {
  std::vector<int> fds;
  const auto t0 = Clock::now();
  for (int i = 0; i < k; ++i) {
    fds.push_back(connect_loopback(port, slow && i == k - 1 ? 2048 : 0));
    EXPECT_TRUE(send_all(fds.back(), post_request("/v1/completions", stream_body(max_tokens))));
  }
  std::vector<int> read_now = fds;
  std::optional<SlowReader> reader;
  if (slow) {
    reader.emplace(fds.back());
    read_now.pop_back();
  }
  std::vector<StreamReply> replies = read_replies(read_now, t0, 60.0);
  if (slow) {
    EXPECT_TRUE(wait_until([&] { return scheduler_idle(port); }, 20.0))
        << "the slow reader's request did not leave the scheduler";
    EXPECT_LT(reader->n_read(), 60) << "the check came too late to say anything";
    EXPECT_EQ(n_aborted(port), 0) << "the slow reader's request was cancelled";
    reader->stop();
  }
  for (const int fd : fds) ::close(fd);
  replies.resize(static_cast<size_t>(k - 1));
  return replies;
}

// The same four streams, alternately all read at full speed and with the last of them read one
// byte a second; the others' tokens per second compared (medians). Their speed is reported, and
// held to a generous bound only (CI shares two cores): bench/serve/slow_reader.py measures it.
TEST(ServeLoad, AClientReadingOneByteASecondSlowsNoOneElse) {
  MINFER_REQUIRE_TEST_DATA();
  // --timeout 30: the slow reader is not dropped during a round, so both arrangements run the
  // same batch.
  ServeChild server(model_path(), {"-np", "4", "--timeout", "30"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  constexpr int kClients = 4;
  constexpr int kRounds = 3;
  std::vector<double> without;
  std::vector<double> with;
  for (int round = 0; round < 2 * kRounds; ++round) {
    const bool slow = round % 2 == 1;
    const std::vector<StreamReply> others = fair_round(server.port(), kClients, 256, slow);
    for (const StreamReply& s : others) {
      EXPECT_TRUE(s.complete) << "round " << round << ": status " << s.status << ", " << s.n_events
                              << " events";
    }
    (slow ? with : without).push_back(mean_tokens_per_s(others));
  }
  const double a = median(without);
  const double b = median(with);
  std::printf(
      "the other %d streams: %.0f tokens/s each without the slow reader, %.0f with it "
      "(medians of %d rounds)\n",
      kClients - 1, a, b, kRounds);
  if (kCheckCosts) {
    EXPECT_GT(b, 0.25 * a);  // a stall would be near 0; the rest is noise and compute
  }
  EXPECT_EQ(http_request(server.port(), "GET", "/health").status, 200);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// A completion that never ends by itself (EOS banned, the context shifted), streamed.
std::string endless_body(const std::string& extra) {
  return R"({"prompt": "Once upon a time", "max_tokens": 1000000, "temperature": 0, )"
         R"("logit_bias": {"2": -100}, "stream": true)" +
         extra + "}";
}

// `minfer serve --timeout T` and a slow reader of an endless stream (`extra`: more fields of its
// request): another client streams to the end meanwhile, then the server drops the slow one, its
// request is cancelled and its KV blocks come back; what it reads afterwards ends without the
// reply's end.
void expect_slow_reader_dropped(const std::string& timeout_s, const std::string& extra) {
  ServeChild server(model_path(), {"-np", "2", "--timeout", timeout_s, "--context-shift"});
  const int port = server.port();
  ASSERT_NE(port, 0) << server.stderr_text();
  const int slow = connect_loopback(port, 2048);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(send_all(slow, post_request("/v1/completions", endless_body(extra))));
  const auto t0 = Clock::now();
  SlowReader reader(slow);
  const std::vector<StreamReply> other = run_streams(port, 1, 64, 60.0);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_TRUE(other[0].complete) << "status " << other[0].status;
  // The server's send buffer (fixed at 256 KiB, doubled) and the client's take about half a MiB
  // before a write waits.
  EXPECT_TRUE(wait_until([&] { return n_aborted(port) == 1 && scheduler_idle(port); }, 120.0))
      << "the slow reader's request was not cancelled, or its KV blocks did not come back";
  const double dropped_s = seconds_since(t0);
  reader.stop();
  const std::vector<StreamReply> rest = read_replies({slow}, Clock::now(), 20.0);
  ::close(slow);
  EXPECT_GT(rest[0].seconds_to_end, 0) << "the server did not close the slow client";
  EXPECT_FALSE(rest[0].complete);
  std::printf("slow reader dropped and cancelled after %.1f s\n", dropped_s);
  EXPECT_EQ(http_request(port, "GET", "/health").status, 200);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeLoad, ASlowReaderIsDroppedAtItsWriteDeadlineItsRequestCancelledItsKvBlocksBack) {
  MINFER_REQUIRE_TEST_DATA();
  // Small events: the 1 MiB queue would take several seconds to fill after a write waits.
  expect_slow_reader_dropped("2", "");
}

TEST(ServeLoad, ASlowReaderIsDroppedAtItsQueueBoundItsRequestCancelledItsKvBlocksBack) {
  MINFER_REQUIRE_TEST_DATA();
  // The write deadline is far: what drops the client is its 1 MiB queue, which events with
  // alternatives fill sooner.
  expect_slow_reader_dropped("600", R"(, "logprobs": 5)");
}

TEST(ServeLoad, RequestBodiesPastMaxBodyTotalGet503UntilTheirBytesComeBack) {
  MINFER_REQUIRE_TEST_DATA();
  ServeChild server(model_path(), {"--max-body", "1048576", "--max-body-total", "1MiB"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  constexpr size_t kBody = 700000;
  const std::string head =
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(kBody) + "\r\n";
  // A client sending its body slowly holds its length; another such body does not fit beside it.
  const int holder = connect_loopback(server.port());
  ASSERT_GE(holder, 0);
  ASSERT_TRUE(send_all(holder, head + "\r\n{\"content\": "));
  std::string raw;
  EXPECT_TRUE(wait_until(
      [&] {
        raw = exchange_raw(server.port(), head + "Expect: 100-continue\r\n\r\n");
        return raw.rfind("HTTP/1.1 503", 0) == 0;
      },
      5.0))
      << raw.substr(0, 300);
  EXPECT_NE(raw.find("\"code\":\"server_busy\""), std::string::npos) << raw;
  EXPECT_NE(raw.find("--max-body-total (1048576 bytes)"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Retry-After: 1"), std::string::npos) << raw;
  // Once the holder leaves, the same body (whitespace-padded JSON) is served.
  ::close(holder);
  std::string body = R"({"content": "Once upon a time"})";
  body.resize(kBody, ' ');
  EXPECT_TRUE(wait_until(
      [&] {
        raw = exchange_raw(server.port(), head + "\r\n" + body);
        return raw.rfind("HTTP/1.1 200", 0) == 0;
      },
      5.0))
      << raw.substr(0, 300);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ServeLoad, SigtermDrainsHealthIs503WhileAStreamFinishesThenExitsZero) {
  MINFER_REQUIRE_TEST_DATA();
  ServeChild server(model_path(), {"-np", "1", "--drain", "60"});
  ASSERT_NE(server.port(), 0) << server.stderr_text();
  // Streams one after another on one sequence: the drain has work in flight for a while.
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    const int fd = connect_loopback(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, post_request("/v1/completions", stream_body(1800))));
    fds.push_back(fd);
  }
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(server.pid(), SIGTERM);
  int health = 0;
  for (int i = 0; i < 100 && health != 503; ++i) {
    health = http_request(server.port(), "GET", "/health").status;
    if (health != 503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double t_503 = seconds_since(t0);
  EXPECT_EQ(health, 503) << "/health while draining";
  const std::vector<StreamReply> replies = read_replies(fds, t0, 120.0);
  double last_end = 0;
  for (const StreamReply& s : replies) {
    EXPECT_TRUE(s.complete) << "status " << s.status << ", " << s.n_events << " events";
    last_end = std::max(last_end, s.seconds_to_end);
  }
  EXPECT_GT(last_end, t_503) << "a stream was still running when /health said 503";
  for (const int fd : fds) ::close(fd);
  std::printf("drain: /health 503 after %.3f s, last stream done after %.3f s\n", t_503, last_end);
  EXPECT_EQ(server.wait(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace minfer::test
