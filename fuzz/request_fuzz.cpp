// libFuzzer target for the server's request path without sockets: request bytes go through
// HttpServer::handle (the dispatch a connection's requests take: CORS, the API key, the route
// table, the handlers, error bodies) to reply bytes, on three tiny models of ../shared/models
// (MINFER_FUZZ_MODELS) whose batch generators really step (their own scheduler threads, as under
// `minfer serve`).
//
// Input (fuzz/request_fuzz_input.h): one or more requests separated by NUL bytes, each three
// header bytes (route, model, server options) and the body as the client sent it.
// Requests of one input run in order on the same servers, so a slot saved by one can be
// restored by the next. Every input ends with its slots erased and the slot folder emptied, so
// the next starts as the first did (but for the prefix cache, which changes no reply).
//
// Caps, so that an input stays well under a second of generation: each generator has 2
// sequences of kCtx positions (a longer prompt is a 400; without context shift a reply ends at
// the context's end) and one thread, and the input's clients "disconnect" kGenerationBudget after
// it began (their ConnectionStates close, as the transport's do when a socket goes): what is
// still generating is cancelled within a scheduler step, and a request that comes later is parsed,
// checked and submitted, then cancelled at once. The embedders take inputs of at most kCtx tokens.
// Parsing, template rendering and grammar compiling are not cut: they are bounded by their own
// budgets, and the fuzzer's -timeout catches them when they are not.
//
// Properties checked on every request:
//  - nothing crashes, leaks or trips a sanitizer;
//  - no exception reaches the dispatch (its "[server] internal error" 500) or leaves a stream's
//    producer;
//  - a JSON reply parses; one with an error status carries an error object; every SSE frame's
//    data is JSON or [DONE];
//  - once the input's replies are over, no request is in flight on any server, and after the
//    slots are erased no KV block is held by a sequence.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"
#include "request_fuzz_input.h"
#include "server/http_message.h"
#include "server/http_server.h"

namespace {

namespace fs = std::filesystem;
using minfer::fuzz::kModelCount;
using minfer::fuzz::kModels;
using minfer::fuzz::kRouteCount;
using minfer::fuzz::kRoutes;
using minfer::fuzz::kVariantCount;
using minfer::server::ConnectionState;
using minfer::server::HttpRequest;
using minfer::server::HttpResponse;
using minfer::server::HttpServer;

constexpr int64_t kCtx = 256;  // positions per sequence
constexpr int kParallel = 2;   // sequences (slots) per generator
constexpr auto kGenerationBudget = std::chrono::milliseconds(500);  // per input

[[noreturn]] void property_failed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "request_fuzz: %s: %.2000s\n", what, detail.c_str());
  std::abort();
}

[[noreturn]] void setup_failed(const std::string& what) {
  std::fprintf(stderr, "request_fuzz: %s\n", what.c_str());
  std::exit(2);
}

// The input's clients leave once its generation budget has passed: every request of the input
// gets its connection from here, and at the deadline all of them close (a request that comes
// later starts closed). One thread for the whole run.
class Deadline {
 public:
  Deadline() : thread_([this] { run(); }) { thread_.detach(); }

