#include "grammar/json_recognizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/enum_names.h"
#include "core/utf8.h"

namespace minfer::grammar {

namespace {

// RFC 8259 §2: the four whitespace bytes.
bool is_whitespace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_digit(uint8_t c) {
  return c >= '0' && c <= '9';
}

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr std::string_view kLiterals[3] = {"true", "false", "null"};

}  // namespace

JsonRecognizer::JsonRecognizer(const JsonOptions& options)
    : max_depth_(static_cast<uint16_t>(std::clamp(options.max_depth, 1, kMaxJsonDepth))),
      max_whitespace_run_(static_cast<uint16_t>(std::clamp(options.max_whitespace_run, 0, 65535))),
      max_line_breaks_(static_cast<uint16_t>(std::clamp(options.max_line_breaks, 0, 65535))),
      max_integer_digits_(static_cast<uint16_t>(std::clamp(options.max_integer_digits, 0, 65535))),
      max_exponent_digits_(
          static_cast<uint16_t>(std::clamp(options.max_exponent_digits, 0, 65535))),
      max_significant_digits_(
          static_cast<uint16_t>(std::clamp(options.max_significant_digits, 0, 65535))) {}

bool JsonRecognizer::digit(uint16_t limit) {
  if (limit > 0 && ++digits_ > limit) return fail();
  return true;
}

bool JsonRecognizer::significant_digit() {
  if (max_significant_digits_ > 0 && ++significant_ > max_significant_digits_) return fail();
  return true;
}

bool JsonRecognizer::fail() {
  state_ = State::kFailed;
  return false;
}

bool JsonRecognizer::whitespace(uint8_t c) {
  if (max_whitespace_run_ > 0 && ++whitespace_run_ > max_whitespace_run_) return fail();
  if (c == '\n' && max_line_breaks_ > 0 && ++line_breaks_ > max_line_breaks_) return fail();
  return true;
}

bool JsonRecognizer::top_is_object() const {
  const int level = depth_ - 1;
  return ((kinds_[level / 64] >> (level % 64)) & 1u) != 0;
}

bool JsonRecognizer::open(bool is_object) {
  if (depth_ >= max_depth_) {
    too_deep_ = true;
    return fail();
  }
  const uint64_t bit = uint64_t{1} << (depth_ % 64);
  if (is_object) {
    kinds_[depth_ / 64] |= bit;
  } else {
    kinds_[depth_ / 64] &= ~bit;
  }
  ++depth_;
  state_ = is_object ? State::kObjectOpen : State::kArrayOpen;
  return true;
}

bool JsonRecognizer::close(bool is_object) {
  if (depth_ == 0 || top_is_object() != is_object) return fail();
  --depth_;
  state_ = depth_ == 0 ? State::kDone : State::kAfterValue;
  return true;
}

bool JsonRecognizer::begin_value(uint8_t c) {
  switch (c) {
    case '{':
      return open(true);
    case '[':
      return open(false);
    case '"':
      in_key_ = false;
      state_ = State::kString;
      return true;
    case '-':
      state_ = State::kMinus;
      significant_ = 0;
      return true;
    case '0':
      state_ = State::kZero;
      significant_ = 0;
      return true;  // a leading 0 is the whole integer part
    case 't':
    case 'f':
    case 'n':
      literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
      need_ = 1;
      state_ = State::kLiteral;
      return true;
    default:
      if (c >= '1' && c <= '9') {
        state_ = State::kInt;
        digits_ = 0;
        significant_ = 0;
        return digit(max_integer_digits_) && significant_digit();
      }
      return fail();
  }
}

bool JsonRecognizer::string_byte(uint8_t c) {
  if (c == '"') {
    state_ = in_key_ ? State::kColon : State::kAfterValue;
    return true;
  }
  if (c == '\\') {
    state_ = State::kEscape;
    return true;
  }
  if (c < 0x20) return fail();  // control characters must be escaped (RFC 8259 §7)
  if (c < 0x80) return true;
  // A UTF-8 lead byte and the range its first continuation byte must fall in (RFC 3629 §4):
  // 0x80..0xC1 (continuation or overlong lead) and 0xF5..0xFF are refused.
  const utf8::LeadByte rule = utf8::lead_byte(c);
  if (rule.length == 0) return fail();
  need_ = static_cast<uint8_t>(rule.length - 1);
  lo_ = rule.second_lo;
  hi_ = rule.second_hi;
  state_ = State::kUtf8;
  return true;
}

bool JsonRecognizer::structural(uint8_t c) {
  if (is_whitespace(c)) return whitespace(c);
  end_whitespace();
  switch (state_) {
    case State::kBeforeDocument:
      return c == '{' ? open(true) : fail();
    case State::kObjectOpen:
    case State::kObjectKey:
      if (c == '"') {
        in_key_ = true;
        state_ = State::kString;
        return true;
      }
      if (c == '}' && state_ == State::kObjectOpen) return close(true);
      return fail();
    case State::kColon:
      if (c != ':') return fail();
      state_ = State::kValue;
      return true;
    case State::kValue:
      return begin_value(c);
    case State::kArrayOpen:
      if (c == ']') return close(false);
      return begin_value(c);
    case State::kAfterValue:
      if (c == ',') {
        state_ = top_is_object() ? State::kObjectKey : State::kValue;
        return true;
      }
      if (c == '}' || c == ']') return close(c == '}');
      return fail();
    default:
      return fail();
  }
}

bool JsonRecognizer::utf8_continuation(uint8_t c) {
  if (c < lo_ || c > hi_) return fail();
  lo_ = 0x80;
  hi_ = 0xBF;
  if (--need_ == 0) state_ = State::kString;
  return true;
}

bool JsonRecognizer::escape_byte(uint8_t c) {
  switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      state_ = State::kString;
      return true;
    case 'u':
      begin_hex();
      return true;
    default:
      return fail();
  }
}

