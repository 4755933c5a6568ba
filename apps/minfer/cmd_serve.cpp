// `minfer serve`: the OpenAI-compatible HTTP server (src/server/) over the batch scheduler.
// The port is taken and served first (/health and every model endpoint answer 503 while the
// model loads on a thread of its own), then the model loads; a load failure ends the process
// with exit code 1 and the error. SIGINT/SIGTERM stop new requests, let running ones finish for
// a few seconds (/health answers 503 meanwhile, for load balancers), cancel the rest and exit 0.
//
// With --models-dir DIR every GGUF there is served by its file stem (server/model_registry.h):
// a request's `model` picks one, loaded on first use; past --models-max loaded models, or when
// their weights and KV budgets would pass --models-memory (default 9/10 of physical memory), the
// least recently used idle ones are unloaded (a load waits while every loaded model has requests
// in flight). -m then adds one more model (named by --alias or its stem).
//
// MINFER_TEST_LOAD_DELAY_MS=N (tests only) sleeps N ms before loading, so that a test can watch
// /health answer 503 and then 200 on a model that loads in a moment.
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "generation_flags.h"
#include "minfer/minfer.h"
#include "minfer/tools.h"
#include "model_source.h"
#include "observe_options.h"
#include "server/http_server.h"
#include "server/model_registry.h"

