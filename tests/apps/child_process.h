// Runs `minfer` as a child process and measures it: wall time and peak RSS (wait4's rusage), for
// the tests that hand it hostile files. Also a `minfer serve` child on a free port, with a raw
// HTTP/1.1 client (header-only; POSIX).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer::test {

struct ChildRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
  double cpu_seconds = 0;  // the child's user and system time: its work, whatever else runs
  long max_rss_kb = 0;     // the child's peak resident set
};

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `args` (args[0]: the program) with stdout and stderr captured.
inline ChildRun run_child(const std::vector<std::string>& args) {
  TempDir dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ChildRun r;
  int status = 0;
  struct rusage usage {};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.max_rss_kb = usage.ru_maxrss;
    auto seconds_of = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    r.cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.out = slurp_file(out_path);
  r.err = slurp_file(err_path);
  return r;
}

struct HttpReply {
  int status = 0;
  std::string body;
};

// A socket connected to 127.0.0.1:port, -1 on failure. `rcvbuf` > 0 shrinks its receive buffer
// first (a client that reads slowly then holds back the server at once).
inline int connect_loopback(int port, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `bytes`; false when the connection failed first.
inline bool send_all(int fd, const std::string& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// `request`'s bytes sent on a fresh connection to 127.0.0.1:port, and what comes back until the
// server closes it ("" when the connection failed).
inline std::string exchange_raw(int port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  send_all(fd, request);
  std::string raw;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return raw;
}

// One request on a fresh connection to 127.0.0.1:port (Connection: close; the reply is read to
// the end).
inline HttpReply http_request(int port, const std::string& method, const std::string& path,
                              const std::string& body = "") {
  HttpReply reply;
  const std::string raw =
      exchange_raw(port, method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                             "Content-Type: application/json\r\nConnection: close\r\n" +
                             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  if (raw.size() > 12) reply.status = std::atoi(raw.c_str() + 9);
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end != std::string::npos) reply.body = raw.substr(head_end + 4);
  return reply;
}

// Polls `done` every 10 ms until it is true or `seconds` passed; whether it became true.
template <typename F>
bool wait_until(F done, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!done()) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(seconds)) {
      return false;
    }
    ::usleep(10000);
  }
  return true;
}

// `minfer serve -m MODEL --port 0 -t 1 EXTRA...` until it says it is ready; stopped (SIGTERM)
// on destruction.
class ServeChild {
 public:
  explicit ServeChild(const std::string& model, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {minfer_binary(), "serve", "-m", model,
                                     "--port",        "0",     "-t", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    err_path_ = dir_.file("stderr");
    pid_ = ::fork();
    if (pid_ == 0) {
      const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(err, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const std::regex listening("listening on http://[0-9.]+:([0-9]+)");
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      const std::string text = stderr_text();
      std::smatch m;
      if (text.find("minfer serve: ready") != std::string::npos &&
          std::regex_search(text, m, listening)) {
        port_ = std::stoi(m[1].str());
      } else {
        ::usleep(50000);
      }
    }
  }
  ~ServeChild() { stop(); }
  // SIGTERM, then the exit code (128 + signal when killed; -1 when already stopped).
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    return wait();
  }
  // Waits for the process to end: its exit code as stop() gives it.
  int wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ServeChild(const ServeChild&) = delete;
  ServeChild& operator=(const ServeChild&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const { return slurp_file(err_path_); }
  // The server's user and system time so far (/proc/PID/stat utime + stime): its work, whatever
  // else runs on the machine.
  double cpu_seconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Fields after the command name (which may hold spaces) start at field 3, the state.
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    unsigned long long ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) ticks += std::stoull(field);  // utime, stime
    }
    return static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  // The server's peak resident set so far (VmHWM), in KiB.
  long peak_rss_kb() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    }
    return -1;
  }

 private:
  TempDir dir_;
  std::string err_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace minfer::test
