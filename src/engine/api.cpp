// The public API (include/minfer/minfer.h) over the engine: LanguageModel holds the model, its
// tokenizer, chat template and a Session; BatchGenerator wraps a Scheduler.
#include "minfer/minfer.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/conversation.h"
#include "engine/generate.h"
#include "engine/scheduler.h"
#include "engine/setup.h"

namespace minfer {

namespace {

SamplerParams sampler_params(const GenerateParams& p) {
  SamplerParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.repeat_penalty = p.repeat_penalty;
  s.repeat_last_n = p.repeat_last_n;
  s.presence_penalty = p.presence_penalty;
  s.frequency_penalty = p.frequency_penalty;
  s.logit_bias = p.logit_bias;
  s.seed = p.seed;
  return s;
}

GenerateReply generate_reply(engine::GenerateResult r) {
  const engine::GenerationMetrics& m = r.metrics;
  GenerateReply reply;
  reply.text = std::move(r.text);
  reply.tokens = std::move(r.tokens);
  reply.finish_reason = engine::finish_reason_name(r.finish);
  reply.finish_text = engine::finish_reason_text(r.finish);
  reply.stop = std::move(r.stop);
  reply.n_prompt = m.n_prompt;
  reply.n_cached = m.n_reused;
  reply.n_prefilled = m.n_prefilled;
  reply.n_generated = m.n_generated;
  reply.prefill_tok_s = m.prefill_tok_s();
  reply.decode_tok_s = m.decode_tok_s();
  reply.metrics = engine::format_metrics(m);
  return reply;
}

nlohmann::ordered_json messages_json(const std::vector<ChatMessage>& messages) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

}  // namespace

struct LanguageModel::Impl {
  engine::LoadedModel loaded;
  // The model's chat template, or why it cannot be used: only what renders a chat fails on it,
  // so that a template minfer cannot run does not stop plain completion.
  Result<chat::ChatTemplate> chat_template;
  std::string path;
};

LanguageModel::LanguageModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LanguageModel::~LanguageModel() = default;

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
  MINFER_ASSIGN_OR_RETURN(engine::LoadedModel loaded, engine::load_for_generation(o));
  Result<chat::ChatTemplate> tmpl = engine::load_chat_template(loaded.model->file());
  auto impl = std::make_unique<Impl>(Impl{std::move(loaded), std::move(tmpl), path});
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

Result<GenerateReply> LanguageModel::generate(std::span<const int32_t> prompt,
                                              const GenerateParams& params,
                                              const TextCallback& on_text) {
  engine::GenerateOptions options;
  options.sampling = sampler_params(params);
  options.n_predict = params.max_tokens;
  options.stops = params.stop;
  options.trace = impl_->loaded.session->runtime().trace();
  options.cancel = params.cancel;
  MINFER_ASSIGN_OR_RETURN(
      engine::GenerateResult r,
      engine::generate(*impl_->loaded.session, *impl_->loaded.tokenizer, prompt, options, on_text));
  return generate_reply(std::move(r));
}

Result<PrefillReply> LanguageModel::prefill(std::span<const int32_t> tokens) {
  engine::Session& session = *impl_->loaded.session;
  MINFER_RETURN_IF_ERROR(session.set_prompt(tokens).status());
  return PrefillReply{.n_reused = session.last_prefill().n_reused,
                      .n_prefilled = session.last_prefill().n_prefilled};
}

void LanguageModel::clear() {
  impl_->loaded.session->clear();
}

int64_t LanguageModel::n_vocab() const {
  return impl_->loaded.model->config().n_vocab;
}

int64_t LanguageModel::n_ctx() const {
  return impl_->loaded.session->n_ctx();
}

const std::string& LanguageModel::architecture() const {
  return impl_->loaded.model->config().arch;
}

std::string LanguageModel::describe() const {
  return engine::describe_setup(impl_->loaded, impl_->path);
}

std::string LanguageModel::profile_table() const {
  return impl_->loaded.session->runtime().profile_table();
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

struct BatchGenerator::Impl {
  std::unique_ptr<engine::Scheduler> scheduler;
};

BatchGenerator::BatchGenerator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchGenerator::~BatchGenerator() = default;

Result<std::unique_ptr<BatchGenerator>> LanguageModel::batch_generator(
    const BatchOptions& options) const {
  const engine::Session& session = *impl_->loaded.session;
  engine::SchedulerOptions o;
  o.n_parallel = options.n_parallel;
  MINFER_ASSIGN_OR_RETURN(o.n_ctx, engine::resolve_n_ctx(*impl_->loaded.model, options.n_ctx));
  o.n_ctx_total = options.n_ctx_total;
  o.token_budget = options.token_budget;
  o.cache_type = session.cache_type();
  o.n_threads = session.n_threads();
  auto impl = std::make_unique<BatchGenerator::Impl>();
  MINFER_ASSIGN_OR_RETURN(impl->scheduler, engine::Scheduler::create(*impl_->loaded.model,
                                                                     *impl_->loaded.tokenizer, o));
  return std::unique_ptr<BatchGenerator>(new BatchGenerator(std::move(impl)));
}

Result<int64_t> BatchGenerator::submit(std::span<const int32_t> prompt,
                                       const GenerateParams& params,
                                       std::function<void(const BatchEvent&)> on_event) {
  engine::RequestParams request;
  request.prompt.assign(prompt.begin(), prompt.end());
  request.sampling = sampler_params(params);
  request.max_tokens = params.max_tokens;
  request.stops = params.stop;
  auto sink = [on_event = std::move(on_event)](engine::RequestEvent&& e) {
    BatchEvent event;
    event.text = std::move(e.text);
    event.done = e.done;
    if (e.done) {
      event.finish_reason = e.error.is_ok() ? engine::finish_reason_name(e.finish) : "error";
      if (!e.error.is_ok()) event.error = e.error.message();
    }
    if (on_event) on_event(event);
  };
  MINFER_ASSIGN_OR_RETURN(std::shared_ptr<engine::RequestHandle> handle,
                          impl_->scheduler->submit(std::move(request), std::move(sink)));
  return handle->id();
}

Status BatchGenerator::run_until_idle() {
  return impl_->scheduler->run_until_idle();
}

void BatchGenerator::start() {
  impl_->scheduler->start();
}

void BatchGenerator::stop() {
  impl_->scheduler->stop();
}

}  // namespace minfer