namespace minfer::app {

namespace {

struct ServeFlags {
  std::string model_path;
  ModelSourceFlags source;
  std::string alias;
  std::string models_dir;        // serve every GGUF there by name
  bool models_hf_cache = false;  // serve every GGUF of the Hugging Face cache by REPO:STEM
  int models_max = 1;            // models loaded at once (with models_dir)
  uint64_t models_memory = 0;    // bytes they may hold together; 0: 9/10 of physical memory
  server::ServerOptions http;
  LoadOptions load;
  BatchOptions batch;
  bool no_prefix_cache = false;
  double drain_s = 3.0;
  GrammarFlags grammar;
  std::string default_grammar;  // for requests that ask for no grammar or JSON of their own
  std::string pooling;          // --pooling: the embeddings' (empty: the file's, else last)
};

struct Loaded {
  std::unique_ptr<LanguageModel> model;
  std::unique_ptr<BatchGenerator> generator;
  std::unique_ptr<Embedder> embedder;  // --embeddings, or an embedding model; else null
  std::unique_ptr<Reranker> reranker;  // --rerank; else null
};

// The embedder of POST /v1/embeddings: with --embeddings (an error fails the load), or for a
// model whose file sets pooling_type (one minfer cannot pool is a warning: none is served).
Status add_embedder(const ServeFlags& f, Loaded& l) {
  if (!f.http.embeddings && !l.model->is_embedding_model()) return Status::ok();
  Result<std::unique_ptr<Embedder>> e =
      l.model->embedder({.pooling = f.pooling, .n_ctx = l.generator->n_ctx()});
  if (e.is_ok()) {
    l.embedder = std::move(e).value();
    return Status::ok();
  }
  if (f.http.embeddings) return e.status();
  fmt::print(stderr, "minfer serve: warning: {}; /v1/embeddings is not served\n",
             e.status().message());
  return Status::ok();
}

// The reranker of POST /v1/rerank, with --rerank: a model that cannot rerank fails the load with
// the reason. A reranker file (pooling_type rank) served without the flag is told about it.
Status add_reranker(const ServeFlags& f, Loaded& l, const std::string& model_path) {
  if (!f.http.rerank) {
    if (l.model->is_reranker()) {
      fmt::print(stderr,
                 "minfer serve: note: {} is a reranker; start with --rerank to serve /v1/rerank\n",
                 model_path);
    }
    return Status::ok();
  }
  Result<std::unique_ptr<Reranker>> r = l.model->reranker({.n_ctx = l.generator->n_ctx()});
  if (!r.is_ok()) {
    return make_error(ErrorCode::kUnsupported, "[serve] --rerank: {}", r.status().message());
  }
  l.reranker = std::move(r).value();
  fmt::print(stderr, "minfer serve: /v1/rerank by {}\n", l.reranker->method());
  return Status::ok();
}

Result<Loaded> load(ServeFlags& f, const std::string& model_path) {
  if (const char* delay = std::getenv("MINFER_TEST_LOAD_DELAY_MS")) {
    int ms = 0;
    if (std::sscanf(delay, "%d", &ms) != 1 || ms < 0 || ms > 600000) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[serve] MINFER_TEST_LOAD_DELAY_MS is '{}': expected milliseconds in "
                        "0..600000",
                        delay);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  Loaded l;
  f.load.single_sequence = false;  // every request runs on the batch generator
  MINFER_ASSIGN_OR_RETURN(l.model, LanguageModel::load(model_path, f.load));
  if (Status st = l.model->chat_template().status(); !st.is_ok()) {
    // The model still serves completions of raw prompts; chat requests get this message.
    fmt::print(stderr, "minfer serve: warning: {}: {}; chat requests to it will be refused\n",
               model_path, st.message());
    std::fflush(stderr);
  }
  f.batch.prefix_cache = !f.no_prefix_cache;
  f.batch.keep_slots = !f.http.slot_save_path.empty();  // slots keep cells to save
  MINFER_ASSIGN_OR_RETURN(l.generator, l.model->batch_generator(f.batch));
  if (f.http.context_shift) {
    MINFER_RETURN_IF_ERROR(check_keep("serve", f.http.keep, l.generator->n_ctx()));
  }
  MINFER_RETURN_IF_ERROR(add_embedder(f, l));
  MINFER_RETURN_IF_ERROR(add_reranker(f, l, model_path));
  l.generator->start();
  return l;
}

// --models-dir: the folder's models (and -m's, when given) in a registry. Error: the folder
// cannot be read, or -m cannot be resolved.
// --models-hf-cache: every GGUF of the Hugging Face cache, named REPO:STEM (what -hf takes).
std::vector<server::ModelEntry> hf_cache_models() {
  std::vector<server::ModelEntry> out;
  for (const CachedModel& c : hub_cached_models()) {
    const std::optional<std::string> stem =
        server::model_name_of_file(std::filesystem::path(c.file).filename().string());
    if (!stem) continue;
    const std::string name = c.repo + ":" + *stem;
    if (!out.empty() && out.back().name == name) {
      out.back().path = c.local_path;  // another snapshot of the same file
    } else {
      out.push_back({name, c.local_path});
    }
  }
  return out;
}

Result<std::unique_ptr<server::ModelRegistry>> make_registry(ServeFlags& f) {
  std::vector<server::ModelEntry> models;
  if (!f.models_dir.empty()) {
    MINFER_ASSIGN_OR_RETURN(models, server::scan_models_dir(f.models_dir));
  }
  if (f.models_hf_cache) {
    for (server::ModelEntry& m : hf_cache_models()) models.push_back(std::move(m));
  }
  if (!f.model_path.empty() || !f.source.hf_repo.empty()) {
    MINFER_RETURN_IF_ERROR(resolve_model_path(f.model_path, f.source, "serve"));
    const std::string name =
        !f.alias.empty() ? f.alias : std::filesystem::path(f.model_path).stem().string();
    models.insert(models.begin(),
                  server::ModelEntry{name, f.model_path, server::model_file_bytes(f.model_path)});
  }
  auto load_fn = [&f](const std::filesystem::path& path) -> Result<server::LoadedModel> {
    ServeFlags own = f;  // load() sets fields of its flags; loads may run at once
    MINFER_ASSIGN_OR_RETURN(Loaded l, load(own, path.string()));
    fmt::print(stderr, "minfer serve: loaded {}\n", path.string());
    std::fflush(stderr);
    return server::LoadedModel{std::move(l.model), std::move(l.generator), std::move(l.embedder),
                               std::move(l.reranker)};
  };
  if (f.models_memory == 0) {
    const auto pages = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES));
    f.models_memory = pages * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE)) / 10 * 9;
  }
  return std::make_unique<server::ModelRegistry>(
      std::move(models), server::RegistryOptions{f.models_max, f.models_memory, f.default_grammar},
      load_fn);
}

int run_serve(ServeFlags& f) {
  if (!f.http.slot_save_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.http.slot_save_path, ec);
    if (!std::filesystem::is_directory(f.http.slot_save_path, ec)) {
      fmt::print(stderr, "minfer serve: --slot-save-path '{}' is not a folder that can be made\n",
                 f.http.slot_save_path);
      return 1;
    }
  }
