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
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "minfer/defaults.h"
#include "sampling/sampler_params.h"

namespace minfer {

// Why generation ended.
enum class FinishReason {
  kEog,        // the model produced an end-of-generation token (not printed)
  kStop,       // a stop string appeared (it and what followed were not printed)
  kLength,     // max_tokens were generated
  kContext,    // the context is full: the next token would have no position
  kCancelled,  // the cancel flag was raised, the callback returned false, or the handle cancelled
  kToolCalls,  // the reply called tools (it ended as kEog or kStop would, after a tool call)
};

// "eog", "stop", "length", "context", "cancelled", "tool_calls".
const char* finish_reason_name(FinishReason reason);
// A sentence for people: "end-of-generation token", "stop string", ….
const char* finish_reason_text(FinishReason reason);

// Most alternatives per token that logprobs can report (OpenAI's top_logprobs limit).
inline constexpr int32_t kMaxTopLogprobs = 20;
// The largest GenerateParams::spec_ngram and draft_max / draft_min a request may ask for.
inline constexpr int32_t kMaxSpecNgram = 64;
inline constexpr int32_t kMaxDraft = 256;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// A token the sampler chose, with its log-probability and the most likely alternatives when they
// were asked for (GenerateParams::top_logprobs), from the model's distribution before sampling.
struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // [top_logprobs] most likely first
};

// A piece of one tool call in a streamed reply: a call's first piece carries its id ("call_…")
// and function name, its next pieces fragments of its arguments (JSON text, in order).
struct ToolCallDelta {
  int32_t index = 0;      // the call's place in the reply: 0, 1, …
  std::string id;         // on the call's first piece, else ""
  std::string name;       // on the call's first piece, else ""
  std::string arguments;  // a fragment of the arguments' JSON text (may be "")
};

// A whole tool call: its pieces put together.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
};

// Puts streamed call pieces together: each piece goes to the call of its index (its id and name
// set, its arguments appended).
void append_tool_calls(std::vector<ToolCall>& calls, const std::vector<ToolCallDelta>& deltas);

