#include "engine/reply_parser.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/reply_markers.h"

namespace minfer {

void append_tool_calls(std::vector<ToolCall>& calls, const std::vector<ToolCallDelta>& deltas) {
  for (const ToolCallDelta& d : deltas) {
    if (d.index < 0) continue;
    if (static_cast<size_t>(d.index) >= calls.size())
      calls.resize(static_cast<size_t>(d.index) + 1);
    ToolCall& call = calls[static_cast<size_t>(d.index)];
    if (!d.id.empty()) call.id = d.id;
    if (!d.name.empty()) call.name = d.name;
    call.arguments += d.arguments;
  }
}

}  // namespace minfer

namespace minfer::engine {

namespace {

constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) {
  return is_reply_space(c);
}

size_t skip_spaces(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

// How much of the end of `text` to hold back: a possible start of `marker`, with the whitespace
// before it (whitespace next to a marker is not part of the text around it).
size_t held_tail(std::string_view text, std::string_view marker) {
  size_t held = partial_marker(text, marker);
  while (held < text.size() && is_space(text[text.size() - held - 1])) ++held;
  return held;
}

std::string_view trim_right(std::string_view text) {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// What the start of a call's JSON object says so far.
struct CallHeader {
  enum class State { kNeedMore, kFail, kOk } state = State::kNeedMore;
  std::string name;
  size_t arguments_at = 0;  // kOk: where the arguments' "{" is
};

CallHeader failed() {
  CallHeader h;
  h.state = CallHeader::State::kFail;
  return h;
}

// A JSON string starting at text[pos] ('"'); nullopt when it does not end within text. `end`
// gets the position after its closing quote.
std::optional<std::string> read_string(std::string_view text, size_t pos, size_t& end) {
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      end = i + 1;
      const auto value = nlohmann::json::parse(text.substr(pos, end - pos), nullptr, false);
      return value.is_string() ? value.get<std::string>() : std::string();
    }
  }
  return std::nullopt;
}

// Reads {"name": "…", "arguments": { (or "parameters"; a "type": "function" pair may come
// first, as Llama 3.2 writes it) from the start of `text`.
CallHeader read_call_header(std::string_view text) {
  CallHeader h;
  size_t pos = skip_spaces(text, 0);
  if (pos >= text.size()) return h;
  if (text[pos] != '{') return failed();
  ++pos;
  while (true) {
    pos = skip_spaces(text, pos);
    if (pos >= text.size()) return h;
    if (text[pos] != '"') return failed();
    size_t end = 0;
    const std::optional<std::string> key = read_string(text, pos, end);
    if (!key.has_value()) return h;
    pos = skip_spaces(text, end);
    if (pos >= text.size()) return h;
    if (text[pos] != ':') return failed();
    pos = skip_spaces(text, pos + 1);
    if (pos >= text.size()) return h;
    if (*key == "arguments" || *key == "parameters") {
      if (h.name.empty() || text[pos] != '{') return failed();
      h.state = CallHeader::State::kOk;
      h.arguments_at = pos;
      return h;
    }
    if ((*key != "name" && *key != "type") || text[pos] != '"') return failed();
    const std::optional<std::string> value = read_string(text, pos, end);
    if (!value.has_value()) return h;
    if (*key == "name") h.name = *value;
    pos = skip_spaces(text, end);
    if (pos >= text.size()) return h;
    if (text[pos] != ',') return failed();
    ++pos;
  }
}

// Reads <function=NAME> (after the whitespace that follows <tool_call>) from the start of `text`;
// the arguments start after its '>'.
CallHeader read_xml_call_header(std::string_view text) {
  CallHeader h;
  const size_t pos = skip_spaces(text, 0);
  const std::string_view rest = text.substr(pos);
  if (!rest.starts_with(kXmlFunctionOpen)) {
    return kXmlFunctionOpen.starts_with(rest) ? h : failed();
  }
  const size_t name_at = pos + kXmlFunctionOpen.size();
  const size_t name_end = text.find_first_of("<>\n", name_at);
  if (name_end == std::string_view::npos) return h;
  if (text[name_end] != '>' || name_end == name_at) return failed();
  h.state = CallHeader::State::kOk;
  h.name = std::string(text.substr(name_at, name_end - name_at));
  h.arguments_at = name_end + 1;
  return h;
}

// Characters that may stand outside strings in JSON: structure, numbers, true/false/null.
bool json_bare_char(char c) {
  return is_space(c) || c == ':' || c == ',' || c == '-' || c == '+' || c == '.' ||
         (c >= '0' && c <= '9') || c == 'e' || c == 'E' || c == 't' || c == 'r' || c == 'u' ||
         c == 'f' || c == 'a' || c == 'l' || c == 's' || c == 'n';
}

}  // namespace

