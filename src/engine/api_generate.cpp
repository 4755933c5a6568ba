// The public API's generation on the model's one sequence (include/minfer/minfer.h:
// LanguageModel::generate, generate_reply, prefill, clear): each call submits one request to the
// one-slot scheduler and steps it on the caller's thread (DESIGN.md invariant 11), so run, chat
// and the server share every rule of generation. The slot keeps its cells between calls: the
// next prompt computes only what it does not share with them.
#include "engine/api_impl.h"
#include "engine/generation_metrics.h"
#include "engine/tool_grammar.h"

namespace minfer {

Result<engine::RequestParams> engine_request(std::span<const int32_t> prompt,
                                             const GenerateParams& params,
                                             grammar::RequestGrammars& grammars,
                                             const chat::ReplyFormat& format,
                                             const Tokenizer& tokenizer, bool has_draft_model) {
  engine::RequestParams request;
  request.prompt.assign(prompt.begin(), prompt.end());
  request.generate = params;
  request.format = format;
  request.spec_draft_model = has_draft_model && params.spec_ngram == 0 && params.draft_max > 0;
  // Each request gets its own matcher state over the shared compiled grammar.
  MINFER_ASSIGN_OR_RETURN(request.constraint,
                          grammars.constraint(params.json_object, params.grammar));
  // Tool calls follow the tools' schemas unless the request constrains its text otherwise.
  if (request.constraint == nullptr) {
    engine::ReplyRequest reply = request.reply();
    const bool forced =
        reply.tool_choice == ToolChoice::kRequired || reply.tool_choice == ToolChoice::kFunction;
    reply.prompt_opens_reasoning =
        forced && reply.format.reasoning && engine::prompt_opens_reasoning(tokenizer, prompt);
    MINFER_ASSIGN_OR_RETURN(request.constraint, engine::tool_call_constraint(grammars, reply));
  }
  return request;
}

namespace {

// What one request streamed, gathered into the public reply.
class ReplyCollector {
 public:
  explicit ReplyCollector(const ReplyCallback& on_reply) : on_reply_(on_reply) {}

  void set_handle(std::shared_ptr<RequestHandle> handle) { handle_ = std::move(handle); }

  void operator()(engine::RequestEvent&& e) {
    for (const SampledToken& t : e.tokens) reply_.tokens.push_back(t.token);
    ReplyDelta delta;
    delta.content = std::move(e.text);
    delta.reasoning = std::move(e.reasoning);
    delta.tool_calls = std::move(e.tool_calls);
    if (!delta.empty()) {
      reply_.text += delta.content;
      reply_.reasoning += delta.reasoning;
      append_tool_calls(reply_.tool_calls, delta.tool_calls);
      // The callback's false ends the request before its next token, as a cancel does.
      if (on_reply_ && !on_reply_(delta) && handle_ != nullptr) handle_->cancel();
    }
    if (!e.done) return;
    done_ = true;
    error_ = std::move(e.error);
    reply_.finish_reason = finish_reason_name(e.finish);
    reply_.finish_text = finish_reason_text(e.finish);
    reply_.stop = std::move(e.stop);
    const engine::GenerationMetrics m = engine::generation_metrics(e.stats, e.forwards);
    reply_.n_prompt = m.n_prompt;
    reply_.n_cached = m.n_reused;
    reply_.n_prefilled = m.n_prefilled;
    reply_.n_generated = m.n_generated;
    reply_.n_shifts = m.n_shifts;
    reply_.n_drafted = m.n_drafted;
    reply_.n_accepted = m.n_accepted;
    reply_.prefill_tok_s = m.prefill_tok_s();
    reply_.decode_tok_s = m.decode_tok_s();
    reply_.metrics = engine::format_metrics(m);
  }

  // The reply once the request ended; its error when it failed inside the engine.
  Result<GenerateReply> take() {
    if (!done_) {
      return make_error(ErrorCode::kInternal, "[api] the request ended without its last event");
    }
    if (!error_.is_ok()) return error_;
    return std::move(reply_);
  }

 private:
  const ReplyCallback& on_reply_;
  std::shared_ptr<RequestHandle> handle_;
  GenerateReply reply_;
  Status error_;
  bool done_ = false;
};

}  // namespace

Result<GenerateReply> LanguageModel::generate(std::span<const int32_t> prompt,
                                              const GenerateParams& params,
                                              const TextCallback& on_text) {
  ReplyCallback on_reply;
  if (on_text) {
    on_reply = [&on_text](const ReplyDelta& delta) {
      return delta.content.empty() || on_text(delta.content);
    };
  }
  return generate_reply(prompt, params, on_reply);
}

Result<GenerateReply> LanguageModel::generate_reply(std::span<const int32_t> prompt,
                                                    const GenerateParams& params,
                                                    const ReplyCallback& on_reply) {
  MINFER_RETURN_IF_ERROR(impl_->need_sequence());
  engine::Scheduler& sequence = *impl_->sequence;
  MINFER_ASSIGN_OR_RETURN(engine::RequestParams request,
                          engine_request(prompt, params, *impl_->grammars, impl_->reply_format,
                                         *impl_->loaded.tokenizer, sequence.has_draft_model()));
  auto collector = std::make_shared<ReplyCollector>(on_reply);
  MINFER_ASSIGN_OR_RETURN(
      std::shared_ptr<RequestHandle> handle,
      sequence.submit(std::move(request),
                      [collector](engine::RequestEvent&& e) { (*collector)(std::move(e)); }));
  collector->set_handle(std::move(handle));
  MINFER_RETURN_IF_ERROR(sequence.run_until_idle());
  return collector->take();
}

Result<PrefillReply> LanguageModel::prefill(std::span<const int32_t> tokens) {
  MINFER_RETURN_IF_ERROR(impl_->need_sequence());
  engine::RequestParams request;
  request.prompt.assign(tokens.begin(), tokens.end());
  request.generate.max_tokens = 0;  // the prompt alone: its cells stay in the slot
  RequestStats stats;
  Status error;
  MINFER_RETURN_IF_ERROR(impl_->sequence
                             ->submit(std::move(request),
                                      [&](engine::RequestEvent&& e) {
                                        if (!e.done) return;
                                        stats = e.stats;
                                        error = std::move(e.error);
                                      })
                             .status());
  MINFER_RETURN_IF_ERROR(impl_->sequence->run_until_idle());
  MINFER_RETURN_IF_ERROR(error);
  return PrefillReply{.n_reused = stats.n_cached, .n_prefilled = stats.n_prompt - stats.n_cached};
}

void LanguageModel::clear() {
  if (impl_->sequence != nullptr) impl_->sequence->slot_table().erase(0);
}

}  // namespace minfer
