// The public API (include/minfer/minfer.h) over the engine: LanguageModel holds the model, its
// tokenizer, chat template and its one sequence (generation: api_generate.cpp; state files:
// api_state.cpp); Chat wraps a Conversation. BatchGenerator is in api_batch.cpp.
#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

#include "core/input_limits.h"
#include "core/json_nesting.h"
#include "engine/api_impl.h"
#include "engine/speculative.h"
#include "grammar/json_schema.h"
#include "models/model_config.h"

namespace minfer {

namespace {

// `text` parsed as JSON (discarded when it is not JSON), after checking its shape against the
// JSON limits (`what` names it in the error).
Result<nlohmann::ordered_json> parse_json(std::string_view text, std::string_view what) {
  if (const auto why = json_shape_error(text)) {
    return make_error(ErrorCode::kInvalidArgument, "{} {}", what, *why);
  }
  return nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
}

nlohmann::ordered_json messages_json(const std::vector<ChatMessage>& messages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

// An integer general.sampling.* key at least `lo`, else `fallback` when the file lacks it.
Result<int32_t> read_sampling_integer(const GgufFile& file, const std::string& key, int32_t lo,
                                      int32_t fallback) {
  if (!file.has(key)) return fallback;
  MINFER_ASSIGN_OR_RETURN(int64_t v, file.get_integer(key));
  if (v < lo || v > INT32_MAX) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected {} to {}",
                      file.name(), key, v, lo, INT32_MAX);
  }
  return static_cast<int32_t>(v);
}

// The sampling the model's authors recommend (general.sampling.*, which llama.cpp's converters
// write from generation_config.json), over llama.cpp's defaults for what the file does not set;
// the seed stays random. The other general.sampling keys (sequence, xtc_*, mirostat*) name
// samplers minfer does not have and are left alone.
Result<SamplerParams> read_sampling_defaults(const GgufFile& file) {
  SamplerParams d;
  const std::string p = "general.sampling.";
  MINFER_ASSIGN_OR_RETURN(d.temperature, read_float_or(file, p + "temp", d.temperature));
  MINFER_ASSIGN_OR_RETURN(d.top_k, read_sampling_integer(file, p + "top_k", INT32_MIN, d.top_k));
  MINFER_ASSIGN_OR_RETURN(d.top_p, read_float_or(file, p + "top_p", d.top_p));
  MINFER_ASSIGN_OR_RETURN(d.min_p, read_float_or(file, p + "min_p", d.min_p));
  MINFER_ASSIGN_OR_RETURN(d.repeat_last_n,
                          read_sampling_integer(file, p + "penalty_last_n", -1, d.repeat_last_n));
  MINFER_ASSIGN_OR_RETURN(d.repeat_penalty,
                          read_float_or(file, p + "penalty_repeat", d.repeat_penalty));
  if (d.repeat_penalty <= 0.0f) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': key '{}penalty_repeat' is {}, expected > 0", file.name(), p,
                      d.repeat_penalty);
  }
  return d;
}

}  // namespace

LanguageModel::LanguageModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LanguageModel::~LanguageModel() = default;

namespace {

// A draft model and its vocabulary, which must be the target's. The schedulers that draft with it
// (SchedulerOptions::draft_model) give it a runtime of their own with their context, threads and
// cache type.
Result<engine::LoadedModel> load_draft(const std::string& path, engine::ModelOptions options,
                                       const engine::LoadedModel& target) {
  options.path = path;
  options.n_ctx = target.runtime.n_ctx;
  options.observe = {};
  MINFER_ASSIGN_OR_RETURN(engine::LoadedModel draft, engine::load_for_generation(options));
  if (Status s = engine::check_draft_vocabulary(*target.tokenizer, *draft.tokenizer); !s.is_ok()) {
    return make_error(s.code(), "{} ('{}')", s.message(), path);
  }
  return draft;
}

// The model's one sequence: a scheduler of one slot whose cells stay between requests (only the
// prefix a new prompt shares with them is kept), prompts computed in chunks of n_batch.
Result<std::unique_ptr<engine::Scheduler>> one_sequence(const engine::LoadedModel& loaded,
                                                        const Model* draft_model) {
  engine::SchedulerOptions o;
  static_cast<engine::RuntimeOptions&>(o) = loaded.runtime;
  o.n_parallel = 1;
  o.n_ctx_total = o.n_ctx;
  o.token_budget = loaded.n_batch;
  o.keep_slots = true;
  o.prefix_cache = false;  // the slot keeps what a next prompt can share
  o.draft_model = draft_model;
  return engine::Scheduler::create(*loaded.model, *loaded.tokenizer, o);
}

}  // namespace

