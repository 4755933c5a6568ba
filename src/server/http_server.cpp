#include "server/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <deque>

#include <fmt/format.h>
#include <httplib.h>

#include "engine/conversation.h"
#include "server/chat_page.h"
#include "server/openai_api.h"

namespace minfer::server {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kJsonType = "application/json; charset=utf-8";
// How often a waiting handler looks at its client's connection.
constexpr auto kPollInterval = std::chrono::milliseconds(10);

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(e.to_json()), kJsonType);
}

ApiError api_error(int status, std::string message, std::string type, std::string code) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.code = std::move(code);
  return e;
}

// What every endpoint but / answers until the model is loaded.
ApiError model_loading() {
  return api_error(503, "[server] the model is still loading", "unavailable_error",
                   "model_loading");
}

// The connection a request came on, found by its peer address among this process's sockets:
// cpp-httplib 0.11 does not hand the socket to handlers, and a handler must notice a client that
// went away while it waits for tokens. -1 when not found.
int find_connection_socket(const std::string& remote_addr, int remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
      continue;
    }
    if (remote_addr == host && remote_port == std::atoi(port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

// False once the peer closed its end (or the socket failed). Never blocks.
bool connection_alive(int fd) {
  if (fd < 0) return true;
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return true;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return false;
  if ((p.revents & POLLIN) != 0) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n != 0;
  }
  return true;
}

}  // namespace

// One generation request between its handler thread and the scheduler thread.
struct HttpServer::Call {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<engine::RequestEvent> events;
  bool done = false;
  std::shared_ptr<engine::RequestHandle> handle;
  int fd = -1;
  Clock::time_point t_submit;
  Clock::time_point t_last_token;
  bool first_token = true;
  Clock::time_point t_alive_checked;  // when the handler last checked the client's connection
};

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
  http_->listen_after_bind();
}

void HttpServer::stop() {
  if (http_) http_->stop();
}

void HttpServer::set_backend(const Backend& backend) {
  backend_ = backend;
  metrics_.set_model_name(backend.model_name);
  ready_.store(true);
}

const Backend* HttpServer::ready_backend(httplib::Response& res) const {
  if (ready_.load()) return &backend_;
  send_error(res, model_loading());
  return nullptr;
}