// What became safe to emit of a reply, split as the model's formats say (GenerateParams'
// parse_tool_calls, extract_reasoning): reasoning comes before content, tool calls after it.
struct ReplyDelta {
  std::string reasoning;  // text inside <think>…</think> (or the format's reasoning channel)
  std::string content;    // everything else
  std::vector<ToolCallDelta> tool_calls;

  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// Which tools a reply may call (OpenAI's tool_choice).
enum class ToolChoice {
  kAuto,      // the model decides
  kNone,      // no calls: the reply is not parsed for them
  kRequired,  // at least one call
  kFunction,  // a call of GenerateParams::tool_choice_name
};

// OpenAI's string forms of tool_choice: "none", "auto", "required"; nullopt for anything else
// (the caller names the field in its own error).
std::optional<ToolChoice> tool_choice_from_string(std::string_view s);

struct LoadOptions {
  // Positions a sequence may use; 0: the model's training context, reduced to what fits its KV
  // cells in a quarter of physical memory (describe() says which and why).
  int64_t n_ctx = 0;
  int64_t n_batch = kDefaultBatch;  // most prompt tokens per forward
  int n_threads = 0;                // ≤ 0: every core
  std::string cache_type;  // "f32", "f16", "bf16", "q8_0"; empty: MINFER_CACHE_TYPE, else f16
  // Looking inside (each also from the environment: MINFER_TRACE, MINFER_DUMP_DIR).
  std::string trace_path;  // one JSON line per forward step; empty: MINFER_TRACE, else none
  std::string dump_graph;  // write the prefill and decode graphs here (.dot or .json)
  bool profile = false;    // time every op (LanguageModel::profile_table)
  // Give the model its own sequence for generate() and prefill() (a KV cache of n_ctx
  // positions). false for a program that only batches: the observers above then go to the
  // batch generator instead.
  bool single_sequence = true;
  // How the weights are held (llama.cpp's --no-mmap and --mlock): mapped from the file (false:
  // read into private memory with 2 MiB pages), and locked in RAM (a failure is a warning).
  bool use_mmap = true;
  bool use_mlock = false;
  // A draft model for speculative decoding (llama.cpp's -md): a smaller model of the same
  // vocabulary (checked at load: an error otherwise), loaded with the same context, threads and
  // cache type, whose tokens generate() drafts (GenerateParams::draft_max, draft_min,
  // draft_p_min): its greedy ones when greedy, else sampled with the same settings and kept by
  // the accept/resample rule, so the output is distributed as without it. Batch generators of
  // the model run it too, on a paged cache of their own: every request drafts by it unless it
  // sets spec_ngram (prompt lookup instead) or draft_max 0 (no speculation). Empty: none.
  std::string draft_model;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Replies in the model's own formats, as its chat template shows them (chat/reply_format.h), and
// the tools behind them.
struct ReplyParams {
  bool parse_tool_calls = false;   // tool calls go to tool_calls, not to the text
  bool extract_reasoning = false;  // <think>…</think> goes to reasoning, not to the text
  // < 0: unlimited; else after this many reasoning tokens the engine closes the block itself
  // ("\n</think>\n\n" as the next tokens) and the answer follows; 0: closed at once.
  int32_t reasoning_budget = -1;
  // The request's tool definitions, for the grammar that constrains calls (and the types of the
  // parameters of calls in the XML format, which writes values as text):
  std::string tools;  // JSON array text of OpenAI tools ("" none)
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;     // kFunction: the function's name
  bool parallel_tool_calls = true;  // false: at most one call
};

// The sampler's knobs (SamplerParams, sampling/sampler_params.h: temperature, top_k, top_p,
// min_p, the penalties and how far back they look, seed, logit_bias) with llama.cpp's defaults,
// how the reply is split (ReplyParams), and what a request adds to them.
struct GenerateParams : SamplerParams, ReplyParams {
  int64_t max_tokens = -1;        // < 0: until an end-of-generation token or a full context
  std::vector<std::string> stop;  // strings that end generation; never part of the text
  // Checked before each step when set (not owned): raising it ends the request with
  // "cancelled", as a BatchGenerator handle's cancel() does.
  const std::atomic<bool>* cancel = nullptr;
  // < 0: no logprobs; else each sampled token's log-probability plus this many alternatives
  // (≤ kMaxTopLogprobs), reported in BatchEvent::tokens (GenerateReply carries none).
  int32_t top_logprobs = -1;
  bool render_special = false;  // emit the text of control tokens
  // Only tokens that continue one JSON object are sampled, and the request ends as soon as it is
  // complete (OpenAI's response_format json_object).
  bool json_object = false;
  // GBNF text (llama.cpp's grammar language): only tokens that keep the text a prefix of a
  // sentence of the grammar are sampled, and the request ends when nothing but the end may follow.
  // Not together with json_object. A grammar that does not parse is an error naming line and
  // column.
  std::string grammar;
  // < 0 any free slot; else the request waits for slot id_slot (0..n_parallel-1; generate()
  // has the one slot 0) and starts from what that slot holds (BatchOptions::keep_slots), e.g. a
  // state restored into it.
  int32_t id_slot = -1;
  // Context shift (llama.cpp's --context-shift): when the sequence has no position left, the
  // older half of its tokens after the first n_keep is discarded and the rest keep their KV cells
  // (keys re-rotated to their new positions, nothing computed again), so generation goes on past
  // n_ctx. false: a full context ends the reply (finish_reason "context").
  bool context_shift = false;
  // Tokens at the start always kept by a shift (e.g. the system prompt's); < 0: the whole prompt.
  // Must leave at least 2 positions of n_ctx after them.
  int64_t n_keep = 0;
  // Speculative decoding by prompt lookup (llama.cpp's --spec-ngram... / prompt lookup): after
  // each token, the tokens that followed the last earlier occurrence of the last spec_ngram
  // tokens (prompt and reply) are drafted, up to draft_max, and verified in one forward. The
  // output is exactly what plain decoding gives; 0: off. Not with sliding-window models (an
  // error). Drafts are verified in the step a sequence shares with the other sequences.
  int32_t spec_ngram = 0;
  int32_t draft_max = 16;
  // With a draft model (LoadOptions::draft_model): fewer drafts than draft_min are not verified
  // (a plain forward instead), and the draft stops before a token it gives less probability
  // than draft_p_min.
  int32_t draft_min = 0;
  float draft_p_min = 0.0f;
};

// Ok when `gbnf` is a grammar GenerateParams::grammar can take; else the error, naming line and
// column ("[grammar] gbnf:3:14: expected ']' to close the character class").
Status check_grammar(std::string_view gbnf);
// The GBNF grammar of the JSON documents a JSON Schema (text) describes, for
// GenerateParams::grammar (response_format json_schema, --json-schema). What is supported:
// grammar/json_schema.h. Error: text that is not JSON, or a keyword that is not supported, named
// with where it stands.
Result<std::string> json_schema_grammar(std::string_view schema);

struct GenerateReply {
  std::string text;             // everything passed to the callback
  std::vector<int32_t> tokens;  // every token sampled, a final end-of-generation token included
  std::string finish_reason;    // "eog", "stop", "length", "context", "cancelled", "tool_calls"
  std::string finish_text;      // the same for people: "stop string", "context full", …
  std::string stop;             // the stop string that matched (finish_reason "stop")
  int64_t n_prompt = 0;         // prompt tokens (n_cached of them reused from the cache)
  int64_t n_cached = 0;
  int64_t n_prefilled = 0;  // prompt tokens computed (n_prompt - n_cached)
  int64_t n_generated = 0;  // tokens sampled, a final end-of-generation token included
  int64_t n_shifts = 0;     // context shifts (GenerateParams::context_shift)
  // Speculative decoding: tokens drafted, and of those the ones kept as the sampled token.
  int64_t n_drafted = 0;
  int64_t n_accepted = 0;
  double prefill_tok_s = 0.0;
  double decode_tok_s = 0.0;
  std::string metrics;  // every figure of the run as lines for people (what `minfer run` prints)
  // With parse_tool_calls / extract_reasoning: the reply's parts (text holds the content).
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
};

// What prefill() computed: the prompt's tokens found in the cache and those computed.
struct PrefillReply {
  int64_t n_reused = 0;
  int64_t n_prefilled = 0;
};

// A sequence's KV state saved to or loaded from a file (LanguageModel::save_state, load_state).
struct StateReply {
  int64_t n_tokens = 0;         // positions the state holds
  std::vector<int32_t> tokens;  // [n_tokens] their tokens
  std::string app_data;         // what was stored beside the cells (e.g. a chat's messages)
  int64_t n_bytes = 0;          // size of the file
  double ms = 0.0;              // wall time of the save or the load
};

// Gets each piece of text as soon as it is safe to show (whole UTF-8 characters, never a stop
// string); returns false to stop generating.
using TextCallback = std::function<bool(std::string_view text)>;
// Gets each piece of the reply split into reasoning, content and tool calls; false stops.
using ReplyCallback = std::function<bool(const ReplyDelta& delta)>;

struct RequestStats {
  int64_t n_prompt = 0;     // prompt tokens
  int64_t n_cached = 0;     // of those, attached from the prefix cache (not computed)
  int64_t n_generated = 0;  // tokens sampled, a final eog included
  double queue_ms = 0.0;    // submit to admission
  double ttft_ms = 0.0;     // submit to the first token sampled
  double total_ms = 0.0;    // submit to the end
  int64_t n_preempted = 0;  // times the request lost its blocks and was recomputed
  int64_t n_shifts = 0;     // context shifts (GenerateParams::context_shift)
  // Speculative decoding (GenerateParams::spec_ngram): tokens drafted, and of those sampled as
  // drafted (llama-server's timings draft_n, draft_n_accepted).
  int64_t n_drafted = 0;
  int64_t n_draft_accepted = 0;
};

// What a batched request reports, on the thread that steps: text as it comes, then once `done`
// with the reply's end. Handlers must be quick and must not call the generator (cancelling
// through the handle is fine).
struct BatchEvent {
  // Text that became safe to emit (never part of a stop string); with parse_tool_calls or
  // extract_reasoning, the content part of it only.
  std::string text;
  std::string reasoning;                  // extract_reasoning: reasoning that became safe to emit
  std::vector<ToolCallDelta> tool_calls;  // parse_tool_calls: pieces of calls, in order
  std::vector<SampledToken> tokens;       // tokens sampled since the last event
  bool done = false;
  // The server's n > 1: which choice the event belongs to (0 otherwise).
  int32_t index = 0;
  // When done:
  FinishReason finish = FinishReason::kLength;
  std::string finish_reason;  // finish_reason_name(finish), or "error"
  std::string stop;           // the stop string that matched (kStop)
  std::string error;          // when finish_reason is "error"
  RequestStats stats;
};

// A queued request: its id, and a way to end it early.
class RequestHandle {
 public:
  explicit RequestHandle(int64_t id) : id_(id) {}
  // Asks the generator to end the request; it does so before its next step.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  int64_t id() const { return id_; }