void append_delta(ReplyDelta& into, ReplyDelta&& more) {
  into.reasoning += more.reasoning;
  into.content += more.content;
  for (ToolCallDelta& d : more.tool_calls) {
    // A fragment joins the fragment before it of the same call; a call's first piece (id and
    // name, arguments "") stays apart, as OpenAI's first chunk of a call is.
    if (!into.tool_calls.empty() && into.tool_calls.back().index == d.index && d.id.empty() &&
        into.tool_calls.back().id.empty()) {
      into.tool_calls.back().arguments += d.arguments;
    } else {
      into.tool_calls.push_back(std::move(d));
    }
  }
}

ReplyParser::ReplyParser(ReplyParserOptions options)
    : options_(options),
      active_(options.tool_calls != chat::ToolCallFormat::kNone || options.extract_reasoning),
      ids_(options.id_seed != 0 ? options.id_seed : std::random_device{}()) {
  if (options_.channels != chat::ChannelFormat::kNone) {
    const ChannelReplyOptions channel_options{
        .return_calls =
            options_.tool_calls != chat::ToolCallFormat::kNone && !options_.drop_tool_calls,
        .extract_reasoning = options_.extract_reasoning,
        .id_seed = options_.id_seed};
    channels_ = options_.channels == chat::ChannelFormat::kHarmony
                    ? make_harmony_parser(channel_options)
                    : make_gemma4_parser(channel_options);
    active_ = true;
  }
  if (options_.extract_reasoning && options_.starts_in_reasoning) {
    mode_ = Mode::kReasoning;
    trim_leading_ = true;
  }
}

ReplyDelta ReplyParser::push(std::string_view text) {
  ReplyDelta out;
  if (!active_) {
    out.content = std::string(text);
    return out;
  }
  if (channels_ != nullptr) return channels_->push(text);
  pending_ += text;
  while (step(out, false)) {
  }
  return out;
}

ReplyDelta ReplyParser::finish() {
  ReplyDelta out;
  if (!active_) return out;
  if (channels_ != nullptr) return channels_->finish();
  while (step(out, true)) {
  }
  // What is left was waiting for text that will not come.
  switch (mode_) {
    case Mode::kReasoning:
      out.reasoning += trim_right(pending_);
      break;
    case Mode::kCallHeader:  // a call's start, cut short: not content
      break;
    case Mode::kArguments:  // cut short: the call is dropped
    case Mode::kXmlBody:
      end_call(out, false);
      break;
    case Mode::kCallEnd:
      break;
    default: {
      // A marker's beginning at the very end ("<tool_cal", "<|python_ta") is markup cut short.
      std::string_view rest = pending_;
      const size_t cut = tagged_calls() ? partial_marker(rest, kToolCallOpen) : 0;
      rest.remove_suffix(cut);
      out.content += n_calls_ > 0 || cut > 0 ? trim_right(rest) : rest;
      break;
    }
  }
  pending_.clear();
  return out;
}

bool ReplyParser::step(ReplyDelta& out, bool at_end) {
  if (trim_leading_) {
    const size_t n = skip_spaces(pending_, 0);
    pending_.erase(0, n);
    if (pending_.empty()) return false;
    trim_leading_ = false;
  }
  switch (mode_) {
    case Mode::kStart:
      return step_start(at_end);
    case Mode::kReasoning:
      return step_reasoning(out, at_end);
    case Mode::kContentStart:
      return step_content_start(at_end);
    case Mode::kContent:
      return step_content(out, at_end);
    case Mode::kCallHeader:
      return step_call_header(out, at_end);
    case Mode::kArguments:
      return step_arguments(out);
    case Mode::kXmlBody:
      return step_xml_body(out);
    case Mode::kCallEnd:
      return step_call_end(at_end);
  }
  return false;
}