Result<std::unique_ptr<LanguageModel>> LanguageModel::load(const std::string& path,
                                                           const LoadOptions& options) {
  engine::ModelOptions o;
  o.path = path;
  o.n_ctx = options.n_ctx;
  o.n_batch = options.n_batch;
  o.n_threads = options.n_threads;
  o.cache_type = options.cache_type;
  o.observe.trace_path = options.trace_path;
  o.observe.dump_graph = options.dump_graph;
  o.observe.profile = options.profile;
  o.map.use_mmap = options.use_mmap;
  o.map.use_mlock = options.use_mlock;
  MINFER_ASSIGN_OR_RETURN(engine::LoadedModel loaded, engine::load_for_generation(o));
  MINFER_ASSIGN_OR_RETURN(SamplerParams sampling, read_sampling_defaults(loaded.model->file()));
  Result<chat::ChatTemplate> tmpl = engine::load_chat_template(loaded.model->file());
  auto grammars = std::make_shared<grammar::RequestGrammars>(*loaded.tokenizer);
  auto impl = std::make_unique<Impl>(Impl{std::move(loaded),
                                          std::move(tmpl),
                                          path,
                                          std::move(grammars),
                                          {},
                                          std::move(sampling),
                                          {},
                                          {}});
  if (impl->chat_template.is_ok()) {
    impl->reply_format = chat::detect_reply_format(impl->chat_template->source());
  }
  if (!options.draft_model.empty()) {
    MINFER_ASSIGN_OR_RETURN(impl->draft, load_draft(options.draft_model, o, impl->loaded));
    impl->draft.model->drop_vocabulary();
  }
  if (options.single_sequence) {
    MINFER_ASSIGN_OR_RETURN(impl->sequence, one_sequence(impl->loaded, impl->draft.model.get()));
  }
  // The tokenizers and the chat template hold what they read of the vocabulary.
  impl->loaded.model->drop_vocabulary();
  return std::unique_ptr<LanguageModel>(new LanguageModel(std::move(impl)));
}

std::vector<int32_t> LanguageModel::tokenize(std::string_view text, bool add_special,
                                             bool parse_special) const {
  return impl_->loaded.tokenizer->encode(text, add_special, parse_special);
}

Result<std::string> LanguageModel::detokenize(std::span<const int32_t> ids) const {
  MINFER_RETURN_IF_ERROR(impl_->loaded.tokenizer->check_ids(ids));
  return impl_->loaded.tokenizer->decode(ids);
}

Result<std::string> LanguageModel::render_chat(const std::vector<ChatMessage>& messages,
                                               bool add_generation_prompt) const {
  MINFER_RETURN_IF_ERROR(impl_->chat_template.status());
  return impl_->chat_template->render(messages_json(messages), nullptr, add_generation_prompt,
                                      nlohmann::ordered_json::object());
}

Result<std::vector<int32_t>> LanguageModel::tokenize_chat(
    const std::vector<ChatMessage>& messages) const {
  MINFER_ASSIGN_OR_RETURN(std::string text, render_chat(messages, true));
  return engine::tokenize_chat_prompt(*impl_->loaded.tokenizer, text);
}

Result<std::string> LanguageModel::render_chat_request(std::string_view request_json) const {
  MINFER_RETURN_IF_ERROR(impl_->chat_template.status());
  MINFER_ASSIGN_OR_RETURN(const nlohmann::ordered_json request,
                          parse_json(request_json, "[api] the chat request"));
  if (request.is_discarded() || !request.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[api] a chat request must be a JSON object with 'messages'");
  }
  return impl_->chat_template->render_request(request);
}

Result<std::vector<int32_t>> LanguageModel::tokenize_chat_request(
    std::string_view request_json) const {
  MINFER_ASSIGN_OR_RETURN(std::string text, render_chat_request(request_json));
  return engine::tokenize_chat_prompt(*impl_->loaded.tokenizer, text);
}

Result<std::string> LanguageModel::chat_template() const {
  MINFER_RETURN_IF_ERROR(impl_->chat_template.status());
  return impl_->chat_template->source();
}

const std::string& LanguageModel::path() const {
  return impl_->path;
}

Result<std::string> LanguageModel::token_piece(int32_t id) const {
  const std::array<int32_t, 1> ids = {id};
  MINFER_RETURN_IF_ERROR(impl_->loaded.tokenizer->check_ids(ids));
  return impl_->loaded.tokenizer->token_to_piece(id);
}

Status check_grammar(std::string_view gbnf) {
  return grammar::parse_gbnf(gbnf).status();
}

std::optional<ToolChoice> tool_choice_from_string(std::string_view s) {
  if (s == "none") return ToolChoice::kNone;
  if (s == "auto") return ToolChoice::kAuto;
  if (s == "required") return ToolChoice::kRequired;
  return std::nullopt;
}

Result<std::string> json_schema_grammar(std::string_view schema) {
  MINFER_ASSIGN_OR_RETURN(const nlohmann::ordered_json parsed,
                          parse_json(schema, "[json_schema] the schema"));
  if (parsed.is_discarded()) {
    return make_error(ErrorCode::kInvalidArgument, "[json_schema] the schema is not valid JSON");
  }
  return grammar::json_schema_to_gbnf(parsed);
}