 private:
  int64_t id_;
  std::atomic<bool> cancelled_{false};
};

// A snapshot of a batch generator, for metrics.
struct BatchStats {
  int64_t n_running = 0;
  int64_t n_waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;    // cached blocks included
  int64_t kv_blocks_cached = 0;  // free but holding a reusable prefix
  int64_t kv_blocks_total = 0;   // the budget
  int64_t kv_bytes_total = 0;    // the budget's cells in bytes: what the KV cache may grow to
  int64_t kv_bytes_used = 0;     // the cells of blocks sequences hold (window pool included)
  // One cached position's cells in the main pool (every global layer's K and V), in the cell
  // type kv_cell_type ("f32", "f16", "bf16", "q8_0", …).
  int64_t kv_bytes_per_position = 0;
  std::string kv_cell_type;
  int64_t n_steps = 0;
  int64_t n_preemptions = 0;
  // Exceptions caught in steps: each failed its own requests (or the step's), not the generator.
  int64_t n_step_errors = 0;
  // Speculative decoding, all requests together (vLLM's spec_decode counters): sequences' steps
  // that verified drafts, tokens drafted, and of those sampled as drafted.
  int64_t n_spec_steps = 0;
  int64_t n_draft_tokens = 0;
  int64_t n_draft_accepted = 0;
};

// The batch generator's threads and cell type are the model's (LoadOptions).
struct BatchOptions {
  int n_parallel = kDefaultParallel;  // sequences decoded together
  // Positions one sequence may use; 0: the model's training context reduced to fit the KV cells
  // of n_parallel sequences in a quarter of physical memory (n_ctx_reason), at least 2, at most
  // n_ctx_total.
  int64_t n_ctx = 0;
  int64_t n_ctx_total = 0;                     // KV budget for all sequences; 0: n_parallel * n_ctx
  int64_t token_budget = kDefaultTokenBudget;  // most tokens one step computes
  int64_t block_size = kDefaultBlockSize;      // KV positions per block
  int64_t max_queue = kDefaultMaxQueue;  // requests waiting beyond it are refused; < 0: no limit
  bool prefix_cache = true;              // requests sharing a prompt prefix share its cache blocks
  // A slot (0..n_parallel-1) is where a request runs; with keep_slots, a finished request's KV
  // cells stay in its slot, for the next request there (the longest common prefix is reused) and
  // for slot_action's save. They go when the pool needs their blocks.
  bool keep_slots = false;
};

// What BatchGenerator::slot_action does to a slot (llama-server's POST /slots/{id}?action=…).
enum class SlotAction {
  kSave,     // the slot's tokens and KV cells to a state file
  kRestore,  // a state file into the slot
  kErase,    // forget what the slot holds
};

// A slot's state now (BatchGenerator::slots, llama-server's GET /slots).
struct SlotState {
  int32_t id = 0;
  bool busy = false;        // a request runs in it
  int64_t n_cached = 0;     // positions whose KV cells it holds
  int64_t n_prompt = 0;     // busy: the request's prompt tokens
  int64_t n_generated = 0;  // busy: tokens sampled so far
  int64_t request_id = -1;  // busy: the request's id (RequestHandle::id), else -1
};

struct SlotReply {
  int32_t id_slot = 0;
  int64_t n_tokens = 0;  // tokens saved, restored or erased
  int64_t n_bytes = 0;   // size of the state file (save, restore)
  double ms = 0.0;       // wall time of the action
};

// Many requests over one model, decoded together in one batch per step (continuous batching,
// chunked prefill, shared prompt prefixes).
class BatchGenerator {
 public:
  ~BatchGenerator();
  BatchGenerator(const BatchGenerator&) = delete;
  BatchGenerator& operator=(const BatchGenerator&) = delete;

