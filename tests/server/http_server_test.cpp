// HttpServer's lifecycle: stop() ends serve() however early it comes. cpp-httplib ignores a stop
// before its listen loop runs, and `minfer serve` with a model that fails to load at once used to
// hang there after printing the error.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace minfer::server {
namespace {

// True when serve() returned within the time; a server whose serve() hangs is leaked with its
// thread so that the test can report instead of hanging too.
bool serve_returns(HttpServer* server, std::chrono::seconds within, bool stop_first) {
  if (stop_first) server->stop();
  auto returned = std::make_shared<std::promise<void>>();
  std::future<void> done = returned->get_future();
  std::thread serving([server, returned] {
    server->serve();
    returned->set_value();
  });
  if (!stop_first) server->stop();
  if (done.wait_for(within) != std::future_status::ready) {
    serving.detach();
    return false;
  }
  serving.join();
  return true;
}

ServerOptions any_port() {
  ServerOptions options;
  options.port = 0;
  options.n_http_threads = 4;
  return options;
}

TEST(HttpServerLifecycle, StopRightAfterServeBeginsEndsServe) {
  for (int i = 0; i < 50; ++i) {
    auto server = std::make_unique<HttpServer>(any_port());
    ASSERT_TRUE(server->bind().is_ok());
    if (!serve_returns(server.get(), std::chrono::seconds(10), false)) {
      server.release();  // its serve() still runs
      FAIL() << "serve() did not return after stop() (round " << i << ")";
    }
  }
}

TEST(HttpServerLifecycle, StopBeforeServeMakesServeReturnAtOnce) {
  auto server = std::make_unique<HttpServer>(any_port());
  ASSERT_TRUE(server->bind().is_ok());
  if (!serve_returns(server.get(), std::chrono::seconds(10), true)) {
    server.release();
    FAIL() << "serve() after stop() did not return";
  }
}

}  // namespace
}  // namespace minfer::server
