#include "server/http_server.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "server/anthropic_api.h"
#include "server/http_io.h"

namespace minfer::server {

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()), metrics_("") {
  install_routes();
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) {
      return make_error(ErrorCode::kIo, "[server] cannot listen on {} (any port)", options_.host);
    }
    return Status::ok();
  }
  if (!http_->bind_to_port(options_.host, options_.port)) {
    return make_error(ErrorCode::kIo, "[server] cannot listen on {}:{} (in use or not an address)",
                      options_.host, options_.port);
  }
  port_ = options_.port;
  return Status::ok();
}

void HttpServer::serve() {
  serving_.store(true);
  if (!stop_requested_.load()) http_->listen_after_bind();
  serving_.store(false);
}

void HttpServer::stop() {
  if (!http_) return;
  stop_requested_.store(true);
  // cpp-httplib's stop() does nothing before its listen loop runs: a stop() right after serve()
  // began (a model that fails to load at once) was lost and serve() never returned. Either
  // serve() sees stop_requested_ and does not listen, or this sees serving_ and waits for the
  // loop to run before stopping it.
  while (serving_.load() && !http_->is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  http_->stop();
}

void HttpServer::set_backend(const Backend& backend) {
  backend_ = backend;
  metrics_.set_model_name(backend.model_name);
  ready_.store(true);
}

void HttpServer::set_registry(ModelRegistry* registry) {
  registry_ = registry;
  ready_.store(true);
}

BackendRef HttpServer::ready_backend_with_body(const httplib::Request& req, httplib::Response& res,
                                               Json& body) const {
  if (!ready_.load()) return ready_backend(res);
  if (auto e = parse_body(req, body)) {
    send_error(res, *e);
    return nullptr;
  }
  return ready_backend(res, &body);
}

BackendRef HttpServer::ready_backend(httplib::Response& res, const Json* body) const {
  if (!ready_.load()) {
    send_error(res, model_loading());
    return nullptr;
  }
  if (registry_ != nullptr) return registry_backend(res, body);
  return BackendRef(&backend_, [](const Backend*) {});  // lives as long as the server
}

void HttpServer::begin_drain() {
  draining_.store(true);
}

int64_t HttpServer::n_in_flight() const {
  std::lock_guard<std::mutex> lock(calls_mu_);
  return static_cast<int64_t>(in_flight_.size());
}

void HttpServer::cancel_all() {
  std::lock_guard<std::mutex> lock(calls_mu_);
  for (const auto& h : in_flight_) h->cancel();
}

void HttpServer::track(const std::shared_ptr<RequestHandle>& handle) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  in_flight_.insert(handle);
}

void HttpServer::untrack(const std::shared_ptr<RequestHandle>& handle) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  in_flight_.erase(handle);
}

void HttpServer::install_routes() {
  configure_connections();
  install_hooks();
  using Handler = void (HttpServer::*)(const httplib::Request&, httplib::Response&);
  struct Route {
    bool post;
    const char* path;
    Handler handler;
  };
  const Route routes[] = {
      {false, "/", &HttpServer::handle_page},
      {false, "/health", &HttpServer::handle_health},
      {false, "/metrics", &HttpServer::handle_metrics},
      {false, "/v1/models", &HttpServer::handle_models},
      {true, "/models/load", &HttpServer::handle_models_load},
      {true, "/models/unload", &HttpServer::handle_models_unload},
      {true, "/tokenize", &HttpServer::handle_tokenize},
      {true, "/detokenize", &HttpServer::handle_detokenize},
      {false, "/props", &HttpServer::handle_props},
      {true, "/apply-template", &HttpServer::handle_apply_template},
      {true, "/v1/chat/completions", &HttpServer::handle_chat_completions},
      {true, "/v1/completions", &HttpServer::handle_completions},
      // llama.cpp's paths for the same endpoints.
      {true, "/chat/completions", &HttpServer::handle_chat_completions},
      {true, "/completions", &HttpServer::handle_completions},
      {true, R"(/slots/(\d+))", &HttpServer::handle_slots},
      {false, "/slots", &HttpServer::handle_slots_list},
      {true, "/v1/messages", &HttpServer::handle_messages},
      {true, "/v1/messages/count_tokens", &HttpServer::handle_count_tokens},
      {true, "/v1/responses", &HttpServer::handle_responses},
  };
  for (const Route& route : routes) {
    auto handler = [this, h = route.handler](const httplib::Request& req, httplib::Response& res) {
      (this->*h)(req, res);
    };
    if (route.post) {
      http_->Post(route.path, handler);
    } else {
      http_->Get(route.path, handler);
    }
  }
}