bool ReplyParser::step_start(bool at_end) {
  if (!options_.extract_reasoning) {
    mode_ = Mode::kContentStart;
    return true;
  }
  const std::string_view rest = std::string_view(pending_).substr(skip_spaces(pending_, 0));
  if (rest.starts_with(chat::kThinkOpen)) {
    pending_.erase(0, pending_.size() - rest.size() + chat::kThinkOpen.size());
    mode_ = Mode::kReasoning;
    trim_leading_ = true;
    return true;
  }
  if (!at_end && chat::kThinkOpen.starts_with(rest)) return false;  // may still open
  mode_ = Mode::kContentStart;
  return true;
}

bool ReplyParser::step_reasoning(ReplyDelta& out, bool at_end) {
  const size_t close = pending_.find(chat::kThinkClose);
  if (close != std::string::npos) {
    out.reasoning += trim_right(std::string_view(pending_).substr(0, close));
    pending_.erase(0, close + chat::kThinkClose.size());
    mode_ = Mode::kContentStart;
    trim_leading_ = true;
    return true;
  }
  if (at_end) return false;
  const size_t safe = pending_.size() - held_tail(pending_, chat::kThinkClose);
  out.reasoning += pending_.substr(0, safe);
  pending_.erase(0, safe);
  return false;
}

bool ReplyParser::step_content_start(bool at_end) {
  if (options_.tool_calls != chat::ToolCallFormat::kLlama3Json) {
    mode_ = Mode::kContent;
    return true;
  }
  // Llama 3: a call is the whole reply, a JSON object, maybe after <|python_tag|> (a control
  // token, so its text is there only when control tokens are rendered).
  if (pending_.starts_with(kPythonTag)) {
    pending_.erase(0, kPythonTag.size());
    trim_leading_ = true;
    return true;
  }
  if (kPythonTag.starts_with(pending_)) {
    if (at_end) pending_.clear();  // a tag's beginning at the end is markup cut short
    return false;
  }
  if (pending_.starts_with("{")) {
    call_raw_.clear();
    mode_ = Mode::kCallHeader;
    return true;
  }
  mode_ = Mode::kContent;
  return true;
}

bool ReplyParser::tagged_calls() const {
  return options_.tool_calls == chat::ToolCallFormat::kHermes ||
         options_.tool_calls == chat::ToolCallFormat::kQwenXml;
}

bool ReplyParser::step_content(ReplyDelta& out, bool at_end) {
  if (!tagged_calls()) {
    out.content += pending_;
    pending_.clear();
    return false;
  }
  const size_t open = pending_.find(kToolCallOpen);
  if (open != std::string::npos) {
    out.content += trim_right(std::string_view(pending_).substr(0, open));
    pending_.erase(0, open + kToolCallOpen.size());
    call_raw_ = kToolCallOpen;
    mode_ = Mode::kCallHeader;
    return true;
  }
  if (at_end) return false;
  const size_t safe = pending_.size() - held_tail(pending_, kToolCallOpen);
  out.content += pending_.substr(0, safe);
  pending_.erase(0, safe);
  return false;
}

bool ReplyParser::step_call_header(ReplyDelta& out, bool at_end) {
  const bool xml = options_.tool_calls == chat::ToolCallFormat::kQwenXml;
  const CallHeader h = xml ? read_xml_call_header(pending_) : read_call_header(pending_);
  if (h.state == CallHeader::State::kNeedMore) return false;  // finish() drops it at the end
  if (h.state != CallHeader::State::kOk) {
    // Not a call after all: its opening is content, and what follows is read as content.
    out.content += call_raw_;
    call_raw_.clear();
    mode_ = Mode::kContent;
    if (options_.tool_calls == chat::ToolCallFormat::kLlama3Json || at_end) {
      out.content += pending_;
      pending_.clear();
      return false;
    }
    return true;
  }
  ToolCallDelta call;
  call.index = n_calls_++;
  call.id = new_call_id();
  call.name = h.name;
  call_ = ReplyDelta();
  call_.tool_calls.push_back(std::move(call));
  pending_.erase(0, h.arguments_at);
  brackets_.clear();
  in_string_ = false;
  escaped_ = false;
  mode_ = xml ? Mode::kXmlBody : Mode::kArguments;
  return true;
}