  // A new input: its budget starts now.
  void start_input() {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.clear();
    expired_ = false;
    armed_ = true;
    at_ = std::chrono::steady_clock::now() + kGenerationBudget;
    cv_.notify_all();
  }
  void end_input() {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.clear();
    armed_ = false;
  }
  // A connection for the input's next request; closed already when the budget is spent.
  std::shared_ptr<ConnectionState> connect() {
    auto connection = std::make_shared<ConnectionState>();
    std::lock_guard<std::mutex> lock(mu_);
    if (expired_) connection->mark_closed();
    connections_.push_back(connection);
    return connection;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (!armed_ || expired_) {
        cv_.wait(lock);
      } else if (cv_.wait_until(lock, at_) == std::cv_status::timeout && armed_ &&
                 std::chrono::steady_clock::now() >= at_) {
        expired_ = true;
        for (const auto& c : connections_) c->mark_closed();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;                                         // under mu_
  bool expired_ = false;                                       // under mu_
  std::chrono::steady_clock::time_point at_;                   // under mu_
  std::vector<std::shared_ptr<ConnectionState>> connections_;  // under mu_
  std::thread thread_;
};

// One model with its batch generator and embedder, served by one server per option variant.
struct ModelServers {
  std::unique_ptr<minfer::LanguageModel> model;
  std::unique_ptr<minfer::BatchGenerator> generator;
  std::unique_ptr<minfer::Embedder> embedder;
  std::unique_ptr<HttpServer> servers[kVariantCount];
};

struct World {
  std::string slot_dir;
  ModelServers models[kModelCount];
  Deadline deadline;
};

World* g_world = nullptr;  // made once, never destroyed (its generators' threads run till exit)

minfer::server::ServerOptions server_options(size_t variant, const std::string& slot_dir) {
  minfer::server::ServerOptions o;
  o.slots_endpoint = true;
  o.slot_save_path = slot_dir;
  o.embeddings = true;
  if (variant == 1) {
    o.context_shift = true;
    o.keep = -2;
    o.spec_ngram = 2;
    o.draft_max = 4;
    o.reasoning_format = "none";
    o.reasoning_budget = 4;
  }
  return o;
}

void load_model(const fs::path& dir, size_t index, World& w) {
  ModelServers& m = w.models[index];
  minfer::LoadOptions load;
  load.n_threads = 1;
  load.single_sequence = false;
  auto model = minfer::LanguageModel::load((dir / kModels[index]).string(), load);
  if (!model.is_ok()) setup_failed(model.status().message());
  m.model = std::move(model).value();
  minfer::BatchOptions batch;
  batch.n_parallel = kParallel;
  batch.n_ctx = kCtx;
  batch.token_budget = 256;
  batch.keep_slots = true;  // the slot actions' cells
  auto generator = m.model->batch_generator(batch);
  if (!generator.is_ok()) setup_failed(generator.status().message());
  m.generator = std::move(generator).value();
  auto embedder = m.model->embedder({.n_ctx = kCtx});
  if (!embedder.is_ok()) setup_failed(embedder.status().message());
  m.embedder = std::move(embedder).value();
  m.generator->start();
  for (size_t v = 0; v < kVariantCount; ++v) {
    m.servers[v] = std::make_unique<HttpServer>(server_options(v, w.slot_dir));
    minfer::server::Backend b;
    b.model = m.model.get();
    b.generator = m.generator.get();
    b.embedder = m.embedder.get();
    b.model_name = kModels[index];
    if (v == 1) b.default_grammar = R"(root ::= [a-z ]+ ("." | "!"))";
    m.servers[v]->set_backend(b);
  }
}

// Collects a streamed reply's bytes; writes fail once the client "disconnected".
class CollectSink : public minfer::server::ChunkSink {
 public:
  explicit CollectSink(const ConnectionState& connection) : connection_(connection) {}
  bool write(const char* data, size_t size) override {
    if (connection_.closed()) return false;
    bytes.append(data, size);
    return true;
  }
  void done() override { finished = true; }

  std::string bytes;
  bool finished = false;

 private:
  const ConnectionState& connection_;
};

void check_json_reply(const HttpResponse& res, const std::string& where) {
  auto it = res.headers.find("Content-Type");
  if (it == res.headers.end() || it->second.rfind("application/json", 0) != 0) return;
  const auto body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) property_failed("reply is not JSON", where + ": " + res.body);
  if (res.status >= 400 && !(body.is_object() && body.contains("error"))) {
    property_failed("error reply without an error object", where + ": " + res.body);
  }
  if (res.status == 500 && res.body.find("[server] internal error") != std::string::npos) {
    property_failed("an exception reached the dispatch", where + ": " + res.body);
  }
}

void check_sse(const std::string& bytes, const std::string& where) {
  size_t at = 0;
  while ((at = bytes.find("data: ", at)) != std::string::npos) {
    if (at != 0 && bytes[at - 1] != '\n') {
      at += 6;
      continue;
    }
    const size_t end = bytes.find('\n', at);
    const std::string data = bytes.substr(at + 6, end == std::string::npos ? end : end - at - 6);
    at = end == std::string::npos ? bytes.size() : end;
    if (data == "[DONE]") continue;
    if (nlohmann::json::parse(data, nullptr, false).is_discarded()) {
      property_failed("SSE frame is not JSON", where + ": " + data);
    }
  }
}

// Drives a streamed reply as the transport does: the producer until it is done or broken off.
void drive_stream(HttpResponse& res, const ConnectionState& connection, const std::string& where) {
  CollectSink sink(connection);
  try {
    while (!sink.finished && res.stream(sink)) {
    }
  } catch (const std::exception& e) {
    property_failed("a stream's producer threw", where + ": " + e.what());
  }
  if (res.stream_ended) res.stream_ended();
  check_sse(sink.bytes, where);
}

void run_request(std::string_view part) {
  const minfer::fuzz::RouteCase& route = kRoutes[static_cast<uint8_t>(part[0]) % kRouteCount];
  ModelServers& m = g_world->models[static_cast<uint8_t>(part[1]) % kModelCount];
  HttpServer& server = *m.servers[static_cast<uint8_t>(part[2]) % kVariantCount];
  HttpRequest req;
  req.method = route.method;
  const std::string_view target = route.target;
  const size_t q = target.find('?');
  req.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.params = minfer::server::parse_query(target.substr(q + 1));
  req.headers.emplace("Content-Type", "application/json");
  req.body = std::string(part.substr(3));
  std::shared_ptr<ConnectionState> connection = g_world->deadline.connect();
  req.connection = connection;
  const std::string where = std::string(route.method) + " " + std::string(route.target);

  HttpResponse res;
  server.handle(req, res);
  if (res.stream) {
    drive_stream(res, *connection, where);
  } else {
    check_json_reply(res, where);
  }
}

// Every slot emptied and the slot folder cleared: what one input leaves, the next does not see.
void reset_slots() {
  for (ModelServers& m : g_world->models) {
    for (int32_t slot = 0; slot < kParallel; ++slot) {
      auto erased = m.generator->slot_action(minfer::SlotAction::kErase, slot, "").get();
      if (!erased.is_ok()) property_failed("slot erase failed", erased.status().message());
    }
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(g_world->slot_dir, ec)) fs::remove(entry, ec);
}

// After reset_slots: no request in flight, no KV block held. The scheduler publishes its figures
// just after it completes a slot action's future, so they are given a moment to catch up.
void check_idle() {
  for (ModelServers& m : g_world->models) {
    for (const auto& s : m.servers) {
      if (s->n_in_flight() != 0) {
        property_failed("requests still in flight after their replies",
                        std::to_string(s->n_in_flight()));
      }
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (m.generator->stats().kv_blocks_used != 0) {
      if (std::chrono::steady_clock::now() > until) {
        property_failed("KV blocks held with no request and every slot erased",
                        std::to_string(m.generator->stats().kv_blocks_used));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// What every model builds once, on its first request of a kind (the grammar vocabularies over
// 151,936 tokens, the template's first render): done before fuzzing, so that an input's time is
// its own and the first grammar request is not a second slower than the same request later.
void warm_up() {
  constexpr const char* kWarmUps[] = {
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,)"
      R"("response_format":{"type":"json_object"}})",
      R"({"prompt":"hi","max_tokens":1,"grammar":"root ::= \"a\""})",
  };
  for (size_t model = 0; model < kModelCount; ++model) {
    for (size_t i = 0; i < 2; ++i) {
      const std::string request{static_cast<char>(i), static_cast<char>(model), '\0'};
      g_world->deadline.start_input();
      run_request(request + kWarmUps[i]);
      g_world->deadline.end_input();
    }
  }
  reset_slots();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("MINFER_FUZZ_MODELS");
  const fs::path models = dir != nullptr ? fs::path(dir) : fs::path("../shared/models");
  for (const char* name : kModels) {
    if (!fs::is_regular_file(models / name)) {
      setup_failed("no model '" + (models / name).string() +
                   "': set MINFER_FUZZ_MODELS to the shared models folder");
    }
  }
  g_world = new World();
  std::string slot_dir = (fs::temp_directory_path() / "minfer-request-fuzz-XXXXXX").string();
  if (mkdtemp(slot_dir.data()) == nullptr) setup_failed("cannot make a slot folder");
  g_world->slot_dir = slot_dir;
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(g_world->slot_dir, ec);
  });
  for (size_t i = 0; i < kModelCount; ++i) load_model(models, i, *g_world);
  warm_up();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  g_world->deadline.start_input();
  size_t start = 0;
  for (size_t n = 0; n < minfer::fuzz::kMaxRequests && start < input.size(); ++n) {
    size_t end = input.find('\0', start);
    if (end == std::string_view::npos) end = input.size();
    if (end - start >= 3) run_request(input.substr(start, end - start));
    start = end + 1;
  }
  g_world->deadline.end_input();
  reset_slots();
  check_idle();
  return 0;
}