  // Queues a request; `on_event` gets its events, called from the thread that steps
  // (run_until_idle's, or the generator's own after start()). Errors: an empty prompt or bad ids
  // or parameters (kInvalidArgument), a prompt with no room for one generated token
  // (kOutOfRange), a full queue or a stopped generator (kResourceExhausted).
  Result<std::shared_ptr<RequestHandle>> submit(std::span<const int32_t> prompt,
                                                const GenerateParams& params,
                                                std::function<void(const BatchEvent&)> on_event);
  // Queues an action on slot `id_slot`, done between steps once no request runs in the slot.
  // Errors (in the future): keep_slots is off, a slot outside 0..n_parallel-1, a file that
  // cannot be written or read, a state of another model or cell type (load_state's errors), too
  // few free KV blocks, a stopped generator. Without start(), run_until_idle() does it.
  std::future<Result<SlotReply>> slot_action(SlotAction action, int32_t id_slot,
                                             const std::string& path);
  // Steps on the calling thread until every request has finished.
  Status run_until_idle();
  // Or: steps on a thread of its own until stop(), which cancels what is left.
  void start();
  void stop();

  BatchStats stats() const;
  // Every slot's state as of the last step.
  std::vector<SlotState> slots() const;
  int64_t n_ctx() const;                    // positions one sequence may use
  const std::string& n_ctx_reason() const;  // how n_ctx was chosen, in words
  int n_parallel() const;                   // sequences decoded together
  int64_t kv_positions() const;             // the KV budget of all sequences
  int n_threads() const;
  // With LoadOptions::profile (and no single sequence): time per op so far; otherwise empty.
  std::string profile_table() const;

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
  // A reply that called tools, with its calls (OpenAI's assistant message with tool_calls).
  void add_assistant(std::string text, const std::vector<ToolCall>& calls);
  // The result of the call `call_id` of the function `name` (a "tool" message).
  void add_tool_result(std::string call_id, std::string name, std::string content);
  // The tools the template shows the model: an OpenAI tools array as JSON text ("" none).
  // Error: text that is not a JSON array of objects, or more than limits::kMaxTools of them.
  Status set_tools(std::string_view tools_json);
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
  // The messages as JSON text ([{"role", "content"}, …], the system message first when there is
  // one; tool calls and results as OpenAI writes them), and the conversation replaced by such a
  // list (e.g. stored beside a state file by save_state). Error: text that is not such a list.
  std::string messages_json() const;
  Status set_messages_json(std::string_view json);