bool ReplyParser::step_xml_body(ReplyDelta& out) {
  const XmlCallBody body = read_xml_call_body(pending_);
  if (body.state == XmlCallBody::State::kNeedMore) return false;  // finish() drops it at the end
  if (body.state == XmlCallBody::State::kFail) {
    end_call(out, false);  // the rest of the call's markup is not content either
    mode_ = Mode::kCallEnd;
    return true;
  }
  const std::string& name = call_.tool_calls.front().name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
  for (const auto& [parameter, text] : body.parameters) {
    static const XmlToolSchemas kUntyped;
    const XmlToolSchemas& schemas = options_.xml_tools != nullptr ? *options_.xml_tools : kUntyped;
    arguments[parameter] = schemas.argument_value(name, parameter, text);
  }
  ReplyDelta piece;
  piece.tool_calls.push_back({n_calls_ - 1, "", "", arguments.dump()});
  append_delta(call_, std::move(piece));
  pending_.erase(0, body.end);
  end_call(out, true);
  mode_ = Mode::kCallEnd;
  return true;
}

bool ReplyParser::step_arguments(ReplyDelta& out) {
  // The arguments stream as they come; a character that cannot continue JSON ends the call.
  size_t i = 0;
  bool ended = false;
  bool broken = false;
  for (; i < pending_.size() && !ended && !broken; ++i) {
    const char c = pending_[i];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        broken = true;
      }
    } else if (c == '{' || c == '[') {
      brackets_.push_back(c);
    } else if (c == '}' || c == ']') {
      if (brackets_.empty() || brackets_.back() != (c == '}' ? '{' : '[')) {
        broken = true;
      } else {
        brackets_.pop_back();
        ended = brackets_.empty();
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (!json_bare_char(c)) {
      broken = true;
    }
  }
  const size_t used = broken ? i - 1 : i;
  if (used > 0) {
    ReplyDelta piece;
    piece.tool_calls.push_back({n_calls_ - 1, "", "", pending_.substr(0, used)});
    append_delta(call_, std::move(piece));
  }
  pending_.erase(0, used);
  if (broken) {
    // The rest of the call's markup is not content either.
    end_call(out, false);
    mode_ = Mode::kCallEnd;
    return true;
  }
  if (ended) {
    end_call(out, true);
    mode_ = Mode::kCallEnd;
    return true;
  }
  return false;
}

void ReplyParser::end_call(ReplyDelta& out, bool whole) {
  if (whole && !options_.drop_tool_calls) {
    append_delta(out, std::move(call_));
  } else {
    --n_calls_;
  }
  call_ = ReplyDelta();
}

bool ReplyParser::step_call_end(bool at_end) {
  if (options_.tool_calls == chat::ToolCallFormat::kLlama3Json) {
    // The object's closing brace; anything after it is content.
    const size_t pos = skip_spaces(pending_, 0);
    if (pos >= pending_.size()) {
      if (!at_end) return false;
      pending_.clear();
      return false;
    }
    pending_.erase(0, pending_[pos] == '}' ? pos + 1 : pos);
    mode_ = Mode::kContent;
    trim_leading_ = true;
    return true;
  }
  // Hermes: whatever else the call's markup holds, up to </tool_call>.
  const size_t close = pending_.find(kToolCallClose);
  if (close == std::string::npos) {
    pending_.erase(0, pending_.size() - partial_marker(pending_, kToolCallClose));
    return false;
  }
  pending_.erase(0, close + kToolCallClose.size());
  mode_ = Mode::kContent;
  trim_leading_ = true;
  return true;
}

std::string ReplyParser::new_call_id() {
  return random_call_id(ids_);
}

}  // namespace minfer::engine
