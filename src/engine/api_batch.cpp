// The public API's batch generator (include/minfer/minfer.h) over the engine's Scheduler.
#include <algorithm>
#include <mutex>

#include "engine/api_impl.h"
#include "engine/scheduler.h"

namespace minfer {

namespace {

// The public event of one scheduler event.
BatchEvent batch_event(engine::RequestEvent&& e) {
  BatchEvent event;
  event.text = std::move(e.text);
  event.reasoning = std::move(e.reasoning);
  event.tool_calls = std::move(e.tool_calls);
  event.tokens = std::move(e.tokens);
  event.done = e.done;
  if (e.done) {
    event.finish = e.finish;
    event.finish_reason = e.error.is_ok() ? finish_reason_name(e.finish) : "error";
    if (!e.error.is_ok()) event.error = e.error.message();
    event.stop = std::move(e.stop);
    event.stats = e.stats;
  }
  return event;
}

}  // namespace

struct BatchGenerator::Impl {
  const Tokenizer* tokenizer = nullptr;
  std::unique_ptr<engine::Scheduler> scheduler;
  // The model's compiled grammars (json_object, GBNF), shared with its other generators.
  std::shared_ptr<grammar::RequestGrammars> grammars;
  chat::ReplyFormat reply_format;  // the model's, from its chat template
  std::string n_ctx_why;           // how n_ctx was chosen (engine::resolve_n_ctx)
};

BatchGenerator::BatchGenerator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchGenerator::~BatchGenerator() = default;

Result<std::unique_ptr<BatchGenerator>> LanguageModel::batch_generator(
    const BatchOptions& options) const {
  const engine::LoadedModel& loaded = impl_->loaded;
  engine::SchedulerOptions o;
  // The model's threads, cell type and (with no sequence of its own) observers.
  static_cast<engine::RuntimeOptions&>(o) = loaded.runtime;
  if (impl_->sequence != nullptr) o.observe = {};  // the one sequence's runtime has them
  o.n_parallel = options.n_parallel;
  // A default context fits the KV cells of every sequence in the budget, unless the caller gave
  // the budget in positions.
  const int64_t n_seq = options.n_ctx_total > 0 ? 1 : std::max(1, options.n_parallel);
  MINFER_ASSIGN_OR_RETURN(engine::ContextChoice ctx,
                          engine::resolve_n_ctx(*loaded.model, options.n_ctx, o.cache_type, n_seq));
  o.n_ctx = ctx.n_ctx;
  if (options.n_ctx == 0) {
    // A request needs room for its prompt and one generated token, and the context fits the
    // budget.
    o.n_ctx = std::max<int64_t>(2, o.n_ctx);
    if (options.n_ctx_total > 0) o.n_ctx = std::min(o.n_ctx, options.n_ctx_total);
  }
  o.n_ctx_total = options.n_ctx_total;
  o.token_budget = options.token_budget;
  o.block_size = options.block_size;
  o.max_queue = options.max_queue;
  o.prefix_cache = options.prefix_cache;
  o.keep_slots = options.keep_slots;
  o.draft_model = impl_->draft.model.get();  // LoadOptions::draft_model's, or null
  auto impl = std::make_unique<BatchGenerator::Impl>();
  impl->tokenizer = loaded.tokenizer.get();
  impl->grammars = impl_->grammars;
  impl->reply_format = impl_->reply_format;
  impl->n_ctx_why = std::move(ctx.why);
  MINFER_ASSIGN_OR_RETURN(impl->scheduler,
                          engine::Scheduler::create(*loaded.model, *loaded.tokenizer, o));
  return std::unique_ptr<BatchGenerator>(new BatchGenerator(std::move(impl)));
}

Result<std::shared_ptr<RequestHandle>> BatchGenerator::submit(
    std::span<const int32_t> prompt, const GenerateParams& params,
    std::function<void(const BatchEvent&)> on_event) {
  MINFER_ASSIGN_OR_RETURN(engine::RequestParams request,
                          engine_request(prompt, params, *impl_->grammars, impl_->reply_format,
                                         *impl_->tokenizer, impl_->scheduler->has_draft_model()));
  auto sink = [on_event = std::move(on_event)](engine::RequestEvent&& e) {
    if (on_event) on_event(batch_event(std::move(e)));
  };
  return impl_->scheduler->submit(std::move(request), std::move(sink));
}

std::future<Result<SlotReply>> BatchGenerator::slot_action(SlotAction action, int32_t id_slot,
                                                           const std::string& path) {
  auto promise = std::make_shared<std::promise<Result<SlotReply>>>();
  std::future<Result<SlotReply>> result = promise->get_future();
  impl_->scheduler->slot_action(action, id_slot, path, [promise](Result<SlotReply> reply) {
    promise->set_value(std::move(reply));
  });
  return result;
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

std::vector<SlotState> BatchGenerator::slots() const {
  return impl_->scheduler->slots();
}

BatchStats BatchGenerator::stats() const {
  return impl_->scheduler->stats();
}

int64_t BatchGenerator::n_ctx() const {
  return impl_->scheduler->options().n_ctx;
}

const std::string& BatchGenerator::n_ctx_reason() const {
  return impl_->n_ctx_why;
}

int BatchGenerator::n_parallel() const {
  return impl_->scheduler->options().n_parallel;
}

int64_t BatchGenerator::kv_positions() const {
  const KvCacheConfig& c = impl_->scheduler->cache().config();
  return c.max_blocks * c.block_size;
}

int BatchGenerator::n_threads() const {
  return impl_->scheduler->runtime().n_threads();
}

std::string BatchGenerator::profile_table() const {
  return impl_->scheduler->runtime().profile_table();
}

}  // namespace minfer
