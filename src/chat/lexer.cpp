#include "chat/lexer.h"

#include <cstring>

#include <fmt/format.h>

#include "chat/py_string.h"
#include "chat/value.h"

namespace minfer::chat {
namespace {

// Decodes the code point at `pos` (UTF-8), returning its byte length through `len`.
char32_t code_point_at(std::string_view s, size_t pos, size_t* len) {
  std::u32string one = utf8_decode(s.substr(pos, std::min<size_t>(4, s.size() - pos)));
  char32_t cp = one.empty() ? 0 : one[0];
  std::string encoded;
  utf8::append(encoded, cp);
  *len = (pos + encoded.size() <= s.size() && s.substr(pos, encoded.size()) == encoded)
             ? encoded.size()
             : 1;
  return cp;
}

// Python's \s* at `pos`: returns the position after the whitespace.
size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t len = 0;
    char32_t cp = code_point_at(s, pos, &len);
    if (!py_is_space(cp)) break;
    pos += len;
  }
  return pos;
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  return skip_space(s, 0) == s.size();
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// Python's one-character escapes (\\ \' \" \a \b \f \n \r \t \v) and what each stands for.
constexpr std::string_view kSimpleEscapes = "\\'\"abfnrtv";
constexpr std::string_view kSimpleEscapeValues = "\\'\"\a\b\f\n\r\t\v";
static_assert(kSimpleEscapes.size() == kSimpleEscapeValues.size());

// Python's "unicode-escape" decoding of a string literal's body, as Jinja2 applies it after
// encoding the body with backslashreplace (so a backslash before a non-ASCII character keeps
// that character's \x/\u escape text).
std::string unescape_string(std::string_view body, int line) {
  std::string out;
  size_t i = 0;
  auto hex_value = [&](size_t at, size_t n) -> char32_t {
    if (at + n > body.size()) {
      throw TemplateError(line, "truncated \\x, \\u or \\U escape in a string literal");
    }
    char32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      char c = body[at + k];
      v <<= 4;
      if (is_digit(c)) {
        v |= static_cast<char32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<char32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<char32_t>(c - 'A' + 10);
      } else {
        throw TemplateError(line, "truncated \\x, \\u or \\U escape in a string literal");
      }
    }
    return v;
  };
  while (i < body.size()) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      ++i;
      continue;
    }
    char e = body[i + 1];
    i += 2;
    if (const size_t k = kSimpleEscapes.find(e); k != std::string_view::npos) {
      out.push_back(kSimpleEscapeValues[k]);
      continue;
    }
    switch (e) {
      case '\n':
        break;
      case 'x':  // \xHH, \uHHHH, \UHHHHHHHH
      case 'u':
      case 'U': {
        const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        utf8::append(out, hex_value(i, digits));
        i += digits;
        break;
      }
      case 'N':
        throw TemplateError(line, "unsupported \\N{...} escape in a string literal");
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k) {
            v = v * 8 + static_cast<char32_t>(body[i++] - '0');
          }
          utf8::append(out, v);
        } else if (static_cast<unsigned char>(e) >= 0x80) {
          size_t len = 0;
          char32_t cp = code_point_at(body, i - 1, &len);
          i = i - 1 + len;
          out.push_back('\\');
          if (cp <= 0xFF) {
            out += fmt::format("x{:02x}", static_cast<uint32_t>(cp));
          } else if (cp <= 0xFFFF) {
            out += fmt::format("u{:04x}", static_cast<uint32_t>(cp));
          } else {
            out += fmt::format("U{:08x}", static_cast<uint32_t>(cp));
          }
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

constexpr const char* kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                      "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                      ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit(TokenType::kText, src_.substr(pos_));
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      size_t after_open = tag + 2;
      char sign = 0;
      if (after_open < src_.size() && (src_[after_open] == '-' || src_[after_open] == '+')) {
        sign = src_[after_open];
        ++after_open;
      }
      size_t raw_end = kind == '%' ? match_raw_begin(after_open) : std::string::npos;
      std::string text = src_.substr(pos_, tag - pos_);
      text = apply_lstrip(text, sign, kind != '{', line_starting);
      emit(TokenType::kText, text);
      line_ +=
          count_newlines(std::string_view(src_).substr(pos_, tag - pos_)) - count_newlines(text);
      pos_ = after_open;
      if (raw_end != std::string::npos) {
        pos_ = raw_end;
        line_starting = src_[raw_end - 1] == '\n';
        line_starting = lex_raw_body(line_starting);
      } else if (kind == '#') {
        line_starting = lex_comment();
      } else {
        line_starting = lex_tag(kind == '{');
      }
    }
    tokens_.push_back(Token{TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  void emit(TokenType type, std::string value) {
    if (type == TokenType::kText && value.empty()) return;
    int line = line_;
    if (type == TokenType::kText) line_ += count_newlines(value);
    tokens_.push_back(Token{type, std::move(value), line});
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // Jinja2's OptionalLStrip: "-" strips all whitespace before the tag; otherwise, for block
  // and comment tags, lstrip_blocks removes spaces before the tag back to the line start.
  std::string apply_lstrip(const std::string& text, char sign, bool block_like,
                           bool line_starting) const {
    if (sign == '-') return py_strip(text, std::nullopt, false, true);
    if (sign == '+' || !block_like) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos))) {
      return text.substr(0, l_pos);
    }
    return text;
  }

  // After "{%" and its sign: matches `\s*raw\s*(-%}\s*|%})`, returning the end position.
  size_t match_raw_begin(size_t at) const {
    size_t p = skip_space(src_, at);
    if (src_.compare(p, 3, "raw") != 0) return std::string::npos;
    p = skip_space(src_, p + 3);
    if (src_.compare(p, 3, "-%}") == 0) return skip_space(src_, p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  // Consumes a block end marker at pos_ if one is there: "+%}", "-%}\s*" or "%}\n?".
  bool match_block_end(bool* line_starting) {
    size_t start = pos_;
    if (src_.compare(pos_, 3, "+%}") == 0) {
      pos_ += 3;
    } else if (src_.compare(pos_, 3, "-%}") == 0) {
      pos_ = skip_space(src_, pos_ + 3);
    } else if (src_.compare(pos_, 2, "%}") == 0) {
      pos_ += 2;
      if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    } else {
      return false;
    }
    line_ += count_newlines(std::string_view(src_).substr(start, pos_ - start));
    *line_starting = src_[pos_ - 1] == '\n';
    return true;
  }

  bool lex_raw_body(bool line_starting) {
    int start_line = line_;
    for (size_t i = pos_; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%') continue;
      size_t p = i + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = skip_space(src_, p);
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p = skip_space(src_, p + 6);
      size_t saved = pos_;
      pos_ = p;
      bool ls = false;
      if (!match_block_end(&ls)) {
        pos_ = saved;
        continue;
      }
      std::string body = src_.substr(saved, i - saved);
      std::string kept = apply_lstrip(body, sign, true, line_starting);
      int end_line = line_;
      line_ = start_line;
      emit(TokenType::kText, kept);
      line_ = end_line;
      return ls;
    }
    throw TemplateError(start_line, "missing end of raw directive");
  }

  bool lex_comment() {
    int start_line = line_;
    size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) throw TemplateError(start_line, "missing end of comment tag");
    size_t end = close + 2;
    char sign = close > pos_ ? src_[close - 1] : 0;
    if (sign == '-') {
      end = skip_space(src_, end);
    } else if (sign != '+' && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
    pos_ = end;
    return src_[end - 1] == '\n';
  }

  // Lexes the inside of a {{ }} or {% %} tag through its end marker.
  bool lex_tag(bool variable) {
    emit(variable ? TokenType::kVarBegin : TokenType::kBlockBegin, "");
    std::string balance;  // closing brackets still expected
    int start_line = line_;
    while (true) {
      if (pos_ >= src_.size()) {
        throw TemplateError(start_line, variable ? "unexpected end of template: missing '}}'"
                                                 : "unexpected end of template: missing '%}'");
      }
      if (balance.empty()) {
        bool line_starting = false;
        if (variable) {
          size_t start = pos_;
          if (src_.compare(pos_, 3, "-}}") == 0) {
            pos_ = skip_space(src_, pos_ + 3);
          } else if (src_.compare(pos_, 2, "}}") == 0) {
            pos_ += 2;
          }
          if (pos_ != start) {
            line_ += count_newlines(std::string_view(src_).substr(start, pos_ - start));
            tokens_.push_back(Token{TokenType::kVarEnd, "", line_});
            return src_[pos_ - 1] == '\n';
          }
        } else if (match_block_end(&line_starting)) {
          tokens_.push_back(Token{TokenType::kBlockEnd, "", line_});
          return line_starting;
        }
      }
      char c = src_[pos_];
      size_t len = 0;
      if (py_is_space(code_point_at(src_, pos_, &len))) {
        size_t end = skip_space(src_, pos_);
        line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      if (is_digit(c)) {
        lex_number();
        continue;
      }
      if (is_name_start(c)) {
        size_t end = pos_;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(TokenType::kName, src_.substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      if (c == '\'' || c == '"') {
        lex_string(c);
        continue;
      }
      bool matched = false;
      for (const char* op : kOperators) {
        size_t n = std::strlen(op);
        if (src_.compare(pos_, n, op) != 0) continue;
        std::string o(op);
        if (o == "(" || o == "[" || o == "{") {
          balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
        } else if (o == ")" || o == "]" || o == "}") {
          if (balance.empty()) throw TemplateError(line_, fmt::format("unexpected '{}'", o));
          if (balance.back() != o[0]) {
            throw TemplateError(line_,
                                fmt::format("unexpected '{}', expected '{}'", o, balance.back()));
          }
          balance.pop_back();
        }
        tokens_.push_back(Token{TokenType::kOperator, o, line_});
        pos_ += n;
        matched = true;
        break;
      }
      if (!matched) {
        throw TemplateError(line_, fmt::format("unexpected char '{}'", src_.substr(pos_, len)));
      }
    }
  }

  void lex_number() {
    // Jinja2's integer_re / float_re: digits with optional '_' separators, an optional
    // fraction, an optional exponent (0x/0o/0b prefixes are read too).
    size_t p = pos_;
    if (src_[p] == '0' && p + 1 < src_.size() &&
        (src_[p + 1] == 'x' || src_[p + 1] == 'X' || src_[p + 1] == 'o' || src_[p + 1] == 'O' ||
         src_[p + 1] == 'b' || src_[p + 1] == 'B')) {
      int base = (src_[p + 1] == 'x' || src_[p + 1] == 'X')   ? 16
                 : (src_[p + 1] == 'o' || src_[p + 1] == 'O') ? 8
                                                              : 2;
      size_t q = p + 2;
      std::string digits;
      while (q < src_.size() &&
             (std::isxdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) {
        if (src_[q] != '_') digits.push_back(src_[q]);
        ++q;
      }
      emit(TokenType::kInteger,
           std::to_string(std::stoll(digits.empty() ? "0" : digits, nullptr, base)));
      pos_ = q;
      return;
    }
    auto digits_at = [&](size_t q, std::string* out) {
      size_t start = q;
      while (q < src_.size() &&
             (is_digit(src_[q]) ||
              (src_[q] == '_' && q > start && q + 1 < src_.size() && is_digit(src_[q + 1])))) {
        if (src_[q] != '_') out->push_back(src_[q]);
        ++q;
      }
      return q;
    };
    std::string text;
    size_t q = digits_at(p, &text);
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
      text.push_back('.');
      q = digits_at(q + 1, &text);
      is_float = true;
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      std::string exp = "e";
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) exp.push_back(src_[r++]);
      if (r < src_.size() && is_digit(src_[r])) {
        q = digits_at(r, &exp);
        text += exp;
        is_float = true;
      }
    }
    emit(is_float ? TokenType::kFloat : TokenType::kInteger, text);
    pos_ = q;
  }

  void lex_string(char quote) {
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) {
      if (src_[p] == '\\') ++p;
      ++p;
    }
    if (p >= src_.size()) throw TemplateError(line_, "unterminated string literal");
    std::string_view body = std::string_view(src_).substr(pos_ + 1, p - pos_ - 1);
    tokens_.push_back(Token{TokenType::kString, unescape_string(body, line_), line_});
    line_ += count_newlines(body);
    pos_ = p + 1;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  // Jinja2 reads "\r\n" and "\r" as "\n" and drops one trailing newline.
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized.push_back(source[i]);
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return Lexer(std::move(normalized)).run();
}

}  // namespace minfer::chat
