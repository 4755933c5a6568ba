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

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace minfer {

struct LoadOptions {
  int64_t n_ctx = 0;       // positions a sequence may use; 0: the model's, at most 4096
  int64_t n_batch = 2048;  // most prompt tokens per forward
  int n_threads = 0;       // ≤ 0: every core
  std::string cache_type;  // "f32", "f16", "q8_0"; empty: MINFER_CACHE_TYPE, else f32
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
  uint64_t seed = 42;
  std::vector<std::string> stop;  // strings that end generation; never part of the text
};

struct GenerateReply {
  std::string text;             // everything passed to the callback
  std::vector<int32_t> tokens;  // every token sampled, a final end-of-generation token included
  std::string finish_reason;    // "eog", "stop", "length", "context" or "cancelled"
  int64_t n_prompt = 0;         // prompt tokens (n_cached of them reused from the cache)
  int64_t n_cached = 0;
  double prefill_tok_s = 0.0;
  double decode_tok_s = 0.0;
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

  // Generates after `prompt` on the model's one sequence; what that sequence already holds of
  // the prompt is reused (multi-turn chat prefills only the new turn).
  Result<GenerateReply> generate(std::span<const int32_t> prompt, const GenerateParams& params,
                                 const TextCallback& on_text = {});

  // A batch generator over this model (with a KV cache of its own); the model must outlive it.
  Result<std::unique_ptr<BatchGenerator>> batch_generator(const BatchOptions& options) const;

  int64_t n_vocab() const;
  int64_t n_ctx() const;
  // "qwen3", "llama", …
  const std::string& architecture() const;

 private:
  struct Impl;
  explicit LanguageModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