 private:
  friend class LanguageModel;
  struct Impl;
  explicit Chat(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Embeddings (LanguageModel::embedder): the options of an embedder.
struct EmbedOptions {
  std::string pooling;    // "mean", "cls", "last"; empty: the file's pooling_type, else last
  bool normalize = true;  // L2-normalize every vector
  int64_t n_ctx = 0;      // the longest input in tokens; 0: the model's n_ctx
};

// Turns token sequences into vectors: the last hidden state (after the final norm) pooled per
// EmbedOptions::pooling. It runs its own KV cache, beside any generator of the same model; one
// call at a time (calls from several threads wait for each other).
class Embedder {
 public:
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  // One vector [n_embd] per input, in order; inputs share forward steps. Errors: an empty input,
  // an id outside the vocabulary, an input longer than n_ctx (nothing is computed).
  Result<std::vector<std::vector<float>>> embed(const std::vector<std::vector<int32_t>>& inputs);
  int64_t n_embd() const;
  int64_t n_ctx() const;
  // "mean", "cls" or "last".
  std::string pooling() const;

 private:
  friend class LanguageModel;
  struct Impl;
  explicit Embedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Reranking (LanguageModel::reranker): the options of a reranker.
struct RerankOptions {
  int64_t n_ctx = 0;  // the longest query–document prompt in tokens; 0: the model's n_ctx
};

// Scores documents for a query, by the model's classifier head (a file with pooling_type rank
// and cls tensors, BGE-reranker style) or by the "yes"/"no" logits of the last position
// (Qwen3-Reranker's method) — engine/reranker.h says how the prompt is made. It runs its own KV
// cache, beside any generator of the same model; one call at a time.
class Reranker {
 public:
  ~Reranker();
  Reranker(const Reranker&) = delete;
  Reranker& operator=(const Reranker&) = delete;

  // The tokens of one (query, document) pair's prompt.
  std::vector<int32_t> pair_tokens(std::string_view query, std::string_view document) const;
  // One score per pair of tokens, in order; higher is more relevant: P(yes) in [0, 1] for the
  // yes/no method and for heads labelled yes/no, else the head's output. Pairs share forward
  // steps. Errors (nothing computed): an empty pair, a pair longer than n_ctx.
  Result<std::vector<float>> score(const std::vector<std::vector<int32_t>>& pairs);
  // How it scores, for people: "yes/no logits (tokens …)" or "classifier head (…)".
  std::string method() const;
  int64_t n_ctx() const;

 private:
  friend class LanguageModel;
  struct Impl;
  explicit Reranker(std::unique_ptr<Impl> impl);
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
  // The text of one token as the vocabulary holds it (bytes, may be part of a character). Error:
  // an id outside the vocabulary.
  Result<std::string> token_piece(int32_t id) const;
  // The messages rendered by the model's chat template, and that prompt's tokens.
  Result<std::string> render_chat(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt = true) const;
  Result<std::vector<int32_t>> tokenize_chat(const std::vector<ChatMessage>& messages) const;
  // An OpenAI chat request body (JSON text: `messages`, optional `tools`,
  // `chat_template_kwargs`, …) rendered by the model's template, and that prompt's tokens.
  Result<std::string> render_chat_request(std::string_view request_json) const;
  Result<std::vector<int32_t>> tokenize_chat_request(std::string_view request_json) const;
  // The chat template's source, or why the model's template cannot be used (it does not parse,
  // or it failed its load-time check under the render budgets): every chat request fails with
  // that status.
  Result<std::string> chat_template() const;
  // A conversation over this model's template (`system` empty: none); the model must outlive it.
  // Error: the model's template cannot be parsed (render_chat and tokenize_chat fail alike).
  Result<std::unique_ptr<Chat>> start_chat(std::string system = "") const;

  // Generates after `prompt` on the model's one sequence; what that sequence already holds of
  // the prompt is reused (multi-turn chat prefills only the new turn). Error: the model was
  // loaded without it (LoadOptions::single_sequence), as for prefill().
  Result<GenerateReply> generate(std::span<const int32_t> prompt, const GenerateParams& params,
                                 const TextCallback& on_text = {});
  // The same, with the reply split into reasoning, content and tool calls as it streams
  // (GenerateParams::extract_reasoning, parse_tool_calls).
  Result<GenerateReply> generate_reply(std::span<const int32_t> prompt,
                                       const GenerateParams& params, const ReplyCallback& on_reply);
  // The model's tool-call format as its chat template shows it: "hermes", "llama3_json",
  // "qwen_xml", "harmony", "gemma4" or "none"; and whether the template knows reasoning
  // (<think>, harmony's analysis channel, Gemma 4's thought channel).
  std::string tool_call_format() const;
  bool has_reasoning_format() const;
  // Puts `tokens` into that sequence without sampling (e.g. a finished chat turn as the template
  // renders it, so that the next turn's prompt shares it), reusing what it already holds.
  Result<PrefillReply> prefill(std::span<const int32_t> tokens);
  // Forgets what the sequence holds.
  void clear();
  // Writes what that sequence holds — its tokens and every layer's KV cells, with the model's
  // fingerprint and the cell type — to `path` (through `path`.tmp, renamed when complete), with
  // `app_data` beside it.
  Result<StateReply> save_state(const std::string& path, std::string_view app_data = {});
  // Replaces what the sequence holds by the state saved in `path`; the next generate() or
  // prefill() reuses the longest prefix its prompt shares with the state's tokens. Errors, with
  // the sequence left as it was: not a state file, another version, truncated or corrupt (the
  // checksum), saved from another model (the field that differs is named) or with another cell
  // type, more positions than n_ctx.
  Result<StateReply> load_state(const std::string& path);

  // A batch generator over this model (with a KV cache of its own); the model must outlive it.
  Result<std::unique_ptr<BatchGenerator>> batch_generator(const BatchOptions& options) const;
  // An embedder over this model (a KV cache of its own); the model must outlive it. Errors: an
  // unknown pooling name; a file whose pooling_type is none or rank when no pooling is given.
  Result<std::unique_ptr<Embedder>> embedder(const EmbedOptions& options = {}) const;
  // Whether the file is an embedding model: it sets <arch>.pooling_type (Qwen3-Embedding).
  bool is_embedding_model() const;
  // A reranker over this model (a KV cache of its own); the model must outlive it. Error: a
  // model that has neither a classifier head nor the yes/no method's tokens (named).
  Result<std::unique_ptr<Reranker>> reranker(const RerankOptions& options = {}) const;
  // Whether the file is a reranker: its pooling_type is rank (a classifier head).
  bool is_reranker() const;

  // Teacher-forced logits, computed as `minfer logits` computes them: `ids` fed at positions
  // 0 … n-1 of a sequence of their own (not generate()'s, nor a generator's), in forwards of
  // `batch` tokens (0: all at once), on the model's threads, with f32 KV cells unless
  // `cache_type` (else MINFER_CACHE_TYPE) names others. [n, n_vocab] row-major: row t holds the
  // logits after ids[t]. Safe to call from several threads at once. Errors: no ids, more ids
  // than the model's training context, an id outside the vocabulary, a bad cache type.
  Result<std::vector<float>> logits(std::span<const int32_t> ids, int64_t batch = 0,
                                    const std::string& cache_type = "") const;

  int64_t n_vocab() const;
  int64_t n_ctx() const;
  // "qwen3", "llama", …
  const std::string& architecture() const;
  // The file it was loaded from (of a split model, the first part).
  const std::string& path() const;
  // The model's shape and how it runs (kernels, threads, cache type, n_ctx), one fact per line.
  std::string describe() const;
  // The parameters a request starts from: the sampling the file recommends (general.sampling.temp,
  // top_k, top_p, min_p, penalty_last_n, penalty_repeat), else llama.cpp's; a random seed.
  GenerateParams default_params() const;
  // With LoadOptions::profile: time per op so far, as a table; otherwise empty.
  std::string profile_table() const;

 private:
  struct Impl;
  explicit LanguageModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
