// ReplyBuilder (requests.h): a request's events as OpenAI's chat.completion and text_completion
// dicts, their stream chunks, usage and llama-server's timings.
#include <pybind11/stl.h>

#include <atomic>
#include <ctime>

#include "requests.h"

namespace minfer::python {

namespace {

// OpenAI's finish_reason of the engine's.
const char* finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
    case FinishReason::kEog:
    case FinishReason::kStop:
    case FinishReason::kCancelled:
      break;
  }
  return "stop";
}

py::dict usage(const RequestStats& s) {
  py::dict u;
  u["prompt_tokens"] = s.n_prompt;
  u["completion_tokens"] = s.n_generated;
  u["total_tokens"] = s.n_prompt + s.n_generated;
  py::dict details;
  details["cached_tokens"] = s.n_cached;
  u["prompt_tokens_details"] = details;
  return u;
}

// llama-server's timings: the prompt from admission to the first token, the rest the reply.
py::dict timings(const RequestStats& s) {
  const int64_t n_prompt = s.n_prompt - s.n_cached;
  const double prompt_ms = std::max(0.0, s.ttft_ms - s.queue_ms);
  const double predicted_ms = std::max(0.0, s.total_ms - s.ttft_ms);
  auto per_second = [](double ms, int64_t n) {
    return ms > 0.0 ? 1000.0 * static_cast<double>(n) / ms : 0.0;
  };
  py::dict t;
  t["cache_n"] = s.n_cached;
  t["prompt_n"] = n_prompt;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_second"] = per_second(prompt_ms, n_prompt);
  t["predicted_n"] = s.n_generated;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_second"] = per_second(predicted_ms, s.n_generated);
  t["queue_ms"] = s.queue_ms;
  return t;
}

py::list tool_call_list(const std::vector<ToolCall>& calls) {
  py::list out;
  for (const ToolCall& c : calls) {
    py::dict function;
    function["name"] = to_str(c.name);
    function["arguments"] = to_str(c.arguments);
    py::dict call;
    call["id"] = to_str(c.id);
    call["type"] = "function";
    call["function"] = function;
    out.append(call);
  }
  return out;
}

py::list tool_call_deltas(const std::vector<ToolCallDelta>& deltas) {
  py::list out;
  for (const ToolCallDelta& d : deltas) {
    py::dict function;
    if (!d.name.empty()) function["name"] = to_str(d.name);
    function["arguments"] = to_str(d.arguments);
    py::dict call;
    call["index"] = d.index;
    if (!d.id.empty()) {
      call["id"] = to_str(d.id);
      call["type"] = "function";
    }
    call["function"] = function;
    out.append(call);
  }
  return out;
}

// "chatcmpl-…" / "cmpl-…": unique within the process.
std::string response_id(Endpoint endpoint) {
  static std::atomic<uint64_t> next{1};
  return (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + std::to_string(next.fetch_add(1)) +
         "-" + std::to_string(std::time(nullptr));
}

void raise_if_failed(const BatchEvent& event) {
  if (event.done && event.finish_reason == "error") {
    raise_status(Status(ErrorCode::kInternal, event.error));
  }
}

}  // namespace

ReplyBuilder::ReplyBuilder(ModelCore& core, const Request& request)
    : core_(core),
      endpoint_(request.endpoint),
      logprobs_(request.logprobs),
      id_(response_id(request.endpoint)),
      created_(static_cast<int64_t>(std::time(nullptr))) {}

py::dict ReplyBuilder::envelope(const char* object) const {
  py::dict d;
  d["id"] = id_;
  d["object"] = object;
  d["created"] = created_;
  d["model"] = core_.name();
  return d;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}; a completion: OpenAI's
