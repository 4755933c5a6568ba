// A byte-level recognizer of one JSON object (RFC 8259): a pushdown automaton whose stack is a
// bit per nesting level (object or array), so the whole state is a small trivially copyable value
// that a caller copies to try bytes without committing them (constrained sampling tries every
// token of the vocabulary this way).
//
// What it accepts, byte by byte: optional whitespace (space, \t, \n, \r), then an object at the top
// level, and nothing after the closing '}'. Inside: objects, arrays, strings (escapes \" \\ \/ \b
// \f \n \r \t and \uXXXX, where a high surrogate must be followed by a low one and a lone low
// surrogate is refused, as strict parsers do; raw bytes below 0x20 refused; non-ASCII bytes must
// form valid UTF-8 per RFC 3629 §4: no overlong forms, no surrogates, nothing past U+10FFFF),
// numbers (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), true, false and null.
//
// A prefix is accepted when some continuation makes it a document, so every byte is judged when
// it arrives; complete() says the object has closed. Nesting deeper than max_depth is refused
// (too_deep() tells the reason), so a generated or hostile document cannot grow the stack without
// bound. Nothing here recurses.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/status.h"

namespace minfer::grammar {

// The most nesting levels a recognizer can hold (the bits of its stack).
inline constexpr int kMaxJsonDepth = 256;

struct JsonOptions {
  int max_depth = 128;  // objects and arrays open at once, 1..kMaxJsonDepth
  // Most whitespace bytes in a row between tokens (outside strings); 0: no limit. Generation sets
  // one so that a model cannot emit whitespace for ever inside a still-open object.
  int max_whitespace_run = 0;
  // Most '\n' in one such run; 0: no limit. Generation allows one, as a pretty-printer writes.
  int max_line_breaks = 0;
  // Most digits in a number's integer part and in its exponent; 0: no limit. RFC 8259 sets none,
  // but parsers that read numbers as doubles refuse ones that overflow (nlohmann::json: "number
  // overflow" for 4E734), so generation keeps numbers below 10^(20 + 99).
  int max_integer_digits = 0;
  int max_exponent_digits = 0;
  // Most digits of the integer part and the fraction together (a leading "0" before '.' not
  // counted); 0: no limit. A decimal of at most 15 significant digits (DBL_DIG) reads into a double
  // and prints back unchanged, and an integer of at most 15 digits is exact in one.
  int max_significant_digits = 0;
};

class JsonRecognizer {
 public:
  // Options outside their ranges are clamped into them (max_depth to 1..kMaxJsonDepth).
  explicit JsonRecognizer(const JsonOptions& options = {});

  // Consumes one byte. False when no document starts with the bytes so far plus this one; the
  // recognizer has then failed for good (failed()), so try bytes on a copy.
  bool advance(uint8_t byte);
  // Consumes bytes until one is refused (false) or all are taken (true).
  bool advance(std::string_view bytes);
  // advance() with a message on failure: "[json] byte 'x' (0x78) at offset 12 ...: expected ...".
  // `offset` is the position of bytes[0] in the whole document, for the message.
  Status feed(std::string_view bytes, int64_t offset = 0);

  // The top-level object has closed; only the end of the text may follow.
  bool complete() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kFailed; }
  // The failure was an object or array opened past max_depth.
  bool too_deep() const { return too_deep_; }
  // Objects and arrays open now.
  int depth() const { return depth_; }
  // What the next byte may be, in words ("a value", "',' or '}'", …).
  const char* expected() const;

 private:
  // advance() dispatches on ranges of this order: the structural states first (through
  // kAfterValue), then the string's, the number's (kMinus through kExpDigits), the rest.
  enum class State : uint8_t {
    kBeforeDocument,  // whitespace or '{'
    kObjectOpen,      // after '{': whitespace, a key or '}'
    kObjectKey,       // after ',' in an object: whitespace or a key
    kColon,           // after a key: whitespace or ':'
    kValue,           // after ':' or ',' in an array: whitespace or a value
    kArrayOpen,       // after '[': whitespace, a value or ']'
    kAfterValue,      // whitespace, ',' or the closing bracket of the innermost container
    kString,          // inside a string
    kEscape,          // after '\' in a string
    kHex,             // in the 4 hex digits of \u (need_ left)
    kLowBackslash,    // after a high surrogate \uD8xx: the '\' of its low surrogate
    kLowU,            // then its 'u'
    kUtf8,            // inside a multi-byte UTF-8 character (need_ continuation bytes left)
    kMinus,           // number: after '-'
    kZero,            // number: a leading 0
    kInt,             // number: integer digits
    kDot,             // number: after '.'
    kFrac,            // number: fraction digits
    kExp,             // number: after 'e' or 'E'
    kExpSign,         // number: after the exponent's sign
    kExpDigits,       // number: exponent digits
    kLiteral,         // in true / false / null (literal_, need_ = bytes matched)
    kDone,            // the top-level object closed
    kFailed,
  };

  bool fail();
  bool whitespace(uint8_t byte);
  // A byte other than whitespace outside strings ends the run.
  void end_whitespace() {
    whitespace_run_ = 0;
    line_breaks_ = 0;
  }
  bool open(bool is_object);
  bool close(bool is_object);
  // One function per group of states; advance() dispatches on state_.
  bool structural(uint8_t byte);  // outside strings, numbers and literals
  bool begin_value(uint8_t byte);
  bool string_byte(uint8_t byte);
  bool utf8_continuation(uint8_t byte);
  bool escape_byte(uint8_t byte);
  void begin_hex();
  bool hex_digit(uint8_t byte);
  bool low_surrogate_prefix(uint8_t byte);  // the backslash and u before a low surrogate
  bool number_byte(uint8_t byte);
  bool end_number(uint8_t byte);
  bool literal_byte(uint8_t byte);
  // Counts a digit of the integer part or exponent against its limit.
  bool digit(uint16_t limit);
  // Counts a digit of the integer part or fraction against max_significant_digits.
  bool significant_digit();
  bool top_is_object() const;

  uint64_t kinds_[kMaxJsonDepth / 64] = {};  // bit d: level d is an object (1) or an array (0)
  uint16_t depth_ = 0;
  uint16_t max_depth_;
  uint16_t max_whitespace_run_;
  uint16_t max_line_breaks_;
  uint16_t whitespace_run_ = 0;  // bytes of the whitespace run being read
  uint16_t line_breaks_ = 0;     // '\n' in it
  uint16_t max_integer_digits_;
  uint16_t max_exponent_digits_;
  uint16_t max_significant_digits_;
  uint16_t digits_ = 0;       // digits so far in the number part being read (integer or exponent)
  uint16_t significant_ = 0;  // integer and fraction digits so far in the number being read
  uint16_t hex_ = 0;          // the \u value so far
  State state_ = State::kBeforeDocument;
  uint8_t need_ = 0;                 // bytes left (kUtf8, kHex) or matched (kLiteral)
  uint8_t lo_ = 0x80, hi_ = 0xBF;    // range of the next UTF-8 continuation byte
  uint8_t literal_ = 0;              // kLiteral: 0 true, 1 false, 2 null
  bool in_key_ = false;              // the string being read is an object key
  bool want_low_surrogate_ = false;  // the \u being read must be a low surrogate
  bool too_deep_ = false;
};

static_assert(std::is_trivially_copyable_v<JsonRecognizer>,
              "constrained sampling copies recognizers to try tokens");

}  // namespace minfer::grammar
