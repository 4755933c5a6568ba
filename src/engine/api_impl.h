// What the public API's LanguageModel holds (include/minfer/minfer.h): shared by api.cpp (the
// model, chat), api_generate.cpp (generation on its one sequence), api_state.cpp (state files)
// and api_batch.cpp (the batch generator). Every way of generating goes through a Scheduler
// (DESIGN.md invariant 11): the one sequence is a scheduler of one slot stepped on the caller's
// thread.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "chat/chat_template.h"
#include "chat/reply_format.h"
#include "core/status.h"
#include "engine/conversation.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/setup.h"
#include "grammar/request_grammars.h"
#include "minfer/minfer.h"

namespace minfer {

struct LanguageModel::Impl {
  engine::LoadedModel loaded;
  // The model's chat template, or why it cannot be used: only what renders a chat fails on it,
  // so that a template minfer cannot run does not stop plain completion.
  Result<chat::ChatTemplate> chat_template;
  std::string path;
  // The constraints of json_object and grammar requests (compiled grammars shared by requests).
  std::shared_ptr<grammar::RequestGrammars> grammars;
  // The reply formats the template shows (none when there is no usable template).
  chat::ReplyFormat reply_format;
  // The file's general.sampling.* over llama.cpp's defaults (LanguageModel::default_params).
  SamplerParams sampling_defaults;
  // LoadOptions::draft_model's model and tokenizer (none: no model).
  engine::LoadedModel draft;
  // generate(), prefill() and the state files' one sequence: a scheduler of one slot that keeps
  // its cells between calls; null when loaded with single_sequence false.
  std::unique_ptr<engine::Scheduler> sequence;

  // Error for generate() / prefill() on a model loaded without its own sequence.
  Status need_sequence() const {
    if (sequence != nullptr) return Status::ok();
    return make_error(ErrorCode::kInvalidArgument,
                      "[api] '{}' was loaded without a sequence of its own "
                      "(LoadOptions::single_sequence false): use a batch generator",
                      path);
  }
};

// The engine's request for a public one — the one translation every way of generating shares:
// sampling, limits, stops, speculation (with a draft model every request drafts by it unless it
// asks for prompt lookup or turns speculation off), the constraint (json_object, a grammar, else
// the tools' calls) and the reply's split.
// The tokenizer reads the prompt's end (a forced tool call closes a <think> block it left open).
Result<engine::RequestParams> engine_request(std::span<const int32_t> prompt,
                                             const GenerateParams& params,
                                             grammar::RequestGrammars& grammars,
                                             const chat::ReplyFormat& format,
                                             const Tokenizer& tokenizer, bool has_draft_model);

}  // namespace minfer