void JsonRecognizer::begin_hex() {
  state_ = State::kHex;
  need_ = 4;
  hex_ = 0;
}

bool JsonRecognizer::hex_digit(uint8_t c) {
  const int v = hex_value(c);
  if (v < 0) return fail();
  hex_ = static_cast<uint16_t>(hex_ * 16 + v);
  if (--need_ > 0) {
    // Judge the digits so far by the values they can still become, so that no accepted prefix
    // is a dead end: after a high surrogate only DC00..DFFF may follow, elsewhere DC00..DFFF (a
    // lone low surrogate) may not.
    const uint32_t lo = static_cast<uint32_t>(hex_) << (4 * need_);
    const uint32_t hi = lo + (uint32_t{1} << (4 * need_)) - 1;
    const bool may_be_low = hi >= 0xDC00 && lo <= 0xDFFF;
    const bool must_be_low = lo >= 0xDC00 && hi <= 0xDFFF;
    if (want_low_surrogate_ ? !may_be_low : must_be_low) return fail();
    return true;
  }
  const bool high = hex_ >= 0xD800 && hex_ <= 0xDBFF;
  const bool low = hex_ >= 0xDC00 && hex_ <= 0xDFFF;
  if (want_low_surrogate_) {
    if (!low) return fail();
    want_low_surrogate_ = false;
    state_ = State::kString;
  } else if (high) {
    want_low_surrogate_ = true;
    state_ = State::kLowBackslash;
  } else if (low) {
    return fail();
  } else {
    state_ = State::kString;
  }
  return true;
}

bool JsonRecognizer::low_surrogate_prefix(uint8_t c) {
  if (state_ == State::kLowBackslash) {
    if (c != '\\') return fail();
    state_ = State::kLowU;
    return true;
  }
  if (c != 'u') return fail();
  begin_hex();
  return true;
}

bool JsonRecognizer::number_byte(uint8_t c) {
  switch (state_) {
    case State::kMinus:
      if (c == '0') {
        state_ = State::kZero;
        return true;
      }
      if (c >= '1' && c <= '9') {
        state_ = State::kInt;
        digits_ = 0;
        return digit(max_integer_digits_) && significant_digit();
      }
      return fail();
    case State::kZero:
    case State::kInt:
      if (is_digit(c) && state_ == State::kInt) {
        return digit(max_integer_digits_) && significant_digit();
      }
      if (c == '.') {
        state_ = State::kDot;
        return true;
      }
      break;
    case State::kDot:
      if (!is_digit(c)) return fail();
      state_ = State::kFrac;
      return significant_digit();
    case State::kFrac:
      if (is_digit(c)) return significant_digit();
      break;
    case State::kExp:
      digits_ = 0;
      if (c == '+' || c == '-') {
        state_ = State::kExpSign;
        return true;
      }
      [[fallthrough]];
    case State::kExpSign:
      if (!is_digit(c)) return fail();
      state_ = State::kExpDigits;
      return digit(max_exponent_digits_);
    case State::kExpDigits:
      if (is_digit(c)) return digit(max_exponent_digits_);
      return end_number(c);
    default:
      return fail();
  }
  // kZero, kInt and kFrac: an exponent may follow, or the number has ended.
  if (c == 'e' || c == 'E') {
    state_ = State::kExp;
    return true;
  }
  return end_number(c);
}