std::shared_ptr<const grammar::VocabBytes> HttpServer::json_vocab(const Backend& backend) {
  std::lock_guard<std::mutex> lock(json_vocab_mu_);
  if (json_vocab_ == nullptr) json_vocab_ = grammar::VocabBytes::from_tokenizer(*backend.tokenizer);
  return json_vocab_;
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

void HttpServer::install_routes() {
  httplib::Server& http = *http_;
  const size_t n_threads = static_cast<size_t>(std::max(4, options_.n_http_threads));
  http.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  http.set_read_timeout(options_.read_timeout_s, 0);
  http.set_write_timeout(options_.write_timeout_s, 0);
  http.set_keep_alive_timeout(2);
  http.set_payload_max_length(options_.max_body_bytes);
  http.set_tcp_nodelay(true);

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path == "/" || req.path == "/health") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (req.get_header_value("Authorization") != "Bearer " + options_.api_key) {
      send_error(res, api_error(401,
                                "[server] missing or wrong API key: send 'Authorization: "
                                "Bearer KEY'",
                                "invalid_request_error", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Statuses cpp-httplib sets itself (404, 413, 400 for a bad request line) get an error body.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
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
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, api_error(500, "[server] internal error: " + what, "server_error", ""));
      });
  http.set_logger([this](const httplib::Request&, const httplib::Response& res) {
    metrics_.on_http_status(res.status);
  });

  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kChatPage, "text/html; charset=utf-8");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_backend(res) == nullptr) return;
    res.set_content(R"({"status":"ok"})", kJsonType);
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const Backend* b = ready_backend(res);
    if (b == nullptr) return;
    res.set_content(metrics_.format(b->scheduler->stats()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const Backend* b = ready_backend(res);
    if (b == nullptr) return;
    Json model{{"id", b->model_name},
               {"object", "model"},
               {"created", static_cast<int64_t>(std::time(nullptr))},
               {"owned_by", "minfer"},
               {"meta",
                {{"n_ctx", b->scheduler->options().n_ctx},
                 {"n_vocab", b->model->config().n_vocab},
                 {"n_parallel", b->scheduler->options().n_parallel}}}};
    res.set_content(dump(Json{{"object", "list"}, {"data", Json::array({model})}}), kJsonType);
  });

  auto parse_body = [](const httplib::Request& req, Json& body) -> std::optional<ApiError> {
    try {
      body = Json::parse(req.body);
    } catch (const Json::parse_error& e) {
      return bad_request(fmt::format("[server] the body is not valid JSON: {}", e.what()), "",
                         "invalid_json");
    }
    if (!body.is_object()) {
      return bad_request(
          fmt::format("[server] the body must be a JSON object, got {}", body.type_name()), "",
          "invalid_json");
    }
    return std::nullopt;
  };

  http.Post("/tokenize", [this, parse_body](const httplib::Request& req, httplib::Response& res) {
    const Backend* b = ready_backend(res);
    if (b == nullptr) return;
    Json body;
    if (auto e = parse_body(req, body)) return send_error(res, *e);
    auto content = body.find("content");
    if (content == body.end() || !content->is_string()) {
      return send_error(res, bad_request("[server] 'content' must be a string", "content"));
    }
    bool add_special = false;
    bool parse_special = true;
    bool with_pieces = false;
    for (auto [field, out] :
         {std::pair{"add_special", &add_special}, std::pair{"parse_special", &parse_special},
          std::pair{"with_pieces", &with_pieces}}) {
      if (auto it = body.find(field); it != body.end()) {
        if (!it->is_boolean()) {
          return send_error(
              res, bad_request(fmt::format("[server] '{}' must be a boolean", field), field));
        }
        *out = it->get<bool>();
      }
    }
    const std::vector<int32_t> ids =
        b->tokenizer->encode(content->get<std::string>(), add_special, parse_special);
    Json tokens = Json::array();
    for (const int32_t id : ids) {
      if (with_pieces) {
        tokens.push_back(Json{{"id", id}, {"piece", b->tokenizer->token_to_piece(id)}});
      } else {
        tokens.push_back(id);
      }
    }
    res.set_content(dump(Json{{"tokens", tokens}}), kJsonType);
  });
  http.Post("/detokenize", [this, parse_body](const httplib::Request& req, httplib::Response& res) {
    const Backend* b = ready_backend(res);
    if (b == nullptr) return;
    Json body;
    if (auto e = parse_body(req, body)) return send_error(res, *e);
    auto tokens = body.find("tokens");
    if (tokens == body.end() || !tokens->is_array()) {
      return send_error(res,
                        bad_request("[server] 'tokens' must be an array of token ids", "tokens"));
    }
    std::vector<int32_t> ids;
    for (const Json& t : *tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() >= b->tokenizer->n_vocab()) {
        return send_error(res, bad_request(fmt::format("[server] 'tokens' must hold token ids in "
                                                       "0..{}",
                                                       b->tokenizer->n_vocab() - 1),
                                           "tokens", "invalid_value"));
      }
      ids.push_back(t.get<int32_t>());
    }
    res.set_content(dump(Json{{"content", b->tokenizer->decode(ids)}}), kJsonType);
  });

  auto generate = [this, parse_body](const httplib::Request& req, httplib::Response& res,
                                     Endpoint endpoint) {
    const Backend* b = ready_backend(res);
    if (b == nullptr) return;
    if (draining_.load()) {
      return send_error(
          res, api_error(503, "[server] shutting down", "unavailable_error", "shutting_down"));
    }
    Json body;
    if (auto e = parse_body(req, body)) return send_error(res, *e);
    const int32_t n_vocab = static_cast<int32_t>(b->model->config().n_vocab);
    auto parsed = std::make_shared<ParsedRequest>();
    if (auto e = parse_request(body, endpoint, n_vocab, *parsed)) return send_error(res, *e);

    std::vector<int32_t> prompt;
    if (endpoint == Endpoint::kChat) {
      Json request = body;
      request["messages"] = parsed->messages;
      Result<std::string> text = b->chat_template->render_request(request);
      if (!text.is_ok()) {
        return send_error(
            res, bad_request("[server] the chat template failed: " + text.status().message(),
                             "messages", "template_error"));
      }
      prompt = engine::tokenize_chat_prompt(*b->tokenizer, text.value());
    } else if (parsed->prompt_is_ids) {
      prompt = parsed->prompt_ids;
    } else {
      prompt = b->tokenizer->encode(parsed->prompt_text, true, true);
    }
    const int64_t n_ctx = b->scheduler->options().n_ctx;
    if (prompt.empty()) {
      return send_error(res, bad_request("[server] the prompt has no tokens", "prompt"));
    }
    if (static_cast<int64_t>(prompt.size()) + 2 > n_ctx) {
      return send_error(
          res, bad_request(fmt::format("[server] the prompt is {} tokens but the context holds {} "
                                       "(leaving room for at least one generated token)",
                                       prompt.size(), n_ctx),
                           endpoint == Endpoint::kChat ? "messages" : "prompt",
                           "context_length_exceeded"));
    }
    parsed->params.prompt = std::move(prompt);
    if (parsed->json_object) {
      // Each request gets its own recognizer state over the shared token bytes.
      parsed->params.constraint = std::make_shared<grammar::JsonConstraint>(json_vocab(*b));
    }

    auto call = std::make_shared<Call>();
    auto sink = [this, call](engine::RequestEvent&& event) {
      const auto now = Clock::now();
      std::lock_guard<std::mutex> lock(call->mu);
      if (!event.tokens.empty()) {
        if (call->first_token) {
          metrics_.on_first_token(std::chrono::duration<double>(now - call->t_submit).count());
        } else {
          metrics_.on_output_token(std::chrono::duration<double>(now - call->t_last_token).count());
        }
        call->first_token = false;
        call->t_last_token = now;
      }
      if (event.done) {
        metrics_.on_request_done(event.stats, event.finish == engine::FinishReason::kCancelled
                                                  ? "abort"
                                                  : openai_finish_reason(event.finish));
        call->done = true;
      }
      call->events.push_back(std::move(event));
      call->cv.notify_all();
    };
    call->t_submit = Clock::now();
    Result<std::shared_ptr<engine::RequestHandle>> handle =
        b->scheduler->submit(parsed->params, sink);
    if (!handle.is_ok()) {
      if (handle.status().code() == ErrorCode::kResourceExhausted) {
        return send_error(
            res, api_error(503, handle.status().message(), "server_overloaded", "queue_full"));
      }
      return send_error(res, bad_request(handle.status().message()));
    }
    call->handle = handle.value();
    call->fd = find_connection_socket(req.remote_addr, req.remote_port);
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      in_flight_.insert(call->handle);
    }
    auto release = [this, call](bool) {
      call->handle->cancel();  // no-op once finished
      std::lock_guard<std::mutex> lock(calls_mu_);
      in_flight_.erase(call->handle);
    };

    const std::string id = fmt::format("{}-{:x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                                       next_id_.fetch_add(1));
    const int64_t created = static_cast<int64_t>(std::time(nullptr));
    const std::string model_name = b->model_name;
    const Tokenizer* tokenizer = b->tokenizer;

    // Takes the events that arrived (waiting up to one poll interval); false when the client left.
    // The connection is checked at least once a poll interval even while tokens keep coming: a
    // fast model never leaves the queue empty, and a departed client's request ran to the end.
    auto take_events = [call](std::deque<engine::RequestEvent>& out) {
      std::unique_lock<std::mutex> lock(call->mu);
      call->cv.wait_for(lock, kPollInterval, [&] { return !call->events.empty(); });
      out.swap(call->events);
      lock.unlock();
      const Clock::time_point now = Clock::now();
      if (out.empty() || now - call->t_alive_checked >= kPollInterval) {
        call->t_alive_checked = now;
        if (!connection_alive(call->fd)) {
          call->handle->cancel();
          return false;
        }
      }
      return true;
    };

    if (!parsed->stream) {
      std::string text;
      std::vector<engine::SampledToken> tokens;
      engine::RequestEvent final_event;
      bool done = false;
      while (!done) {
        std::deque<engine::RequestEvent> events;
        take_events(events);  // a departed client is cancelled; its final event still comes
        for (engine::RequestEvent& e : events) {
          text += e.text;
          tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
          if (e.done) {
            final_event = std::move(e);
            done = true;
          }
        }
      }
      release(true);
      if (!final_event.error.is_ok()) {
        return send_error(res, api_error(500, final_event.error.message(), "server_error", ""));
      }
      Json choice;
      choice["index"] = 0;
      if (endpoint == Endpoint::kChat) {
        choice["message"] = Json{{"role", "assistant"}, {"content", text}};
        choice["logprobs"] = parsed->logprobs ? chat_logprobs_json(*tokenizer, tokens) : Json();
      } else {
        choice["text"] = text;
        choice["logprobs"] =
            parsed->logprobs ? completion_logprobs_json(*tokenizer, tokens, 0) : Json();
      }
      choice["finish_reason"] = openai_finish_reason(final_event.finish);
      Json out{{"id", id},
               {"object", endpoint == Endpoint::kChat ? "chat.completion" : "text_completion"},
               {"created", created},
               {"model", model_name},
               {"system_fingerprint", "minfer"},
               {"choices", Json::array({choice})},
               {"usage", usage_json(final_event.stats)}};
      res.set_content(dump(out), kJsonType);
      return;
    }

    // Streaming: server-sent events, one chunk per piece of text, then the finish reason, the
    // usage when asked, and [DONE].
    auto state = std::make_shared<bool>(false);  // the role chunk went out
    auto text_offset = std::make_shared<int64_t>(0);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [=](size_t, httplib::DataSink& out) {
          auto chunk = [&](Json delta_or_text, const Json& logprobs, const Json& finish) {
            Json choice;
            choice["index"] = 0;
            if (endpoint == Endpoint::kChat) {
              choice["delta"] = std::move(delta_or_text);
            } else {
              choice["text"] = std::move(delta_or_text);
            }
            choice["logprobs"] = logprobs;
            choice["finish_reason"] = finish;
            Json c{{"id", id},
                   {"object",
                    endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
                   {"created", created},
                   {"model", model_name},
                   {"system_fingerprint", "minfer"},
                   {"choices", Json::array({choice})}};
            if (parsed->include_usage) c["usage"] = nullptr;
            return c;
          };
          auto send = [&](const Json& j) {
            const std::string line = "data: " + dump(j) + "\n\n";
            return out.write(line.data(), line.size());
          };
          if (endpoint == Endpoint::kChat && !*state) {
            *state = true;
            if (!send(chunk(Json{{"role", "assistant"}, {"content", ""}}, Json(), Json()))) {
              call->handle->cancel();
              return false;
            }
          }
          std::deque<engine::RequestEvent> events;
          if (!take_events(events)) return false;
          for (engine::RequestEvent& e : events) {
            if (!e.text.empty() || (parsed->logprobs && !e.tokens.empty())) {
              Json logprobs;
              if (parsed->logprobs) {
                logprobs = endpoint == Endpoint::kChat
                               ? chat_logprobs_json(*tokenizer, e.tokens)
                               : completion_logprobs_json(*tokenizer, e.tokens, *text_offset);
              }
              *text_offset += static_cast<int64_t>(e.text.size());
              Json piece = endpoint == Endpoint::kChat ? Json{{"content", e.text}} : Json(e.text);
              if (!send(chunk(piece, logprobs, Json()))) {
                call->handle->cancel();
                return false;
              }
            }
            if (!e.done) continue;
            if (!e.error.is_ok()) {
              send(ApiError{500, e.error.message(), "server_error", "", ""}.to_json());
            } else {
              send(chunk(endpoint == Endpoint::kChat ? Json::object() : Json(""), Json(),
                         openai_finish_reason(e.finish)));
              if (parsed->include_usage) {
                Json u = chunk(Json(), Json(), Json());
                u["choices"] = Json::array();
                u["usage"] = usage_json(e.stats);
                send(u);
              }
            }
            const std::string end = "data: [DONE]\n\n";
            out.write(end.data(), end.size());
            out.done();
            return true;
          }
          return true;
        },
        release);
  };
  http.Post("/v1/chat/completions",
            [generate](const httplib::Request& req, httplib::Response& res) {
              generate(req, res, Endpoint::kChat);
            });
  http.Post("/v1/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Endpoint::kCompletion);
  });
  // llama.cpp's paths for the same endpoints.
  http.Post("/chat/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Endpoint::kChat);
  });
  http.Post("/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Endpoint::kCompletion);
  });
}

}  // namespace minfer::server