#if defined(__GLIBC__)
  // A fixed mmap threshold: blocks of 4 MiB and more go back to the system when freed. glibc
  // otherwise raises the threshold after each large free and keeps such memory in the arena of
  // the thread that freed it, so requests on many threads (a template render stopped at its
  // 16 MiB budgets, say) would add up one peak per thread.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
  std::unique_ptr<server::ModelRegistry> registry;
  if (!f.models_dir.empty() || f.models_hf_cache) {
    Result<std::unique_ptr<server::ModelRegistry>> r = make_registry(f);
    if (!r.is_ok()) {
      fmt::print(stderr, "minfer serve: {}\n", r.status().message());
      return 1;
    }
    registry = std::move(r).value();
  } else if (Status st = resolve_model_path(f.model_path, f.source, "serve"); !st.is_ok()) {
    // The model's file first (a download for -hf), so that a bad name fails before listening.
    fmt::print(stderr, "minfer serve: {}\n", st.message());
    return 1;
  }
  if (f.alias.empty()) f.alias = f.source.hf_repo;
  // Signals are taken by sigwait on this thread; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // the loader's "done" (success or failure)
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that left: writes fail instead
  // One descriptor per connection: --max-connections may need more than the usual soft limit.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  server::HttpServer http(f.http);
  if (Status st = http.bind(); !st.is_ok()) {
    fmt::print(stderr, "minfer serve: {}\n", st.message());
    return 1;
  }
  fmt::print(stderr, "minfer serve: listening on http://{}:{}\n", f.http.host, http.port());
  std::fflush(stderr);
  std::thread serve_thread([&] { http.serve(); });

  Loaded loaded;
  Status load_status;
  std::atomic<bool> load_done{false};
  std::thread loader;
  if (registry) {
    http.set_registry(registry.get());
    fmt::print(stderr, "minfer serve: ready: {} models, at most {} loaded at once, within {} MiB\n",
               registry->models().size(), std::max(1, f.models_max), f.models_memory >> 20);
    std::fflush(stderr);
  }
  if (!registry)
    loader = std::thread([&] {
      Result<Loaded> r = load(f, f.model_path);
      if (r.is_ok()) {
        loaded = std::move(r).value();
        server::Backend b;
        b.model = loaded.model.get();
        b.generator = loaded.generator.get();
        b.embedder = loaded.embedder.get();
        b.reranker = loaded.reranker.get();
        b.default_grammar = f.default_grammar;
        b.model_name =
            !f.alias.empty() ? f.alias : std::filesystem::path(f.model_path).filename().string();
        http.set_backend(b);
        fmt::print(stderr,
                   "minfer serve: ready: {} ({} sequences of up to {} tokens, KV budget {} "
                   "positions, {} threads)\n",
                   b.model_name, loaded.generator->n_parallel(), loaded.generator->n_ctx(),
                   loaded.generator->kv_positions(), loaded.generator->n_threads());
        fmt::print(stderr, "minfer serve: context {}: {}\n", loaded.generator->n_ctx(),
                   loaded.generator->n_ctx_reason());
      } else {
        load_status = r.status();
      }
      std::fflush(stderr);
      load_done.store(true);
      kill(getpid(), SIGUSR1);
    });

  int exit_code = 0;
  while (true) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGUSR1) {
      if (load_done.load() && !load_status.is_ok()) {
        fmt::print(stderr, "minfer serve: {}\n", load_status.message());
        exit_code = 1;
        break;
      }
      continue;
    }
    fmt::print(stderr, "minfer serve: {} received, finishing {} requests\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", http.n_in_flight());
    std::fflush(stderr);
    break;
  }
  if (loader.joinable()) loader.join();
  http.begin_drain();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(f.drain_s * 1000));
  while (http.n_in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  http.cancel_all();
  if (loaded.generator) loaded.generator->stop();  // ends whatever is left
  if (registry) registry->stop_all();
  const auto cancel_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (http.n_in_flight() > 0 && std::chrono::steady_clock::now() < cancel_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  http.stop();
  serve_thread.join();
  if (loaded.generator) std::fputs(loaded.generator->profile_table().c_str(), stderr);
  fmt::print(stderr, "minfer serve: stopped\n");
  return exit_code;
}

// The batch generator's flags: sequences, context, token budget, blocks, cells.
void add_batch_flags(CLI::App* cmd, ServeFlags& f) {
  cmd->add_option(
      "--parallel", f.batch.n_parallel,
      fmt::format("sequences decoded together (default {}; also -np N)", kDefaultParallel));
  cmd->add_option("-c,--ctx-size", f.batch.n_ctx_total,
                  "KV budget in positions for all sequences (default: parallel x per-sequence)");
  cmd->add_option("--ctx-per-seq", f.batch.n_ctx,
                  "positions one sequence may use (default: the model's training context, reduced "
                  "to fit the KV cells of all sequences in 1/4 of RAM)");
  cmd->add_option("-b,--batch-size", f.batch.token_budget,
                  fmt::format("most tokens one step computes (default {})", kDefaultTokenBudget));
  cmd->add_option("--block-size", f.batch.block_size,
                  fmt::format("KV positions per block (default {})", kDefaultBlockSize));
  cmd->add_option(
      "--cache-type", f.load.cache_type,
      fmt::format("KV cell type: f32, f16, bf16, q8_0 (default MINFER_CACHE_TYPE, else {})",
                  kDefaultCacheType));
}

}  // namespace

