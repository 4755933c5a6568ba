// minfer viz: serves the pipeline viewer (web/viz.html) with a trace and a graph dump, so a
// browser opened at the printed address shows them without picking files.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "commands.h"
#include "core/status.h"
#include "server/viz_page.h"

namespace minfer::app {

namespace {

struct VizOptions {
  std::string host = "127.0.0.1";
  int port = 8090;
  std::string trace;
  std::string graph;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "[viz] cannot read '{}'", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status run_viz(const VizOptions& o) {
  // Read both files up front: a missing file is an error before anything listens.
  std::string trace, graph;
  if (!o.trace.empty()) {
    MINFER_ASSIGN_OR_RETURN(trace, read_text(o.trace));
  }
  if (!o.graph.empty()) {
    MINFER_ASSIGN_OR_RETURN(graph, read_text(o.graph));
  }

  // SIGINT / SIGTERM end the server: blocked here, awaited by a watcher thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  httplib::Server server;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(server::kVizPage, "text/html; charset=utf-8");
  });
  auto serve_file = [&server](const char* route, const std::string& text, const char* type) {
    server.Get(route, [&text, type](const httplib::Request&, httplib::Response& res) {
      if (text.empty()) {
        res.status = 404;
        return;
      }
      res.set_content(text, type);
    });
  };
  serve_file("/trace.jsonl", trace, "application/x-ndjson");
  serve_file("/graph.json", graph, "application/json");

  const int port = o.port == 0 ? server.bind_to_any_port(o.host)
                               : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) {
    return make_error(ErrorCode::kIo, "[viz] cannot listen on {}:{}", o.host, o.port);
  }
  std::printf("viz: http://%s:%d/\n", o.host.c_str(), port);
  std::fflush(stdout);
  std::thread watcher([&server, &signals]() {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop();
  });
  server.listen_after_bind();
  // listen_after_bind returns only after stop(): the watcher has already been woken.
  watcher.join();
  return Status::ok();
}

}  // namespace

void register_viz_command(CLI::App& app, CommandRegistry& registry) {
  auto opts = std::make_shared<VizOptions>();
  CLI::App* cmd =
      app.add_subcommand("viz", "Serve the pipeline viewer with a trace and a graph dump");
  cmd->add_option("--host", opts->host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", opts->port, "port (default 8090; 0: any free port)");
  cmd->add_option("--trace", opts->trace, "trace file from --trace / MINFER_TRACE");
  cmd->add_option("--graph", opts->graph, "graph dump from --dump-graph FILE.json");
  registry.add_status(cmd, [opts]() { return run_viz(*opts); });
}

}  // namespace minfer::app