void HttpServer::configure_connections() {
  httplib::Server& http = *http_;
  const size_t n_threads = static_cast<size_t>(std::max(4, options_.n_http_threads));
  http.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  http.set_read_timeout(options_.read_timeout_s, 0);
  http.set_write_timeout(options_.write_timeout_s, 0);
  http.set_keep_alive_timeout(2);
  http.set_payload_max_length(options_.max_body_bytes);
  http.set_tcp_nodelay(true);
}

namespace {

// Statuses cpp-httplib sets itself (404, 413, 400 for a bad request line) get an error body.
void answer_http_error(const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return;
  std::string message = fmt::format("[server] HTTP {}", res.status);
  std::string code;
  if (res.status == 404) {
    message = fmt::format("[server] no such endpoint: {} {}", req.method, req.path);
    code = "not_found";
  } else if (res.status == 413) {
    message = "[server] request body too large";
    code = "payload_too_large";
  } else if (res.status == 405) {
    message = fmt::format("[server] method {} not allowed on {}", req.method, req.path);
  }
  send_error(res, api_error(res.status, message,
                            res.status >= 500 ? "server_error" : "invalid_request_error", code));
}

void answer_exception(const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
  std::string what = "unknown exception";
  try {
    if (ep) std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  send_error(res, api_error(500, "[server] internal error: " + what, "server_error", ""));
}

}  // namespace

bool HttpServer::answer_cors(const httplib::Request& req, httplib::Response& res) const {
  const std::string origin = req.get_header_value("Origin");
  const bool any = options_.cors_origins.empty();
  const bool allowed = !origin.empty() &&
                       (any || std::find(options_.cors_origins.begin(), options_.cors_origins.end(),
                                         origin) != options_.cors_origins.end());
  if (allowed) {
    // Any origin: "*", which browsers honour only for requests without credentials (cookies);
    // a listed origin is echoed, and may send them.
    res.set_header("Access-Control-Allow-Origin", any ? std::string("*") : origin);
    if (!any) {
      res.set_header("Access-Control-Allow-Credentials", "true");
      res.set_header("Vary", "Origin");
    }
    res.set_header("Access-Control-Expose-Headers", "X-Minfer-Seed");
  }
  if (req.method != "OPTIONS") return false;
  if (!allowed && !origin.empty()) {
    send_error(res, api_error(403,
                              fmt::format("[server] origin '{}' may not call this server (see "
                                          "--cors-origin)",
                                          origin),
                              "invalid_request_error", "cors_origin_not_allowed"));
    return true;
  }
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.set_header("Access-Control-Allow-Headers",
                 "Authorization, Content-Type, X-Api-Key, Anthropic-Version");
  res.set_header("Access-Control-Max-Age", "86400");
  return true;
}

void HttpServer::install_hooks() {
  // Every endpoint but the page and /health needs the API key, when one is set; a CORS preflight
  // (which carries no key) is answered before.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (answer_cors(req, res)) return httplib::Server::HandlerResponse::Handled;
    if (options_.api_key.empty() || req.path == "/" || req.path == "/health") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // Anthropic's clients send the key as x-api-key.
    if (req.get_header_value("Authorization") != "Bearer " + options_.api_key &&
        req.get_header_value("x-api-key") != options_.api_key) {
      send_error(res, api_error(401,
                                "[server] missing or wrong API key: send 'Authorization: "
                                "Bearer KEY' or 'x-api-key: KEY'",
                                "invalid_request_error", "invalid_api_key"));
      if (req.path.rfind("/v1/messages", 0) == 0) {
        res.set_content(anthropic_error_body(res.status, res.body), kJsonType);
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_error_handler(answer_http_error);
  http_->set_exception_handler(answer_exception);
  http_->set_logger([this](const httplib::Request&, const httplib::Response& res) {
    metrics_.on_http_status(res.status);
  });
}

}  // namespace minfer::server
