// What the public API's LanguageModel holds (include/minfer/minfer.h): shared by api.cpp
// (generation on one sequence, chat) and api_batch.cpp (the batch generator).
#pragma once

#include <string>

#include "chat/chat_template.h"
#include "chat/reply_format.h"
#include "core/status.h"
#include "engine/conversation.h"
#include "engine/request.h"
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
  // LoadOptions::draft_model's model and session (none: no session).
  engine::LoadedModel draft;

  // Error for generate() / prefill() on a model loaded without its own sequence.
  Status need_session() const {
    if (loaded.session != nullptr) return Status::ok();
    return make_error(ErrorCode::kInvalidArgument,
                      "[api] '{}' was loaded without a sequence of its own "
                      "(LoadOptions::single_sequence false): use a batch generator",
                      path);
  }
};

// A request's reply settings over the model's formats.
inline engine::ReplyRequest reply_request(const GenerateParams& params,
                                          const chat::ReplyFormat& format) {
  engine::ReplyRequest r;
  static_cast<ReplyParams&>(r) = params;
  r.format = format;
  r.parse_tool_calls = params.parse_tool_calls && params.tool_choice != ToolChoice::kNone;
  return r;
}

}  // namespace minfer
