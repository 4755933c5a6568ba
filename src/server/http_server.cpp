#include "server/http_server.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "server/anthropic_api.h"
#include "server/chat_page.h"
#include "server/http_io.h"

namespace minfer::server {

namespace {

TransportOptions transport_options(const ServerOptions& o) {
  return TransportOptions{.max_body_bytes = o.max_body_bytes,
                          .read_timeout_s = o.read_timeout_s,
                          .write_timeout_s = o.write_timeout_s,
                          .keep_alive_timeout_s = o.keep_alive_timeout_s,
                          .max_connections = o.max_connections,
                          .n_threads = std::max(4, o.n_http_threads),
                          .max_body_bytes_total = o.max_body_bytes_total,
                          .max_stream_queue_bytes = o.max_stream_queue_bytes};
}

// A body the transport refused because the bodies held at once would pass their total.
void answer_bodies_full(HttpResponse& res, size_t max_total) {
  send_error(res, api_error(503,
                            fmt::format("[server] request bodies held at once would pass "
                                        "--max-body-total ({} bytes); retry shortly",
                                        max_total),
                            "server_overloaded", "server_busy"));
  res.set_header("Retry-After", "1");
}

// Error statuses without a body (404 from routing, 400 and 413 from the transport) get one;
// `max_body_bytes`: the limit a 413 names.
void answer_http_error(const HttpRequest& req, HttpResponse& res, size_t max_body_bytes) {
  if (!res.body.empty()) return;
  std::string message = fmt::format("[server] HTTP {}", res.status);
  std::string code;
  if (res.status == 404) {
    message = fmt::format("[server] no such endpoint: {} {}", req.method, req.path);
    code = "not_found";
  } else if (res.status == 413) {
    message = fmt::format("[server] the request body is over the limit of {} bytes (--max-body)",
                          max_body_bytes);
    code = "payload_too_large";
  } else if (res.status == 405) {
    message = fmt::format("[server] method {} not allowed on {}", req.method, req.path);
  }
  send_error(res, api_error(res.status, message,
                            res.status >= 500 ? "server_error" : "invalid_request_error", code));
}

void answer_exception(HttpResponse& res, std::exception_ptr ep) {
  std::string what = "unknown exception";
  try {
    if (ep) std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (res.stream_ended) res.stream_ended();
  res = HttpResponse();
  send_error(res, api_error(500, "[server] internal error: " + what, "server_error", ""));
}

// Whether `path` is `pattern`, a literal path in which "(\d+)" stands for one or more digits;
// `groups`: the path, then each group's digits. (No std::regex: a route table is this simple.)
bool match_path(std::string_view pattern, std::string_view path, std::vector<std::string>& groups) {
  constexpr std::string_view kDigits = R"((\d+))";
  groups.assign(1, std::string(path));
  while (true) {
    const size_t at = pattern.find(kDigits);
    const std::string_view literal = pattern.substr(0, at);
    if (path.substr(0, literal.size()) != literal) return false;
    path.remove_prefix(literal.size());
    if (at == std::string_view::npos) return path.empty();
    pattern.remove_prefix(at + kDigits.size());
    size_t n = 0;
    while (n < path.size() && path[n] >= '0' && path[n] <= '9') ++n;
    if (n == 0) return false;
    groups.emplace_back(path.substr(0, n));
    path.remove_prefix(n);
  }
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)),
      metrics_(""),
      transport_(
          transport_options(options_),
          TransportHandlers{[this](HttpRequest& req, HttpResponse& res) { dispatch(req, res); },
                            [this](const HttpRequest& req, HttpResponse& res) {
                              if (res.status == 503) {
                                answer_bodies_full(res, std::max(options_.max_body_bytes_total,
                                                                 options_.max_body_bytes));
                              }
                              answer_http_error(req, res, options_.max_body_bytes);
                              metrics_.on_http_status(res.status);
                            }}) {
  install_routes();
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::bind() {
  return transport_.bind(options_.host, options_.port);
}

void HttpServer::serve() {
  transport_.serve();
}

void HttpServer::stop() {
  transport_.stop();
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

BackendRef HttpServer::ready_backend_with_body(const HttpRequest& req, HttpResponse& res,
                                               Json& body) const {
  if (!ready_.load()) return ready_backend(res);
  if (auto e = parse_body(req, body)) {
    send_error(res, *e);
    return nullptr;
  }
  return ready_backend(res, &body);
}

BackendRef HttpServer::ready_backend(HttpResponse& res, const Json* body) const {
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
  const struct {
    bool post;
    const char* path;
    Handler handler;
  } routes[] = {
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
      {true, "/v1/embeddings", &HttpServer::handle_embeddings},
      {true, "/embeddings", &HttpServer::handle_embeddings},
      {true, "/v1/rerank", &HttpServer::handle_rerank},
      {true, "/rerank", &HttpServer::handle_rerank},
      {true, "/v1/reranking", &HttpServer::handle_rerank},
  };
  for (const auto& r : routes) {
    routes_.push_back(Route{r.post ? "POST" : "GET", r.path, r.handler});
  }
  // The chat page's files, each at its own path (server/chat_page.h).
  for (size_t i = 0; i < kWebAssetCount; ++i) {
    routes_.push_back(Route{"GET", kWebAssets[i].path, &HttpServer::handle_static});
  }
}

void HttpServer::route(HttpRequest& req, HttpResponse& res) {
  // HEAD is GET without the body (the transport leaves it out).
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const Route& r : routes_) {
    if (r.method != method || !match_path(r.pattern, req.path, req.matches)) continue;
    return (this->*r.handler)(req, res);
  }
  res.status = 404;
}

bool HttpServer::answer_cors(const HttpRequest& req, HttpResponse& res) const {
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

bool HttpServer::authorized(const HttpRequest& req, HttpResponse& res) const {
  // Every endpoint but the page (and its /static/ files) and /health needs the API key, when one
  // is set; a CORS preflight (which carries no key) is answered before.
  if (options_.api_key.empty() || req.path == "/" || req.path == "/health" ||
      req.path.rfind("/static/", 0) == 0) {
    return true;
  }
  // Anthropic's clients send the key as x-api-key.
  if (req.get_header_value("Authorization") == "Bearer " + options_.api_key ||
      req.get_header_value("x-api-key") == options_.api_key) {
    return true;
  }
  send_error(res, api_error(401,
                            "[server] missing or wrong API key: send 'Authorization: "
                            "Bearer KEY' or 'x-api-key: KEY'",
                            "invalid_request_error", "invalid_api_key"));
  if (req.path.rfind("/v1/messages", 0) == 0) {
    res.set_content(anthropic_error_body(res.status, res.body), kJsonType);
  }
  return false;
}

void HttpServer::dispatch(HttpRequest& req, HttpResponse& res) {
  try {
    if (!answer_cors(req, res) && authorized(req, res)) route(req, res);
  } catch (...) {
    answer_exception(res, std::current_exception());
  }
  if (res.status >= 400) answer_http_error(req, res, options_.max_body_bytes);
  metrics_.on_http_status(res.status);
}

}  // namespace minfer::server
