// gpt-oss harmony replies (channel_reply.h): messages on channels, split as they stream.
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "engine/channel_reply.h"
#include "engine/reply_markers.h"

namespace minfer::engine {

namespace {

constexpr std::string_view kHarmonyStart = "<|start|>";
constexpr std::string_view kHarmonyChannel = "<|channel|>";
constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::string_view kHarmonyEnd = "<|end|>";
constexpr std::string_view kHarmonyCall = "<|call|>";
constexpr std::string_view kHarmonyReturn = "<|return|>";
constexpr std::string_view kHarmonyTo = " to=";
constexpr std::string_view kHarmonyFunctions = "functions.";
// A header longer than this (or with a line break) is not one: its text is content.
constexpr size_t kHarmonyMaxHeaderBytes = 256;

// The word after `key` in `header` (up to a space or a marker's '<'); "" when key is absent.
std::string_view word_after(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = header.substr(at + key.size());
  return rest.substr(0, rest.find_first_of(" <"));
}

class HarmonyParser final : public ChannelReplyParser {
 public:
  explicit HarmonyParser(const ChannelReplyOptions& options) : ChannelReplyParser(options) {}

  bool in_reasoning() const override { return mode_ == Mode::kBody && kind_ == Kind::kReasoning; }

 private:
  enum class Mode { kHeader, kBody, kBetween };

  void end(ReplyDelta& out) override {
    if (mode_ == Mode::kBody) {
      deliver(out, pending_);
      end_message(out);
    }
    // A header cut short is markup, not content.
    mode_ = Mode::kBetween;
  }
  enum class Kind { kReasoning, kContent, kCall };

  bool step(ReplyDelta& out, bool at_end) override {
    switch (mode_) {
      case Mode::kBetween: {
        size_t n = 0;
        while (n < pending_.size() && is_reply_space(pending_[n])) ++n;
        pending_.erase(0, n);
        if (pending_.empty()) return false;
        mode_ = Mode::kHeader;
        return true;
      }
      case Mode::kHeader:
        return step_header(out);
      case Mode::kBody:
        return step_body(out, at_end);
    }
    return false;
  }

  // The opener a header starts with ("<|start|>", "<|channel|>" or " to="): its length, 0 when
  // the text opens with none; nullopt while the text may still become one.
  std::optional<size_t> header_opener() const {
    for (std::string_view opener : {kHarmonyStart, kHarmonyChannel, kHarmonyTo}) {
      if (pending_.starts_with(opener)) return opener.size();
      if (opener.starts_with(pending_)) return std::nullopt;
    }
    return 0;
  }

  bool step_header(ReplyDelta& out) {
    const std::optional<size_t> opener = header_opener();
    if (!opener.has_value()) return false;  // finish() drops a marker's beginning
    const size_t message = pending_.find(kHarmonyMessage);
    const std::string_view header = std::string_view(pending_).substr(0, message);
    const bool broken = *opener == 0 || header.find('\n') != std::string_view::npos ||
                        header.size() > kHarmonyMaxHeaderBytes;
    if (broken) {
      // Not a header: the text is content, its opener included.
      kind_ = Kind::kContent;
      mode_ = Mode::kBody;
      new_message_ = false;  // text as written: no separator
      deliver(out, std::string_view(pending_).substr(0, *opener));
      pending_.erase(0, *opener);
      return true;
    }
    if (message == std::string::npos) return false;  // at the end: a header cut short
    const std::string_view recipient = word_after(header, "to=");
    const std::string_view channel = word_after(header, kHarmonyChannel);
    name_.clear();
    body_.clear();
    if (!recipient.empty()) {
      kind_ = Kind::kCall;
      name_ = std::string(recipient.starts_with(kHarmonyFunctions)
                              ? recipient.substr(kHarmonyFunctions.size())
                              : recipient);
    } else {
      kind_ = channel == "analysis" ? Kind::kReasoning : Kind::kContent;
    }
    pending_.erase(0, message + kHarmonyMessage.size());
    mode_ = Mode::kBody;
    new_message_ = true;
    return true;
  }

  bool step_body(ReplyDelta& out, bool at_end) {
    const MarkerAt hit = first_marker(
        pending_, {kHarmonyEnd, kHarmonyCall, kHarmonyReturn, kHarmonyStart, kHarmonyChannel});
    if (hit.at != std::string_view::npos) {
      deliver(out, std::string_view(pending_).substr(0, hit.at));
      const bool ends =
          hit.marker == kHarmonyEnd || hit.marker == kHarmonyCall || hit.marker == kHarmonyReturn;
      pending_.erase(0, ends ? hit.at + hit.marker.size() : hit.at);
      end_message(out);
      mode_ = ends ? Mode::kBetween : Mode::kHeader;
      return true;
    }
    if (at_end) return false;  // finish() delivers the rest
    const size_t safe =
        pending_.size() - partial_any(pending_, {kHarmonyEnd, kHarmonyCall, kHarmonyReturn,
                                                 kHarmonyStart, kHarmonyChannel});
    deliver(out, std::string_view(pending_).substr(0, safe));
    pending_.erase(0, safe);
    return false;
  }

  void deliver(ReplyDelta& out, std::string_view text) {
    if (kind_ == Kind::kCall) {
      body_ += text;
      return;
    }
    if (text.empty()) return;
    const bool reasoning = kind_ == Kind::kReasoning && options_.extract_reasoning;
    std::string& to = reasoning ? out.reasoning : out.content;
    bool& written = reasoning ? reasoning_written_ : content_written_;
    // Messages of one field are paragraphs: a commentary preamble and the final answer (or two
    // analysis messages) are not run together.
    if (new_message_ && written) to += "\n\n";
    new_message_ = false;
    written = true;
    to += text;
  }

  // Ends the message being read: a call is returned when its body is a JSON object.
  void end_message(ReplyDelta& out) {
    if (kind_ != Kind::kCall) return;
    kind_ = Kind::kContent;
    const std::string_view arguments = trim_reply_text(body_);
    const auto parsed = nlohmann::json::parse(arguments, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && !name_.empty()) add_call(out, name_, std::string(arguments));
  }

  Mode mode_ = Mode::kHeader;  // the prompt ends with "<|start|>assistant": a header follows
  Kind kind_ = Kind::kContent;
  std::string name_;                // the call being read
  std::string body_;                // its arguments so far
  bool new_message_ = false;        // a header was read: its first text opens a paragraph
  bool content_written_ = false;    // content has text from an earlier message
  bool reasoning_written_ = false;  // reasoning has text from an earlier message
};

}  // namespace

std::unique_ptr<ChannelReplyParser> make_harmony_parser(const ChannelReplyOptions& options) {
  return std::make_unique<HarmonyParser>(options);
}

}  // namespace minfer::engine
