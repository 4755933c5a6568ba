// The OpenAI-compatible HTTP server (DESIGN.md §4 "Server"): the endpoints, auth, validation to
// OpenAI error JSON, streaming (SSE), metrics and draining, over the event-driven connection layer
// of server/http_transport.h (deadlines, connection limit, slow readers dropped).
// It is a client of the public API (include/minfer/minfer.h): requests become BatchGenerator
// requests, events become responses.
//
//   HttpServer server(options);
//   server.bind();                       // the port is taken; /health answers 503
//   std::thread t([&] { server.serve(); });
//   server.set_backend(backend);         // the model is loaded; /health answers 200
//   server.set_registry(&registry);      // or: many models by name (server/model_registry.h)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/input_limits.h"
#include "core/non_copyable.h"
#include "core/status.h"
#include "minfer/minfer.h"
#include "server/http_message.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/openai_api.h"

namespace minfer::server {

class ModelRegistry;
struct WireApi;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                                // 0: any free port (see port())
  std::string api_key;                            // empty: no authentication
  size_t max_body_bytes = limits::kMaxBodyBytes;  // larger bodies get 413
  int read_timeout_s = 10;       // deadline for a request's head, and again for its body
  int write_timeout_s = 10;      // a client that stops reading is dropped after it
  int keep_alive_timeout_s = 5;  // an idle kept-alive connection is closed after it
  int max_connections = 4096;    // past it new connections are closed at once
  int n_http_threads = 64;       // requests handled at once (the rest wait their turn)
  // Bytes of request bodies held at once across connections (at least max_body_bytes); a body
  // that would pass it gets 503 server_busy.
  size_t max_body_bytes_total = 256u << 20;
  // Bytes of a streamed reply that may wait for a slow client; past it the client is dropped
  // and its request cancelled.
  size_t max_stream_queue_bytes = 1u << 20;
  // Origins a browser page may call from (CORS); empty: any origin, without credentials.
  std::vector<std::string> cors_origins;
  // Chat replies: "deepseek" puts <think>…</think> into reasoning_content, "none" leaves it in
  // content (a request's reasoning_format overrides); < 0: unlimited reasoning tokens, else the
  // engine closes the block after that many (0: none, and enable_thinking false for the template).
  std::string reasoning_format = "deepseek";
  int32_t reasoning_budget = -1;
  // Folder of POST /slots/{id}?action=save|restore files; empty: slot actions are refused (501).
  std::string slot_save_path;
  // GET /slots (serve --slots): every slot's state; off: 501.
  bool slots_endpoint = false;
  // serve --context-shift / --keep N: requests go on past a full context (GenerateParams::
  // context_shift), keeping their first `keep` tokens; -2: the chat's rendered system prompt
  // (none for a completion), -1: the whole prompt.
  bool context_shift = false;
  int64_t keep = -2;
  // serve --spec-ngram N, --draft-max, --draft-min: the requests' speculative decoding by prompt
  // lookup unless they say otherwise (GenerateParams::spec_ngram; 0: off).
  int32_t spec_ngram = 0;
  int32_t draft_max = 16;
  int32_t draft_min = 0;
  // serve --draft-p-min (with -md): the draft model stops before a token below this probability
  // (GenerateParams::draft_p_min; a request's speculative.p_min overrides).
  float draft_p_min = 0.0f;
  // serve --embeddings: POST /v1/embeddings for any model (an embedding model serves it anyway).
  bool embeddings = false;
  // serve --rerank: POST /v1/rerank (and /rerank, /v1/reranking) with the model's reranker.
  bool rerank = false;
};

// What the server serves once the model is loaded; every pointer outlives the server. What it
// needs to know of the model (context, vocabulary size) it asks these.
struct Backend {
  const LanguageModel* model = nullptr;  // tokenizer, chat template
  BatchGenerator* generator = nullptr;   // runs the requests
  Embedder* embedder = nullptr;  // POST /v1/embeddings; null: not enabled (serve --embeddings)
  Reranker* reranker = nullptr;  // POST /v1/rerank; null: not enabled (serve --rerank)
  std::string model_name;
  // GBNF for requests that name no grammar and no JSON response_format (serve --grammar).
  std::string default_grammar;
};

// A backend held for one request: a model of a registry stays loaded while it lives.
using BackendRef = std::shared_ptr<const Backend>;

class HttpServer : NonCopyable {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();

  // Takes the port. Error: the address is in use or invalid.
  Status bind();
  int port() const { return transport_.port(); }
  // Serves until stop(); call after bind(). Returns at once after a stop().
  void serve();
  // From now on /health is 200 and generation requests run.
  void set_backend(const Backend& backend);
  // Instead of set_backend: a request's `model` picks one of the registry's models (the first
  // when it names none), loaded on first use; /models/load and /models/unload control them.
  // The registry outlives the server's requests.
  void set_registry(ModelRegistry* registry);
  // New generation requests and /health get 503; requests in flight go on.
  void begin_drain();
  // Requests running or waiting (generation endpoints).
  int64_t n_in_flight() const;
  // Cancels every request in flight (they end within a scheduler step).
  void cancel_all();
  // Stops accepting and makes serve() return once connections are done.
  void stop();

