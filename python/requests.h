// Python requests to the engine and the engine's replies as Python dicts: chat(), complete() and
// chat_many() keyword arguments checked and turned into GenerateParams (the shapes of OpenAI's
// chat and completion requests, llama-cpp-python's names), and events gathered into OpenAI's
// chat.completion / text_completion dicts and their stream chunks.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core.h"

namespace minfer::python {

enum class Endpoint { kChat, kCompletion };

// A request as the caller gave it: its prompt, its parameters and what the reply shows.
struct Request {
  Endpoint endpoint = Endpoint::kChat;
  std::vector<int32_t> prompt;
  GenerateParams params;
  bool stream = false;
  bool logprobs = false;  // the reply carries each token's logprob (and top_logprobs)
};

// chat(messages, **options): the messages rendered by the model's template (with `tools` and
// `chat_template_kwargs`), and the options. Raises TypeError for an unknown keyword or a value of
// the wrong type, minfer.InvalidArgumentError for a bad value (the engine's message).
Request chat_request(ModelCore& core, const py::object& messages, const py::dict& options);
// complete(prompt, **options): the prompt's tokens as `minfer run` makes them (BOS as the model
// asks, special tokens parsed), or the ids given.
Request completion_request(ModelCore& core, const py::object& prompt, const py::dict& options);

// The request's messages list and tools as the JSON text of an OpenAI chat request (what
// LanguageModel::tokenize_chat_request and render_chat_request take).
std::string chat_request_json(const py::object& messages, const py::object& tools,
                              const py::object& template_kwargs, bool add_generation_prompt);

// Gathers one request's events; builds the whole response or the stream's chunks.
class ReplyBuilder {
 public:
  ReplyBuilder(ModelCore& core, const Request& request);

  // A streamed event as a chunk dict (None when it has nothing to show); the last event's chunk
  // carries finish_reason, usage and timings. An event that ended in an engine error raises it.
  py::object chunk(const BatchEvent& event);
  // Every event of the request gathered (call add() for each); the last raises an engine error.
  void add(const BatchEvent& event);
  // The whole response, once the last event was added.
  py::dict response() const;

 private:
  py::dict envelope(const char* object) const;
  py::object logprobs_of(const std::vector<SampledToken>& tokens) const;

  ModelCore& core_;
  Endpoint endpoint_;
  bool logprobs_;
  std::string id_;
  int64_t created_;
  bool role_sent_ = false;
  // Gathered (add):
  std::string text_;
  std::string reasoning_;
  std::vector<ToolCall> tool_calls_;
  std::vector<SampledToken> tokens_;
  BatchEvent last_;
};

}  // namespace minfer::python