// legacy {"tokens", "token_logprobs", "top_logprobs": [{piece: logprob}]}.
py::object ReplyBuilder::logprobs_of(const std::vector<SampledToken>& tokens) const {
  if (!logprobs_) return py::none();
  auto piece = [this](int32_t id) {
    Result<std::string> p = core_.model().token_piece(id);
    return p.is_ok() ? *p : std::string();
  };
  auto entry = [&](int32_t id, float logprob) {
    const std::string text = piece(id);
    py::dict e;
    e["token"] = to_str(text);
    e["logprob"] = logprob;
    e["bytes"] = std::vector<int>(text.begin(), text.end());
    return e;
  };
  py::dict out;
  if (endpoint_ == Endpoint::kChat) {
    py::list content;
    for (const SampledToken& t : tokens) {
      py::dict e = entry(t.token, t.logprob);
      py::list top;
      for (const TokenLogprob& alt : t.top) top.append(entry(alt.token, alt.logprob));
      e["top_logprobs"] = top;
      content.append(e);
    }
    out["content"] = content;
    return out;
  }
  py::list pieces, logprobs, tops;
  for (const SampledToken& t : tokens) {
    pieces.append(to_str(piece(t.token)));
    logprobs.append(t.logprob);
    py::dict top;
    for (const TokenLogprob& alt : t.top) top[to_str(piece(alt.token))] = alt.logprob;
    tops.append(top);
  }
  out["tokens"] = pieces;
  out["token_logprobs"] = logprobs;
  out["top_logprobs"] = tops;
  return out;
}

py::object ReplyBuilder::chunk(const BatchEvent& event) {
  raise_if_failed(event);
  const bool has_delta =
      !event.text.empty() || !event.reasoning.empty() || !event.tool_calls.empty();
  if (!has_delta && !event.done && !(logprobs_ && !event.tokens.empty())) return py::none();
  py::dict choice;
  choice["index"] = 0;
  if (endpoint_ == Endpoint::kChat) {
    py::dict delta;
    if (!role_sent_) delta["role"] = "assistant";
    role_sent_ = true;
    if (!event.text.empty()) delta["content"] = to_str(event.text);
    if (!event.reasoning.empty()) delta["reasoning_content"] = to_str(event.reasoning);
    if (!event.tool_calls.empty()) delta["tool_calls"] = tool_call_deltas(event.tool_calls);
    choice["delta"] = delta;
  } else {
    choice["text"] = to_str(event.text);
  }
  choice["logprobs"] = logprobs_of(event.tokens);
  choice["finish_reason"] =
      event.done ? py::object(py::str(finish_reason(event.finish))) : py::object(py::none());
  py::dict c = envelope(endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  py::list choices;
  choices.append(choice);
  c["choices"] = choices;
  if (event.done) {
    c["usage"] = usage(event.stats);
    c["timings"] = timings(event.stats);
  }
  return c;
}

void ReplyBuilder::add(const BatchEvent& event) {
  raise_if_failed(event);
  text_ += event.text;
  reasoning_ += event.reasoning;
  append_tool_calls(tool_calls_, event.tool_calls);
  tokens_.insert(tokens_.end(), event.tokens.begin(), event.tokens.end());
  if (event.done) last_ = event;
}

py::dict ReplyBuilder::response() const {
  py::dict choice;
  choice["index"] = 0;
  if (endpoint_ == Endpoint::kChat) {
    py::dict message;
    message["role"] = "assistant";
    message["content"] =
        text_.empty() && !tool_calls_.empty() ? py::object(py::none()) : py::object(to_str(text_));
    if (!reasoning_.empty()) message["reasoning_content"] = to_str(reasoning_);
    if (!tool_calls_.empty()) message["tool_calls"] = tool_call_list(tool_calls_);
    choice["message"] = message;
  } else {
    choice["text"] = to_str(text_);
  }
  choice["logprobs"] = logprobs_of(tokens_);
  choice["finish_reason"] = finish_reason(last_.finish);
  py::dict d = envelope(endpoint_ == Endpoint::kChat ? "chat.completion" : "text_completion");
  py::list choices;
  choices.append(choice);
  d["choices"] = choices;
  d["usage"] = usage(last_.stats);
  d["timings"] = timings(last_.stats);
  return d;
}

}  // namespace minfer::python
