// minfer's public C++ API: load a GGUF model, tokenize and detokenize, render a chat through the
// model's own template, generate with a text callback, and batch many requests on one model.
// Everything else in the tree is the engine behind it. Errors are Result<T> / Status
// (core/status.h): `result.is_ok()`, `*result`, `result.status().message()`.
//
//   auto model = minfer::LanguageModel::load("model.gguf");
//   if (!model.is_ok()) { puts(model.status().message().c_str()); return 1; }
//   auto prompt = (*model)->tokenize("Once upon a time");
//   minfer::GenerateParams params;
//   params.max_tokens = 32;
//   auto reply = (*model)->generate(prompt, params, [](std::string_view text) {
//     fwrite(text.data(), 1, text.size(), stdout);
//     return true;  // false stops generating
//   });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace minfer {

struct LoadOptions {
  int64_t n_ctx = 0;       // positions a sequence may use; 0: the model's, at most 4096
  int64_t n_batch = 2048;  // most prompt tokens per forward
  int n_threads = 0;       // ≤ 0: every core
  std::string cache_type;  // "f32", "f16", "q8_0"; empty: MINFER_CACHE_TYPE, else f32
  // Looking inside (each also from the environment: MINFER_TRACE, MINFER_DUMP_DIR).
  std::string trace_path;  // one JSON line per forward step; empty: MINFER_TRACE, else none
  std::string dump_graph;  // write the prefill and decode graphs here (.dot or .json)
  bool profile = false;    // time every op (LanguageModel::profile_table)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// llama.cpp's sampling defaults; temperature 0 is greedy.
struct GenerateParams {
  int64_t max_tokens = -1;  // < 0: until an end-of-generation token or a full context
  float temperature = 0.8f;
  int32_t top_k = 40;   // ≤ 0: off
  float top_p = 0.95f;  // 1: off
  float min_p = 0.05f;  // 0: off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;  // tokens the penalties look back on; 0: off, -1: all
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, bias); -inf bans the token
  uint64_t seed = 42;
  std::vector<std::string> stop;  // strings that end generation; never part of the text
  // generate() only: checked between tokens when set; raising it ends with "cancelled".
  const std::atomic<bool>* cancel = nullptr;
};

struct GenerateReply {
  std::string text;             // everything passed to the callback
  std::vector<int32_t> tokens;  // every token sampled, a final end-of-generation token included
  std::string finish_reason;    // "eog", "stop", "length", "context" or "cancelled"
  std::string finish_text;      // the same for people: "stop string", "context full", …
  std::string stop;             // the stop string that matched (finish_reason "stop")
  int64_t n_prompt = 0;         // prompt tokens (n_cached of them reused from the cache)
  int64_t n_cached = 0;
  int64_t n_prefilled = 0;  // prompt tokens computed (n_prompt - n_cached)
  int64_t n_generated = 0;  // tokens sampled, a final end-of-generation token included
  double prefill_tok_s = 0.0;
  double decode_tok_s = 0.0;
  std::string metrics;  // every figure of the run as lines for people (what `minfer run` prints)
};

// What prefill() computed: the prompt's tokens found in the cache and those computed.
struct PrefillReply {
  int64_t n_reused = 0;
  int64_t n_prefilled = 0;
};

// Gets each piece of text as soon as it is safe to show (whole UTF-8 characters, never a stop
// string); returns false to stop generating.
using TextCallback = std::function<bool(std::string_view text)>;

// What a batched request reports: text as it comes, then once `done` with the reply's end.
struct BatchEvent {
  std::string text;
  bool done = false;
  std::string finish_reason;  // when done: as GenerateReply's, or "error"
  std::string error;          // when finish_reason is "error"
};

struct BatchOptions {
  int n_parallel = 4;          // sequences decoded together
  int64_t n_ctx = 0;           // positions one sequence may use; 0: the model's, at most 4096
  int64_t n_ctx_total = 0;     // KV budget for all sequences; 0: n_parallel * n_ctx
  int64_t token_budget = 512;  // most tokens one step computes
};

// Many requests over one model, decoded together in one batch per step (continuous batching,
// chunked prefill, shared prompt prefixes).
class BatchGenerator {
 public:
  ~BatchGenerator();
  BatchGenerator(const BatchGenerator&) = delete;
  BatchGenerator& operator=(const BatchGenerator&) = delete;

