// minfer's offline tools as a library, beside the generation API (minfer/minfer.h): describing a
// GGUF file, a tokenizer or a chat template without loading the model for generation,
// teacher-forced logits, perplexity and throughput, making, quantizing and splitting model files,
// and finding models by name (the Hugging Face Hub's cache, Ollama's store). The `minfer`
// commands of the same names are thin clients of this header. Errors are Status / Result<T>
// (core/status.h) whose messages name the component and what was expected.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "minfer/minfer.h"
#include "tools/gguf_split_model.h"  // split_gguf: GgufSplitOptions -> GgufSplitReport
#include "tools/offline_tools.h"     // make_model, quantize_model and the names their help lists

namespace minfer {

// ---- Looking inside a run (the --trace, --dump-graph and --profile flags) ----

// What a run of logits, perplexity or bench observes; MINFER_TRACE and MINFER_DUMP_DIR fill in
// what is left empty (as LoadOptions' fields of the same names do for generation).
struct ObserveOptions {
  std::string trace_path;  // one JSON line per forward step
  std::string dump_graph;  // the prefill and decode graphs (.dot or .json)
  bool profile = false;    // time per op, returned as a table
};

// ---- Describing files ----

struct GgufInfoOptions {
  std::string path;      // a GGUF file (the first part of a split model)
  bool tensors = false;  // also every tensor: name, type, shape, offset (and bytes in JSON)
  bool json = false;     // JSON instead of aligned "label value" lines
};
// The file's header, hyperparameters, tokenizer and tensor types, and whether minfer runs it
// (everything a model load checks) and can use its chat template (and why not) — as
// `minfer info` prints it, newline-terminated. Error: a file that cannot be read as GGUF.
Result<std::string> describe_gguf(const GgufInfoOptions& options);

// An architecture minfer runs and the model families it was tested with.
struct ArchitectureInfo {
  std::string name;  // general.architecture: "qwen3", "llama", …
  std::string tested_models;
};
std::vector<ArchitectureInfo> supported_architectures();

// ---- A model's tokenizer and chat template, from its file alone ----

struct TokenizeOptions {
  std::string model;           // a GGUF model or vocabulary-only file
  std::string text;            // tokenized as it is (no chat template)
  bool add_bos = true;         // the BOS token, when the model asks for one
  bool parse_special = false;  // match special tokens such as <|im_start|> in the text
};
struct TokenPiece {
  int32_t id = 0;
  std::string piece;  // the token's bytes (special tokens' text included; may be part of a
                      // UTF-8 character)
};
// The text's tokens as llama.cpp gives them (the tokenizer alone is loaded, not the weights).
Result<std::vector<TokenPiece>> tokenize_text(const TokenizeOptions& options);
// `piece` on one line with every byte visible: \n, \t, \r, \\ and \xHH for other control bytes
// and for bytes that are not part of a valid UTF-8 character; valid characters as they are.
std::string printable_piece(std::string_view piece);

struct ChatTemplateOptions {
  std::string model;         // a GGUF file
  std::string request_file;  // an OpenAI-style request body (messages, tools, …) as JSON
};
// The prompt the model's chat template (ChatML when it has none) renders for the request,
// exactly. Errors: the model or the request file cannot be read, the request is not JSON, the
// template cannot be used or fails to render (a message of one line).
Result<std::string> render_chat_template(const ChatTemplateOptions& options);

// ---- Measuring a model ----

struct LogitsOptions {
  std::string model;
  std::vector<int32_t> ids;  // fed at positions 0 … n-1 of one sequence (n ≤ n_ctx_train)
  std::string output;        // the file: float32 [n_ids, n_vocab], row t the logits after ids[t]
  int64_t batch = 0;         // tokens per forward; 0: all at once
  int n_threads = 0;         // ≤ 0: every core
  std::string
      cache_type;  // "f32" (default), "f16", "bf16", "q8_0"; empty: MINFER_CACHE_TYPE, else f32
  ObserveOptions observe;
};
// Teacher-forced logits, for comparing with other engines. Returns the per-op profile table
// (observe.profile; else ""). Errors: more ids than the training context, an unwritable output.
Result<std::string> write_logits(const LogitsOptions& options);

struct PerplexityOptions {
  std::string model;
  MapOptions map;                             // how the weights are held (mapped or read; locked)
  int64_t n_ctx = kDefaultPerplexityContext;  // tokens per chunk
  int64_t n_batch = kDefaultBatch;            // tokens per forward (capped at n_ctx)
  int64_t max_chunks = -1;                    // < 0: every chunk
  int n_threads = 0;                          // ≤ 0: every core
  std::string cache_type;                     // empty: MINFER_CACHE_TYPE, else f16
  // With f16 cells, attention in llama.cpp's CPU flash-attention arithmetic (llama-perplexity's
  // default); false: minfer's own attention.
  bool flash_attn = true;
  ObserveOptions observe;
};
struct PerplexityReport {
  int64_t n_tokens = 0;  // of the whole text, BOS included
  int64_t n_chunks = 0;
  int64_t n_ctx = 0;     // tokens per chunk
  int64_t n_scored = 0;  // tokens that entered the mean
  double ppl = 0.0;
  double ppl_error = 0.0;  // llama-perplexity's "+/-"
  double seconds = 0.0;
  std::string profile;  // the per-op table with observe.profile, else ""
};
// Perplexity of the model over `text` by llama-perplexity's method (chunks of n_ctx tokens
// starting with BOS, the second half of each scored); on_chunk(chunk from 1, n_chunks, running
// perplexity) after each chunk when given. Error: a text shorter than two chunks.
Result<PerplexityReport> compute_perplexity(
    const PerplexityOptions& options, std::string_view text,
    const std::function<void(int64_t, int64_t, double)>& on_chunk = {});

struct BenchOptions {
  std::string model;
  MapOptions map;  // how the weights are held (mapped or read; locked)
  // llama-bench's comma lists ("128,512"); every combination is one test. Empty n_threads: every
  // core.
  std::string n_prompt = "512";  // pp tests (0: none)
  std::string n_gen = "128";     // tg tests (0: none)
  std::string n_depth = "0";     // tokens already in the KV cache when each test begins
  std::string n_threads;
  int64_t n_batch = kDefaultBenchBatch;        // tokens per prompt forward
  int repetitions = kDefaultBenchRepetitions;  // timed runs per test, after a warm-up
  std::string cache_type;                      // empty: MINFER_CACHE_TYPE, else f16
  bool json = false;                           // a JSON array instead of markdown
  bool roofline = false;                       // also the read bandwidth and decode roofline
  bool interleave = false;                     // each thread count's tests in rounds
  // Speculative rows beside plain decoding: prompt lookup of spec_ngram tokens, and/or a draft
  // model of the same vocabulary; the prompt they continue (empty: a random text that repeats).
  int spec_ngram = 0;
  std::string draft_model;
  int draft_max = 16;
  std::string spec_prompt;
  ObserveOptions observe;
};
struct BenchResult {
  std::string table;    // llama-bench's markdown table, or its JSON
  std::string profile;  // the per-op table with observe.profile, else ""
};
// Prompt-processing and generation throughput as llama-bench measures them (tokens/s, mean ± sd).
// Errors: a bad list item, too many threads, a model or draft that does not load.
Result<BenchResult> run_bench(const BenchOptions& options);

// ---- Finding a model by name ----

// The local GGUF file to load for `model` ("ollama:NAME[:TAG]" → the blob in Ollama's store,
// $OLLAMA_MODELS or ~/.ollama/models; a path as it is), or,
// when `model` is empty, for the Hugging Face repository `hf_repo` (REPO[:QUANT]), downloaded into
// the shared cache first when missing (offline, or HF_HUB_OFFLINE=1: the cache only).
struct ModelSource {
  std::string model;
  std::string hf_repo;
  bool offline = false;
};
Result<std::string> resolve_model_source(const ModelSource& source);

// The Hugging Face cache shared with huggingface_hub and llama.cpp: $HF_HUB_CACHE, else
// $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string hub_cache_dir();
// A .gguf file in that cache.
struct CachedModel {
  std::string repo;        // "org/name"
  std::string file;        // its path inside the repository
  uint64_t size = 0;       // bytes
  std::string local_path;  // where it is on disk (its snapshot's link)
};
// Every .gguf file in the cache, by repository then path (a file in several snapshots: once per
// snapshot, by commit hash).
std::vector<CachedModel> hub_cached_models();
struct HubPullReport {
  bool cached = false;             // already there: nothing was downloaded
  std::vector<std::string> files;  // the repository's files of the model (a split model's parts)
  uint64_t bytes = 0;
  std::string path;  // the file to load (the first part)
};
// REPO[:QUANT] downloaded into the cache (nothing when it is there); HF_ENDPOINT, HF_TOKEN and
// HF_HUB_OFFLINE are honoured, `offline` as the last.
Result<HubPullReport> hub_pull(const std::string& model, bool offline);
// Removes REPO:QUANT's files (without :QUANT, the whole repository) from the cache; returns the
// repository paths removed. Error: nothing matched.
Result<std::vector<std::string>> hub_remove(const std::string& model);

}  // namespace minfer
