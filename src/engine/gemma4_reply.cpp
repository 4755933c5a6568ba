// Gemma 4 replies (channel_reply.h): the thought channel, calls in Gemma 4's argument syntax.
#include <random>
#include <string>
#include <utility>

#include "engine/channel_reply.h"
#include "engine/reply_markers.h"

namespace minfer::engine {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kGemmaThoughtOpen = "<|channel>";
constexpr std::string_view kGemmaThoughtClose = "<channel|>";
constexpr std::string_view kGemmaThoughtWord = "thought";
constexpr std::string_view kGemmaCallOpen = "<|tool_call>";
constexpr std::string_view kGemmaCallClose = "<tool_call|>";
constexpr std::string_view kGemmaCallWord = "call:";
constexpr std::string_view kGemmaQuote = "<|\"|>";
constexpr int kGemmaMaxArgumentDepth = 64;

// Reads Gemma 4's argument syntax (read_gemma4_arguments) from text[pos].
class ArgumentReader {
 public:
  explicit ArgumentReader(std::string_view text) : text_(text) {}

  std::optional<Json> value(size_t& pos, int depth) {
    if (depth > kGemmaMaxArgumentDepth || pos >= text_.size()) return std::nullopt;
    if (text_.substr(pos).starts_with(kGemmaQuote)) {
      std::optional<std::string> s = quoted(pos);
      if (!s.has_value()) return std::nullopt;
      return Json(std::move(*s));
    }
    if (text_[pos] == '{') return object(pos, depth);
    if (text_[pos] == '[') return array(pos, depth);
    return bare(pos);
  }

 private:
  std::optional<std::string> quoted(size_t& pos) {
    const size_t close = text_.find(kGemmaQuote, pos + kGemmaQuote.size());
    if (close == std::string_view::npos) return std::nullopt;
    std::string s(text_.substr(pos + kGemmaQuote.size(), close - pos - kGemmaQuote.size()));
    pos = close + kGemmaQuote.size();
    return s;
  }

  std::optional<Json> object(size_t& pos, int depth) {
    Json out = Json::object();
    ++pos;  // '{'
    if (pos < text_.size() && text_[pos] == '}') {
      ++pos;
      return out;
    }
    while (pos < text_.size()) {
      std::string key;
      if (text_.substr(pos).starts_with(kGemmaQuote)) {
        std::optional<std::string> k = quoted(pos);
        if (!k.has_value()) return std::nullopt;
        key = std::move(*k);
      } else {
        const size_t colon = text_.find_first_of(":,{}[]<", pos);
        if (colon == std::string_view::npos || text_[colon] != ':' || colon == pos) {
          return std::nullopt;
        }
        key = std::string(text_.substr(pos, colon - pos));
        pos = colon;
      }
      if (pos >= text_.size() || text_[pos] != ':') return std::nullopt;
      ++pos;
      std::optional<Json> v = value(pos, depth + 1);
      if (!v.has_value() || pos >= text_.size()) return std::nullopt;
      out[key] = std::move(*v);
      if (text_[pos] == '}') {
        ++pos;
        return out;
      }
      if (text_[pos] != ',') return std::nullopt;
      ++pos;
    }
    return std::nullopt;
  }

  std::optional<Json> array(size_t& pos, int depth) {
    Json out = Json::array();
    ++pos;  // '['
    if (pos < text_.size() && text_[pos] == ']') {
      ++pos;
      return out;
    }
    while (pos < text_.size()) {
      std::optional<Json> v = value(pos, depth + 1);
      if (!v.has_value() || pos >= text_.size()) return std::nullopt;
      out.push_back(std::move(*v));
      if (text_[pos] == ']') {
        ++pos;
        return out;
      }
      if (text_[pos] != ',') return std::nullopt;
      ++pos;
    }
    return std::nullopt;
  }

  std::optional<Json> bare(size_t& pos) {
    const size_t end = text_.find_first_of(",}]", pos);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view word = trim_reply_text(text_.substr(pos, end - pos));
    if (word.empty() || word.find('<') != std::string_view::npos) return std::nullopt;
    pos = end;
    if (word == "true") return Json(true);
    if (word == "false") return Json(false);
    if (word == "null" || word == "None") return Json(nullptr);
    Json number = Json::parse(word, nullptr, /*allow_exceptions=*/false);
    if (number.is_number()) return number;
    return Json(std::string(word));
  }

  std::string_view text_;
};

class Gemma4Parser final : public ChannelReplyParser {
 public:
  explicit Gemma4Parser(const ChannelReplyOptions& options) : ChannelReplyParser(options) {}

  bool in_reasoning() const override {
    return mode_ == Mode::kThought || mode_ == Mode::kThoughtWord;
  }

 private:
  enum class Mode { kContent, kThoughtWord, kThought, kCall };

  void end(ReplyDelta& out) override {
    switch (mode_) {
      case Mode::kContent: {
        // A marker's beginning at the very end ("<|tool_ca") is markup cut short.
        std::string_view rest = pending_;
        rest.remove_suffix(partial_any(rest, {kGemmaThoughtOpen, kGemmaCallOpen}));
        out.content += trim_right(rest);
        break;
      }
      case Mode::kThoughtWord:
      case Mode::kThought:
        reason(out, trim_right(pending_));
        break;
      case Mode::kCall:
        end_call(out, pending_);  // a call whose object closed is whole without its close
        break;
    }
  }