  // Runs one request through the dispatch a connection's requests go through (CORS, the API key,
  // the route's handler, an error body, the status counted), on the calling thread and with no
  // socket: the seam of the request fuzzer (fuzz/request_fuzz.cpp). `req` needs its method,
  // path, query params and body (what the transport parses); a streamed reply is left in
  // res.stream for the caller to drive (and res.stream_ended to call once it is over).
  void handle(HttpRequest& req, HttpResponse& res) { dispatch(req, res); }

  Metrics& metrics() { return metrics_; }
  // Connections open now.
  int n_connections() const { return transport_.n_connections(); }

 private:
  using Handler = void (HttpServer::*)(const HttpRequest&, HttpResponse&);
  struct Route {
    const char* method;
    const char* pattern;  // the whole path; "(\d+)" in it matches digits (a group)
    Handler handler;
  };
  void install_routes();
  // Every request (on a worker): CORS, the API key, its route's handler, an error body for an
  // error status without one, the status counted.
  void dispatch(HttpRequest& req, HttpResponse& res);
  // The API key, when one is set: false (and 401 answered) when the request lacks it.
  bool authorized(const HttpRequest& req, HttpResponse& res) const;
  // The request's route; 404 when none.
  void route(HttpRequest& req, HttpResponse& res);
  // CORS: the Access-Control headers for the request's Origin, when it may call; true when the
  // request was a preflight (OPTIONS), answered here.
  bool answer_cors(const HttpRequest& req, HttpResponse& res) const;

  // One handler per route (server/routes_info.cpp, server/routes_generate.cpp).
  void handle_page(const HttpRequest& req, HttpResponse& res);
  // GET /static/...: the page's files (server/chat_page.h), with an ETag.
  void handle_static(const HttpRequest& req, HttpResponse& res);
  void handle_health(const HttpRequest& req, HttpResponse& res);
  void handle_metrics(const HttpRequest& req, HttpResponse& res);
  void handle_models(const HttpRequest& req, HttpResponse& res);
  // server/routes_models.cpp: the registry's models, and loading or unloading one.
  void list_registry_models(HttpResponse& res);
  void handle_models_load(const HttpRequest& req, HttpResponse& res);
  void handle_models_unload(const HttpRequest& req, HttpResponse& res);
  void handle_tokenize(const HttpRequest& req, HttpResponse& res);
  void handle_detokenize(const HttpRequest& req, HttpResponse& res);
  // llama-server's /props (GET; ?model=NAME with a registry) and /apply-template.
  void handle_props(const HttpRequest& req, HttpResponse& res);
  void handle_apply_template(const HttpRequest& req, HttpResponse& res);
  void handle_chat_completions(const HttpRequest& req, HttpResponse& res);
  void handle_completions(const HttpRequest& req, HttpResponse& res);
  // server/routes_slots.cpp: POST /slots/{id}?action=save|restore|erase.
  void handle_slots(const HttpRequest& req, HttpResponse& res);
  // GET /slots: each slot's state (ServerOptions::slots_endpoint).
  void handle_slots_list(const HttpRequest& req, HttpResponse& res);
  // Both generation endpoints: parse, build the prompt, submit, hand the reply to its writer.
  void generate(const HttpRequest& req, HttpResponse& res, Endpoint endpoint);
  // The same for another API over the chat path (server/wire_format.h), and the prompt tokens
  // of its request ({"input_tokens": n}).
  void generate_as(const HttpRequest& req, HttpResponse& res, Endpoint endpoint,
                   const WireApi& api);
  void count_prompt_tokens(const HttpRequest& req, HttpResponse& res, const WireApi& api);
  // server/routes_compat.cpp: Anthropic's /v1/messages (and count_tokens), OpenAI's
  // /v1/responses.
  void handle_messages(const HttpRequest& req, HttpResponse& res);
  void handle_count_tokens(const HttpRequest& req, HttpResponse& res);
  void handle_responses(const HttpRequest& req, HttpResponse& res);
  // server/routes_embeddings.cpp: POST /v1/embeddings.
  void handle_embeddings(const HttpRequest& req, HttpResponse& res);
  // server/routes_rerank.cpp: POST /v1/rerank, /rerank, /v1/reranking.
  void handle_rerank(const HttpRequest& req, HttpResponse& res);

  // The backend once the model is loaded; until then answers res with 503 model_loading and
  // gives nullptr. With a registry: the model `body` names (its first without a body or a
  // `model`), loaded if needed; an unknown name answers 404 model_not_found.
  BackendRef ready_backend(HttpResponse& res, const Json* body = nullptr) const;
  // The same, with the request's JSON body parsed into `body` (a bad body answers 400 and gives
  // nullptr).
  BackendRef ready_backend_with_body(const HttpRequest& req, HttpResponse& res, Json& body) const;
  // ready_backend with a registry.
  BackendRef registry_backend(HttpResponse& res, const Json* body) const;
  // Requests in flight, for n_in_flight() and cancel_all().
  void track(const std::shared_ptr<RequestHandle>& handle);
  void untrack(const std::shared_ptr<RequestHandle>& handle);

  ServerOptions options_;
  Metrics metrics_;
  std::vector<Route> routes_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  Backend backend_;
  ModelRegistry* registry_ = nullptr;
  mutable std::mutex calls_mu_;
  std::set<std::shared_ptr<RequestHandle>> in_flight_;
  std::atomic<int64_t> next_id_{1};
  HttpTransport transport_;  // last: its workers run the handlers above until it is gone
};

}  // namespace minfer::server