std::string LanguageModel::tool_call_format() const {
  return chat::tool_call_format_name(impl_->reply_format.tool_calls);
}

bool LanguageModel::has_reasoning_format() const {
  return impl_->reply_format.reasoning;
}

int64_t LanguageModel::n_vocab() const {
  return impl_->loaded.model->config().n_vocab;
}

int64_t LanguageModel::n_ctx() const {
  return impl_->loaded.runtime.n_ctx;
}

const std::string& LanguageModel::architecture() const {
  return impl_->loaded.model->config().arch;
}

GenerateParams LanguageModel::default_params() const {
  GenerateParams p;
  static_cast<SamplerParams&>(p) = impl_->sampling_defaults;
  return p;
}

std::string LanguageModel::describe() const {
  return engine::describe_setup(impl_->loaded, impl_->path,
                                impl_->sequence != nullptr ? &impl_->sequence->runtime() : nullptr);
}

std::string LanguageModel::profile_table() const {
  if (impl_->sequence == nullptr) return "";
  return impl_->sequence->runtime().profile_table();
}

struct Chat::Impl {
  engine::Conversation conversation;
};

Chat::Chat(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Chat::~Chat() = default;

Result<std::unique_ptr<Chat>> LanguageModel::start_chat(std::string system) const {
  MINFER_RETURN_IF_ERROR(impl_->chat_template.status());
  auto impl = std::make_unique<Chat::Impl>(Chat::Impl{
      engine::Conversation(*impl_->chat_template, *impl_->loaded.tokenizer, std::move(system))});
  return std::unique_ptr<Chat>(new Chat(std::move(impl)));
}

void Chat::add_user(std::string text) {
  impl_->conversation.add_user(std::move(text));
}

void Chat::add_assistant(std::string text) {
  impl_->conversation.add_assistant(std::move(text));
}

void Chat::add_assistant(std::string text, const std::vector<ToolCall>& calls) {
  nlohmann::ordered_json tool_calls = nlohmann::ordered_json::array();
  for (const ToolCall& c : calls) {
    // Templates write the arguments with tojson: an object when the model's text parses.
    Result<nlohmann::ordered_json> parsed = parse_json(c.arguments, "[chat] tool call arguments");
    nlohmann::ordered_json arguments = c.arguments;
    if (parsed.is_ok() && !parsed->is_discarded()) arguments = std::move(parsed).value();
    tool_calls.push_back({{"id", c.id},
                          {"type", "function"},
                          {"function", {{"name", c.name}, {"arguments", std::move(arguments)}}}});
  }
  impl_->conversation.add_assistant(std::move(text), std::move(tool_calls));
}

void Chat::add_tool_result(std::string call_id, std::string name, std::string content) {
  impl_->conversation.add_tool_result(std::move(call_id), std::move(name), std::move(content));
}

Status Chat::set_tools(std::string_view tools_json) {
  if (tools_json.empty()) {
    impl_->conversation.set_tools(nullptr);
    return Status::ok();
  }
  MINFER_ASSIGN_OR_RETURN(nlohmann::ordered_json tools, parse_json(tools_json, "[chat] the tools"));
  const bool objects = tools.is_array() && std::all_of(tools.begin(), tools.end(),
                                                       [](const auto& t) { return t.is_object(); });
  if (!objects) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] the tools must be a JSON array of objects (OpenAI's tools)");
  }
  if (tools.size() > limits::kMaxTools) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] {} tools; the limit is {}", tools.size(),
                      limits::kMaxTools);
  }
  impl_->conversation.set_tools(std::move(tools));
  return Status::ok();
}

bool Chat::pop_last(std::string_view role) {
  return impl_->conversation.pop_last(role);
}

void Chat::clear() {
  impl_->conversation.clear();
}

bool Chat::drop_oldest_turn() {
  return impl_->conversation.drop_oldest_turn();
}

int64_t Chat::n_turns() const {
  return impl_->conversation.n_turns();
}

Result<std::string> Chat::render(bool add_generation_prompt) const {
  return impl_->conversation.render(add_generation_prompt);
}

Result<std::vector<int32_t>> Chat::tokens(bool add_generation_prompt) const {
  return impl_->conversation.tokens(add_generation_prompt);
}

std::string Chat::messages_json() const {
  return impl_->conversation.messages().dump();
}

Status Chat::set_messages_json(std::string_view json) {
  MINFER_ASSIGN_OR_RETURN(const nlohmann::ordered_json parsed,
                          parse_json(json, "[chat] the messages"));
  if (parsed.is_discarded()) {
    return make_error(ErrorCode::kInvalidArgument, "[chat] the messages are not valid JSON");
  }
  return impl_->conversation.set_messages(parsed);
}

}  // namespace minfer