  static std::string_view trim_right(std::string_view text) {
    while (!text.empty() && is_reply_space(text.back())) text.remove_suffix(1);
    return text;
  }

  // Drops the whitespace that begins pending_ after markup; false while there is nothing else.
  bool trim_leading() {
    if (!trim_) return true;
    size_t n = 0;
    while (n < pending_.size() && is_reply_space(pending_[n])) ++n;
    pending_.erase(0, n);
    if (pending_.empty()) return false;
    trim_ = false;
    return true;
  }

  bool step(ReplyDelta& out, bool at_end) override {
    if (!trim_leading()) return false;
    switch (mode_) {
      case Mode::kContent:
        return step_content(out, at_end);
      case Mode::kThoughtWord:
        return step_thought_word(at_end);
      case Mode::kThought:
        return step_thought(out, at_end);
      case Mode::kCall:
        return step_call(out);
    }
    return false;
  }

  bool step_content(ReplyDelta& out, bool at_end) {
    const MarkerAt hit = first_marker(pending_, {kGemmaThoughtOpen, kGemmaCallOpen});
    if (hit.at != std::string_view::npos) {
      out.content += trim_right(std::string_view(pending_).substr(0, hit.at));
      pending_.erase(0, hit.at + hit.marker.size());
      mode_ = hit.marker == kGemmaCallOpen ? Mode::kCall : Mode::kThoughtWord;
      return true;
    }
    if (at_end) return false;
    // Held back: a marker's beginning, and the whitespace before it.
    size_t held = partial_any(pending_, {kGemmaThoughtOpen, kGemmaCallOpen});
    while (held < pending_.size() && is_reply_space(pending_[pending_.size() - held - 1])) ++held;
    out.content += pending_.substr(0, pending_.size() - held);
    pending_.erase(0, pending_.size() - held);
    return false;
  }

  // The channel's name ("thought") and the line break after it are markup.
  bool step_thought_word(bool at_end) {
    if (!at_end && kGemmaThoughtWord.starts_with(pending_)) return false;
    if (pending_.starts_with(kGemmaThoughtWord)) pending_.erase(0, kGemmaThoughtWord.size());
    mode_ = Mode::kThought;
    trim_ = true;
    return true;
  }

  bool step_thought(ReplyDelta& out, bool at_end) {
    const size_t close = pending_.find(kGemmaThoughtClose);
    if (close != std::string::npos) {
      reason(out, trim_right(std::string_view(pending_).substr(0, close)));
      pending_.erase(0, close + kGemmaThoughtClose.size());
      mode_ = Mode::kContent;
      trim_ = true;
      return true;
    }
    if (at_end) return false;
    size_t held = partial_marker(pending_, kGemmaThoughtClose);
    while (held < pending_.size() && is_reply_space(pending_[pending_.size() - held - 1])) ++held;
    reason(out, std::string_view(pending_).substr(0, pending_.size() - held));
    pending_.erase(0, pending_.size() - held);
    return false;
  }

  bool step_call(ReplyDelta& out) {
    const size_t close = pending_.find(kGemmaCallClose);
    if (close == std::string::npos) return false;  // finish() reads what there is
    end_call(out, std::string_view(pending_).substr(0, close));
    pending_.erase(0, close + kGemmaCallClose.size());
    mode_ = Mode::kContent;
    trim_ = true;
    return true;
  }

  void reason(ReplyDelta& out, std::string_view text) {
    (options_.extract_reasoning ? out.reasoning : out.content) += text;
  }

  // A call's text "call:NAME{ARGS}": returned when it reads whole.
  void end_call(ReplyDelta& out, std::string_view text) {
    mode_ = Mode::kContent;
    text = trim_reply_text(text);
    if (!text.starts_with(kGemmaCallWord)) return;
    const size_t open = text.find('{');
    if (open == std::string_view::npos || open == kGemmaCallWord.size()) return;
    size_t end = 0;
    const std::optional<Json> arguments = read_gemma4_arguments(text.substr(open), end);
    if (!arguments.has_value() || open + end != text.size()) return;
    add_call(out, std::string(text.substr(kGemmaCallWord.size(), open - kGemmaCallWord.size())),
             arguments->dump());
  }

  Mode mode_ = Mode::kContent;
  bool trim_ = true;  // drop the whitespace that begins the next text
};

}  // namespace

std::optional<nlohmann::ordered_json> read_gemma4_arguments(std::string_view text, size_t& end) {
  if (text.empty() || text[0] != '{') return std::nullopt;
  size_t pos = 0;
  std::optional<Json> out = ArgumentReader(text).value(pos, 0);
  if (!out.has_value()) return std::nullopt;
  end = pos;
  return out;
}

std::unique_ptr<ChannelReplyParser> make_gemma4_parser(const ChannelReplyOptions& options) {
  return std::make_unique<Gemma4Parser>(options);
}

}  // namespace minfer::engine