  // Queues a request and returns its id; `on_event` gets its events, called from the thread that
  // steps (run_until_idle's, or the generator's own after start()). Errors: an empty or too long
  // prompt, bad parameters, a full queue.
  Result<int64_t> submit(std::span<const int32_t> prompt, const GenerateParams& params,
                         std::function<void(const BatchEvent&)> on_event);
  // Steps on the calling thread until every request has finished.
  Status run_until_idle();
  // Or: steps on a thread of its own until stop(), which cancels what is left.
  void start();
  void stop();

 private:
  friend class LanguageModel;
  struct Impl;
  explicit BatchGenerator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A conversation rendered through the model's chat template: its messages and their tokens. Each
// turn renders the whole conversation; generate() finds what the cache already holds of it.
class Chat {
 public:
  ~Chat();
  Chat(const Chat&) = delete;
  Chat& operator=(const Chat&) = delete;

  void add_user(std::string text);
  void add_assistant(std::string text);
  // Removes the last message when it has that role; false when it does not.
  bool pop_last(std::string_view role);
  // Forgets every turn; the system message stays.
  void clear();
  // Drops the oldest turn (the first user message and its replies); the system message and the
  // latest user message always stay. False when nothing can go.
  bool drop_oldest_turn();
  // User messages held.
  int64_t n_turns() const;
  // The conversation rendered (with the assistant's header after it when add_generation_prompt)
  // and tokenized as the template's text says (special tokens parsed, BOS when the model adds
  // one and the template did not write it).
  Result<std::string> render(bool add_generation_prompt = true) const;
  Result<std::vector<int32_t>> tokens(bool add_generation_prompt = true) const;

 private:
  friend class LanguageModel;
  struct Impl;
  explicit Chat(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class LanguageModel {
 public:
  // Loads the model, its tokenizer and chat template, and a session for generate().
  static Result<std::unique_ptr<LanguageModel>> load(const std::string& path,
                                                     const LoadOptions& options = {});
  ~LanguageModel();
  LanguageModel(const LanguageModel&) = delete;
  LanguageModel& operator=(const LanguageModel&) = delete;

  // Token ids as llama.cpp gives them: BOS when the model adds one (add_special), special tokens
  // such as <|im_start|> matched only with parse_special.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true,
                                bool parse_special = false) const;
  // The text of ids (control tokens left out). Error: an id outside the vocabulary.
  Result<std::string> detokenize(std::span<const int32_t> ids) const;
  // The messages rendered by the model's chat template, and that prompt's tokens.
  Result<std::string> render_chat(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt = true) const;
  Result<std::vector<int32_t>> tokenize_chat(const std::vector<ChatMessage>& messages) const;
  // A conversation over this model's template (`system` empty: none); the model must outlive it.
  // Error: the model's template cannot be parsed (render_chat and tokenize_chat fail alike).
  Result<std::unique_ptr<Chat>> start_chat(std::string system = "") const;

  // Generates after `prompt` on the model's one sequence; what that sequence already holds of
  // the prompt is reused (multi-turn chat prefills only the new turn).
  Result<GenerateReply> generate(std::span<const int32_t> prompt, const GenerateParams& params,
                                 const TextCallback& on_text = {});
  // Puts `tokens` into that sequence without sampling (e.g. a finished chat turn as the template
  // renders it, so that the next turn's prompt shares it), reusing what it already holds.
  Result<PrefillReply> prefill(std::span<const int32_t> tokens);
  // Forgets what the sequence holds.
  void clear();

  // A batch generator over this model (with a KV cache of its own); the model must outlive it.
  Result<std::unique_ptr<BatchGenerator>> batch_generator(const BatchOptions& options) const;

  int64_t n_vocab() const;
  int64_t n_ctx() const;
  // "qwen3", "llama", …
  const std::string& architecture() const;
  // The model's shape and how it runs (kernels, threads, cache type, n_ctx), one fact per line.
  std::string describe() const;
  // With LoadOptions::profile: time per op so far, as a table; otherwise empty.
  std::string profile_table() const;

 private:
  struct Impl;
  explicit LanguageModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