void register_serve_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, flags] =
      add_command<ServeFlags>(app, "serve", "OpenAI-compatible HTTP server with batching");
  ServeFlags& f = *flags;
  add_model_flags(cmd, f.model_path, f.source);
  add_weight_memory_flags(cmd, f.load.use_mmap, f.load.use_mlock);
  cmd->add_option("-a,--alias", f.alias, "model name in responses (default: the file name)");
  cmd->add_option("--models-dir", f.models_dir,
                  "serve every GGUF in DIR, picked by the request's model (the file's stem)");
  cmd->add_option("--models-max", f.models_max,
                  "models loaded at once with --models-dir (default 1; least recently used "
                  "unloaded)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--models-memory", f.models_memory,
                  "memory the loaded models may hold together, weights and KV budgets (e.g. "
                  "12GiB; default 9/10 of physical memory); least recently used unloaded past it")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_flag("--models-hf-cache", f.models_hf_cache,
                "also serve every GGUF in the Hugging Face cache, named REPO:STEM");
  cmd->add_option("--host", f.http.host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", f.http.port, "port (default 8080; 0: any free port)");
  add_batch_flags(cmd, f);
  add_threads_flag(cmd, f.load.n_threads);
  cmd->add_option("--api-key", f.http.api_key, "require 'Authorization: Bearer KEY'");
  cmd->add_option("--cors-origin", f.http.cors_origins,
                  "an origin whose browser pages may call the server, with credentials "
                  "(repeatable; default: any origin, without credentials)");
  cmd->add_option(
      "--max-queue", f.batch.max_queue,
      fmt::format("requests that may wait beyond the running ones (default {})", kDefaultMaxQueue));
  cmd->add_flag("--no-prefix-cache", f.no_prefix_cache, "do not reuse cached prompt prefixes");
  cmd->add_option("--slot-save-path", f.http.slot_save_path,
                  "folder for POST /slots/{id}?action=save|restore state files; slots then keep "
                  "their last request's KV cells (default: slot actions refused)");
  cmd->add_flag("--slots", f.http.slots_endpoint,
                "serve GET /slots: each slot's state (default: off, 501)");
  cmd->add_option("--timeout", f.http.read_timeout_s,
                  "seconds a client has to send a request's head, and again its body; and to take "
                  "a reply's pending bytes (default 10)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--max-body", f.http.max_body_bytes, "largest request body in bytes (8 MiB)");
  cmd->add_option("--max-body-total", f.http.max_body_bytes_total,
                  "request body bytes held at once across connections, e.g. 512MiB (default "
                  "256 MiB, at least --max-body); a body past it gets 503")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--http-threads", f.http.n_http_threads,
                  "requests handled at once; connections cost no thread (default 64)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-connections", f.http.max_connections,
                  "open connections; past it new ones are closed at once (default 4096)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--keep-alive-timeout", f.http.keep_alive_timeout_s,
                  "seconds an idle kept-alive connection stays open (default 5)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--drain", f.drain_s,
                  "seconds running requests may finish after SIGTERM (default 3)");
  add_grammar_flags(cmd, f.grammar);
  cmd->add_option("--reasoning-format", f.http.reasoning_format,
                  "deepseek: <think>…</think> goes to reasoning_content (default); none: it stays "
                  "in content")
      ->check(CLI::IsMember({"deepseek", "none", "auto"}));
  cmd->add_option("--reasoning-budget", f.http.reasoning_budget,
                  "reasoning tokens before the engine closes the block (-1: unlimited, default; "
                  "0: no thinking)");
  cmd->add_flag("--context-shift", f.http.context_shift,
                "a request whose sequence fills the context discards the older half of its tokens "
                "after --keep and goes on (kept keys re-rotated in place); default: it ends with "
                "finish_reason length");
  cmd->add_option("--keep", f.http.keep,
                  "tokens a context shift always keeps (default: a chat's system prompt; -1: the "
                  "whole prompt)");
  cmd->add_option("--spec-ngram", f.http.spec_ngram,
                  "speculative decoding by prompt lookup for every request that does not turn it "
                  "off: draft the tokens that followed the last earlier occurrence of its last N "
                  "tokens, verify them in its step with the other sequences (same output; 0: off, "
                  "default; a request's spec_ngram and speculative.n_max/n_min override)")
      ->check(CLI::Range(0, kMaxSpecNgram));
  cmd->add_option("--model-draft", f.load.draft_model,
                  "draft model for speculative decoding (also -md; same vocabulary, checked at "
                  "start): every request that does not turn it off (speculative.n_max 0) or ask "
                  "for prompt lookup (spec_ngram) verifies its drafts in its step with the other "
                  "sequences (greedy: the same output; sampled: the accept/resample rule)");
  cmd->add_option("--draft-max", f.http.draft_max, "tokens drafted per step, at most (16)")
      ->check(CLI::Range(1, kMaxDraft));
  cmd->add_option("--draft-min", f.http.draft_min,
                  "fewer drafts than this are not verified (a plain decode step instead; 0)")
      ->check(CLI::Range(0, kMaxDraft));
  cmd->add_option("--draft-p-min", f.http.draft_p_min,
                  "the draft model stops before a token it gives less probability (0)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--embeddings", f.http.embeddings,
                "serve POST /v1/embeddings with this model's pooled last hidden state (an "
                "embedding model, whose file sets pooling_type, serves it without the flag)");
  cmd->add_option("--pooling", f.pooling,
                  "embeddings' pooling: mean, cls or last (default: the file's, else last)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd->add_flag("--rerank,--reranking", f.http.rerank,
                "serve POST /v1/rerank (/rerank, /v1/reranking): documents scored for a query by "
                "the file's classifier head (pooling_type rank, cls tensors) or by the yes/no "
                "logits of a Qwen3-Reranker-style model; a model with neither is refused");
  add_observe_flags(*cmd, f.load);
  // llama.cpp spells --parallel "-np", a multi-letter single-dash name CLI11 cannot declare: it
  // arrives as an extra argument, and any other extra is an error.
  cmd->allow_extras();
  registry.add(cmd, [flags = flags, cmd = cmd] {
    const std::vector<std::string> extras = cmd->remaining();
    for (size_t i = 0; i < extras.size(); ++i) {
      int value = 0;
      if (extras[i] == "-np" && i + 1 < extras.size() &&
          std::sscanf(extras[i + 1].c_str(), "%d", &value) == 1 && value > 0) {
        flags->batch.n_parallel = value;
        ++i;
        continue;
      }
      fmt::print(stderr, "minfer serve: unknown or incomplete argument '{}' (see --help)\n",
                 extras[i]);
      return 1;
    }
    Result<std::string> grammar = grammar_from_flags(flags->grammar, "serve");
    if (!grammar.is_ok()) {
      fmt::print(stderr, "minfer serve: {}\n", grammar.status().message());
      return 1;
    }
    flags->default_grammar = std::move(grammar).value();
    if (flags->http.draft_min > flags->http.draft_max) {
      fmt::print(stderr, "minfer serve: --draft-min {} is more than --draft-max {}\n",
                 flags->http.draft_min, flags->http.draft_max);
      return 1;
    }
    if (!flags->load.draft_model.empty() && flags->http.spec_ngram > 0) {
      fmt::print(stderr,
                 "minfer serve: --model-draft and --spec-ngram both set the requests' drafts: "
                 "choose one (a request can still ask for prompt lookup with spec_ngram)\n");
      return 1;
    }
    flags->http.write_timeout_s = flags->http.read_timeout_s;
    return run_serve(*flags);
  });
}

}  // namespace minfer::app