// A number has no end byte of its own: the byte after it ends it and is then read as what
// follows a value.
bool JsonRecognizer::end_number(uint8_t c) {
  state_ = State::kAfterValue;
  return structural(c);
}

bool JsonRecognizer::literal_byte(uint8_t c) {
  const std::string_view word = kLiterals[literal_];
  if (c != static_cast<uint8_t>(word[need_])) return fail();
  if (++need_ == word.size()) state_ = State::kAfterValue;
  return true;
}

bool JsonRecognizer::advance(uint8_t c) {
  // The enum keeps each group of states together (json_recognizer.h).
  if (state_ <= State::kAfterValue) return structural(c);
  if (state_ >= State::kMinus && state_ <= State::kExpDigits) return number_byte(c);
  switch (state_) {
    case State::kString:
      return string_byte(c);
    case State::kUtf8:
      return utf8_continuation(c);
    case State::kEscape:
      return escape_byte(c);
    case State::kHex:
      return hex_digit(c);
    case State::kLowBackslash:
    case State::kLowU:
      return low_surrogate_prefix(c);
    case State::kLiteral:
      return literal_byte(c);
    default:  // kDone, kFailed
      return fail();
  }
}

bool JsonRecognizer::advance(std::string_view bytes) {
  for (const char c : bytes) {
    if (!advance(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

const char* JsonRecognizer::expected() const {
  // Indexed by State; after a value, the closing bracket depends on the innermost container.
  static constexpr std::array<const char*, 24> kExpected = {
      "'{' (the document must be an object)",
      "a key string or '}'",
      "a key string",
      "':'",
      "a value",
      "a value or ']'",
      "',' or ']'",
      "a string character, '\\' or '\"' (control characters must be escaped)",
      "an escape: one of \" \\ / b f n r t u",
      "a hex digit of \\u",
      "'\\u' and a low surrogate after a high surrogate",
      "'\\u' and a low surrogate after a high surrogate",
      "a UTF-8 continuation byte",
      "a digit after '-'",
      "'.', 'e', or the end of the number (no leading zeros)",
      "a digit (within the digit limit), or the end of the number",
      "a digit after '.'",
      "a digit (within the digit limit), or the end of the number",
      "a digit or sign of the exponent",
      "a digit of the exponent (within the digit limit)",
      "a digit of the exponent (within the digit limit)",
      "the rest of true, false or null",
      "nothing (the object is complete)",
      "nothing (the recognizer failed earlier)",
  };
  static_assert(kExpected.size() == static_cast<size_t>(State::kFailed) + 1);
  if (state_ == State::kAfterValue && top_is_object()) return "',' or '}'";
  return enum_name(kExpected, state_, "?");
}

Status JsonRecognizer::feed(std::string_view bytes, int64_t offset) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<uint8_t>(bytes[i]);
    const JsonRecognizer before = *this;
    if (advance(c)) continue;
    const std::string shown =
        c >= 0x20 && c < 0x7F ? fmt::format("'{}' ", static_cast<char>(c)) : "";
    if (too_deep_) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[grammar] JSON nesting too deep at offset {}: {} opens level {}, expected "
                        "at most {} levels",
                        offset + static_cast<int64_t>(i), shown, before.depth_ + 1, max_depth_);
    }
    return make_error(
        ErrorCode::kInvalidArgument,
        "[grammar] byte {}(0x{:02x}) at offset {} is not valid JSON here: expected {}", shown, c,
        offset + static_cast<int64_t>(i), before.expected());
  }
  return Status::ok();
}

}  // namespace minfer::grammar
