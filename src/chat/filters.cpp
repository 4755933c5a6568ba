// Filters and tests with Jinja2 3.1 semantics (jinja2/filters.py, jinja2/tests.py); tojson is
// transformers' override (json.dumps without ASCII escaping).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "chat/py_string.h"

namespace minfer::chat {
namespace {

const std::set<std::string, std::less<>> kTests = {
    "boolean", "callable", "defined",  "divisibleby", "eq",      "equalto",   "escaped", "even",
    "false",   "float",    "ge",       "greaterthan", "gt",      "in",        "integer", "iterable",
    "le",      "lessthan", "lower",    "lt",          "mapping", "ne",        "none",    "number",
    "odd",     "sameas",   "sequence", "string",      "true",    "undefined", "upper",   "==",
    "!=",      "<",        "<=",       ">",           ">="};

// Jinja2's soft_str: str(x) unless x is already a string.
std::string soft_str(const Value& v) {
  return to_str(v);
}

bool is_integral(const Value& v) {
  return v.is_int() || v.is_bool();
}

int64_t as_int(const Value& v, const char* what, int line) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  throw TemplateError(line, fmt::format("{} must be an integer, not {}", what, v.type_name()));
}

// environment.getitem along a dotted path ("a.b.0"), as make_attrgetter does.
Value attr_path(const Value& item, const std::string& path, int line) {
  Value v = item;
  for (const std::string& part : py_split(path, std::string("."), -1)) {
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    Value key = digits ? Value::integer(std::stoll(part)) : Value::string(part);
    if (v.is_undefined()) fail_undefined(v, line);
    v = get_item(v, key, line);
  }
  return v;
}

// The sort/unique/min/max key: strings lowercased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower_str(v.as_string()));
  return v;
}

std::string html_escape(std::string_view s) {
  uint64_t size = s.size();
  for (char c : s) size += c == '&' || c == '"' || c == '\'' ? 4 : (c == '<' || c == '>' ? 3 : 0);
  check_string_bytes(size, 0);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Python's round(x, ndigits) for floats: correctly rounded through the decimal string, which is
// what CPython does (ties are decided on the exact binary value, then half-even).
double py_round(double x, int64_t ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits > 300) return x;
  if (ndigits < 0) {
    double p = std::pow(10.0, static_cast<double>(-ndigits));
    return std::nearbyint(x / p) * p;
  }
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
  return std::strtod(buf, nullptr);
}

// Python int(str): optional sign, surrounding whitespace, '_' between digits.
std::optional<int64_t> parse_int(const std::string& text, int64_t base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size()) continue;
    digits.push_back(s[i]);
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
  if (end == digits.c_str() || *end != '\0' || errno != 0 ||
      std::isspace(static_cast<unsigned char>(digits[0]))) {
    return std::nullopt;
  }
  return v;
}

std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return v;
}

// Jinja2's do_title: words start after runs of '-', whitespace and opening brackets.
std::string jinja_title(std::string_view s) {
  std::u32string cps = utf8_decode(s);
  std::string out;
  bool word_start = true;
  for (char32_t cp : cps) {
    bool delim = cp == '-' || py_is_space(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (delim) {
      utf8::append(out, cp);
      word_start = true;
    } else {
      utf8::append(out, word_start ? py_upper(cp) : py_lower(cp));
      word_start = false;
    }
  }
  return out;
}

// A filter: `input | name(args)`. ctx gives the template line for errors and the hooks back
// into the interpreter (map and select call other filters and tests by name).
using FilterFn = Value (*)(const Value& input, CallArgs& args, const FilterContext& ctx);

// str -> str filters (upper, lower, capitalize, title, escape).
template <std::string (*kTransform)(std::string_view)>
Value filter_text(const Value& input, CallArgs& /*args*/, const FilterContext& /*ctx*/) {
  return Value::string(kTransform(soft_str(input)));
}

Value filter_default(const Value& input, CallArgs& args, const FilterContext& /*ctx*/) {
  static const Value kEmpty = Value::string("");
  static const Value kFalse = Value::boolean(false);
  const Value& fallback = args.arg(0, "default_value", kEmpty);
  bool boolean = args.arg(1, "boolean", kFalse).truthy();
  if (input.is_undefined() || (boolean && !input.truthy())) return fallback;
  return input;
}

Value filter_tojson(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kNone = Value::none();
  static const Value kFalse = Value::boolean(false);
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  bool ensure_ascii = args.arg(0, "ensure_ascii", kFalse).truthy();
  const Value& indent = args.arg(1, "indent", kNone);
  const Value& separators = args.arg(2, "separators", kNone);
  bool sort_keys = args.arg(3, "sort_keys", kFalse).truthy();
  std::string item_sep = indent.is_none() ? ", " : ",";
  std::string key_sep = ": ";
  if (!separators.is_none()) {
    std::vector<Value> parts = iterate(separators, ctx.line);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string()) {
      throw TemplateError(ctx.line, "tojson separators must be a pair of strings");
    }
    item_sep = parts[0].as_string();
    key_sep = parts[1].as_string();
  }
  return Value::string(
      json_dumps(input, ensure_ascii, indent, item_sep, key_sep, sort_keys, ctx.line));
}

Value filter_length(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  switch (input.kind()) {
    case Value::Kind::kUndefined:
      return Value::integer(0);
    case Value::Kind::kString:
      return Value::integer(static_cast<int64_t>(utf8_length(input.as_string())));
    case Value::Kind::kList:
      return Value::integer(static_cast<int64_t>(input.as_list().items.size()));
    case Value::Kind::kDict:
      return Value::integer(static_cast<int64_t>(input.as_dict().items.size()));
    default:
      throw TemplateError(ctx.line,
                          fmt::format("object of type '{}' has no len()", input.type_name()));
  }
}

Value filter_trim(const Value& input, CallArgs& args, const FilterContext& /*ctx*/) {
  static const Value kNone = Value::none();
  const Value& chars = args.arg(0, "chars", kNone);
  std::optional<std::string> set;
  if (!chars.is_none() && !chars.is_undefined()) set = soft_str(chars);
  return Value::string(py_strip(soft_str(input), set, true, true));
}

Value filter_string(const Value& input, CallArgs& /*args*/, const FilterContext& /*ctx*/) {
  return Value::string(soft_str(input));
}

Value filter_safe(const Value& input, CallArgs& /*args*/, const FilterContext& /*ctx*/) {
  return input.is_string() ? input : Value::string(soft_str(input));
}

Value filter_join(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kEmpty = Value::string("");
  static const Value kNone = Value::none();
  const Value& sep = args.arg(0, "d", kEmpty);
  const Value& attribute = args.arg(1, "attribute", kNone);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(input, ctx.line)) {
    if (!first) append_checked(out, soft_str(sep), ctx.line);
    first = false;
    append_checked(
        out, soft_str(attribute.is_none() ? item : attr_path(item, soft_str(attribute), ctx.line)),
        ctx.line);
  }
  return Value::string(std::move(out));
}

Value filter_first(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  std::vector<Value> items = iterate(input, ctx.line);
  if (items.empty()) return Value::undefined("", "No first item, sequence was empty.");
  return items.front();
}

Value filter_last(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  if (input.is_undefined()) fail_undefined(input, ctx.line);
  std::vector<Value> items = iterate(input, ctx.line);
  if (items.empty()) return Value::undefined("", "No last item, sequence was empty.");
  return items.back();
}

Value filter_list(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  return Value::list(iterate(input, ctx.line));
}

Value filter_items(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  if (input.is_undefined()) return Value::list({});
  if (!input.is_dict()) throw TemplateError(ctx.line, "Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [k, v] : input.as_dict().items) {
    pairs.push_back(Value::list({Value::string(k), v}, true));
  }
  return Value::list(std::move(pairs));
}

// The values of `keyed` in key order (Python's sort is stable, and reverse=True keeps equal
// items in their original order).
Value sorted_values(std::vector<std::pair<Value, Value>> keyed, bool reverse, int line) {
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? value_less(b.first, a.first, line) : value_less(a.first, b.first, line);
  });
  std::vector<Value> out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return Value::list(std::move(out));
}

Value filter_dictsort(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kFalse = Value::boolean(false);
  static const Value kKey = Value::string("key");
  if (!input.is_dict()) {
    throw TemplateError(ctx.line, "You can only sort by either 'key' or 'value'");
  }
  bool case_sensitive = args.arg(0, "case_sensitive", kFalse).truthy();
  std::string by = soft_str(args.arg(1, "by", kKey));
  bool reverse = args.arg(2, "reverse", kFalse).truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, v] : input.as_dict().items) {
    Value pair = Value::list({Value::string(k), v}, true);
    keyed.emplace_back(sort_key(by == "value" ? v : Value::string(k), case_sensitive), pair);
  }
  return sorted_values(std::move(keyed), reverse, ctx.line);
}

// select / reject (kByAttribute false) and selectattr / rejectattr (true): the items whose test
// result (or truthiness, with no test named) equals kKeepWhen.
template <bool kByAttribute, bool kKeepWhen>
Value filter_select(const Value& input, CallArgs& args, const FilterContext& ctx) {
  size_t next = 0;
  std::string attribute;
  if (kByAttribute) {
    if (args.positional.empty())
      throw TemplateError(ctx.line, "missing parameter for attribute name");
    attribute = soft_str(args.positional[next++]);
  }
  std::string test_name;
  CallArgs test_args;
  if (next < args.positional.size()) {
    test_name = soft_str(args.positional[next++]);
    if (!is_known_test(test_name)) {
      throw TemplateError(ctx.line, fmt::format("unsupported test '{}'", test_name));
    }
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                                args.positional.end());
    test_args.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : iterate(input, ctx.line)) {
    Value subject = kByAttribute ? attr_path(item, attribute, ctx.line) : item;
    bool passed = test_name.empty() ? subject.truthy() : ctx.test(test_name, subject, test_args);
    if (passed == kKeepWhen) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_map(const Value& input, CallArgs& args, const FilterContext& ctx) {
  std::vector<Value> out;
  if (const Value* attribute = args.find_keyword("attribute")) {
    const Value* fallback = args.find_keyword("default");
    for (const Value& item : iterate(input, ctx.line)) {
      Value v = attr_path(item, soft_str(*attribute), ctx.line);
      if (v.is_undefined() && fallback != nullptr) v = *fallback;
      out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) return Value::list(iterate(input, ctx.line));
  std::string filter = soft_str(args.positional[0]);
  if (!is_known_filter(filter)) {
    throw TemplateError(ctx.line, fmt::format("unsupported filter '{}'", filter));
  }
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(input, ctx.line)) {
    CallArgs copy = rest;
    out.push_back(ctx.filter(filter, item, copy));
  }
  return Value::list(std::move(out));
}

Value filter_unique(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kFalse = Value::boolean(false);
  static const Value kNone = Value::none();
  bool case_sensitive = args.arg(0, "case_sensitive", kFalse).truthy();
  const Value& attribute = args.arg(1, "attribute", kNone);
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : iterate(input, ctx.line)) {
    Value key =
        sort_key(attribute.is_none() ? item : attr_path(item, soft_str(attribute), ctx.line),
                 case_sensitive);
    // The search is linear in what was kept, so it is paid for.
    charge_steps(1 + seen.size() / kBytesPerStep, ctx.line);
    bool dup = false;
    for (const Value& s : seen) dup = dup || values_equal(s, key);
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value filter_reverse(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  if (input.is_string()) {
    std::u32string cps = utf8_decode(input.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8_encode(cps));
  }
  std::vector<Value> items = iterate(input, ctx.line);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_sort(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kFalse = Value::boolean(false);
  static const Value kNone = Value::none();
  bool reverse = args.arg(0, "reverse", kFalse).truthy();
  bool case_sensitive = args.arg(1, "case_sensitive", kFalse).truthy();
  const Value& attribute = args.arg(2, "attribute", kNone);
  std::vector<Value> items = iterate(input, ctx.line);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value key = attribute.is_none() ? item : attr_path(item, soft_str(attribute), ctx.line);
    keyed.emplace_back(sort_key(key, case_sensitive), std::move(item));
  }
  return sorted_values(std::move(keyed), reverse, ctx.line);
}

template <bool kIsMax>
Value filter_min_max(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kFalse = Value::boolean(false);
  static const Value kNone = Value::none();
  const int line = ctx.line;
  bool case_sensitive = args.arg(0, "case_sensitive", kFalse).truthy();
  const Value& attribute = args.arg(1, "attribute", kNone);
  std::vector<Value> items = iterate(input, line);
  if (items.empty()) return Value::undefined("", "No aggregated item, sequence was empty.");
  size_t best = 0;
  auto key = [&](size_t i) {
    Value k = attribute.is_none() ? items[i] : attr_path(items[i], soft_str(attribute), line);
    return sort_key(k, case_sensitive);
  };
  for (size_t i = 1; i < items.size(); ++i) {
    bool better =
        kIsMax ? value_less(key(best), key(i), line) : value_less(key(i), key(best), line);
    if (better) best = i;
  }
  return items[best];
}

Value filter_sum(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kNone = Value::none();
  static const Value kZero = Value::integer(0);
  const Value& attribute = args.arg(0, "attribute", kNone);
  Value total = args.arg(1, "start", kZero);
  for (const Value& item : iterate(input, ctx.line)) {
    Value v = attribute.is_none() ? item : attr_path(item, soft_str(attribute), ctx.line);
    if (!v.is_number() || !total.is_number()) {
      throw TemplateError(ctx.line, fmt::format("unsupported operand type(s) for +: '{}' and '{}'",
                                                total.type_name(), v.type_name()));
    }
    total = (total.is_float() || v.is_float())
                ? Value::floating(total.to_double() + v.to_double())
                : Value::integer(checked_int("+", as_int(total, "start", ctx.line),
                                             as_int(v, "item", ctx.line), ctx.line));
  }
  return total;
}

Value filter_replace(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kEmpty = Value::string("");
  static const Value kNone = Value::none();
  const Value& old_v = args.arg(0, "old", kEmpty);
  const Value& new_v = args.arg(1, "new", kEmpty);
  const Value& count = args.arg(2, "count", kNone);
  return Value::string(py_replace(soft_str(input), soft_str(old_v), soft_str(new_v),
                                  count.is_none() ? -1 : as_int(count, "count", ctx.line)));
}

Value filter_int(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kZero = Value::integer(0);
  static const Value kTen = Value::integer(10);
  const Value& fallback = args.arg(0, "default", kZero);
  int64_t base = as_int(args.arg(1, "base", kTen), "base", ctx.line);
  if (is_integral(input)) return Value::integer(as_int(input, "value", ctx.line));
  if (input.is_float()) {
    if (!std::isfinite(input.as_float())) return fallback;
    return Value::integer(float_to_int(input.as_float(), ctx.line));
  }
  if (input.is_string()) {
    if (auto v = parse_int(input.as_string(), base)) return Value::integer(*v);
    if (auto f = parse_float(input.as_string())) {
      if (std::isfinite(*f)) return Value::integer(float_to_int(*f, ctx.line));
    }
  }
  return fallback;
}

Value filter_float(const Value& input, CallArgs& args, const FilterContext& /*ctx*/) {
  static const Value kZero = Value::floating(0.0);
  const Value& fallback = args.arg(0, "default", kZero);
  if (input.is_number()) return Value::floating(input.to_double());
  if (input.is_string()) {
    if (auto f = parse_float(input.as_string())) return Value::floating(*f);
  }
  return fallback;
}

Value filter_abs(const Value& input, CallArgs& /*args*/, const FilterContext& ctx) {
  if (input.is_float()) return Value::floating(std::fabs(input.as_float()));
  if (is_integral(input)) {
    const int64_t v = as_int(input, "value", ctx.line);
    return Value::integer(v < 0 ? checked_int("-", 0, v, ctx.line) : v);
  }
  if (input.is_undefined()) fail_undefined(input, ctx.line);
  throw TemplateError(ctx.line, fmt::format("bad operand type for abs(): '{}'", input.type_name()));
}

Value filter_round(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kZero = Value::integer(0);
  static const Value kCommon = Value::string("common");
  const int line = ctx.line;
  int64_t precision = as_int(args.arg(0, "precision", kZero), "precision", line);
  std::string method = soft_str(args.arg(1, "method", kCommon));
  if (input.is_undefined()) fail_undefined(input, line);
  if (!input.is_number()) {
    throw TemplateError(line,
                        fmt::format("type {} doesn't define __round__ method", input.type_name()));
  }
  if (method == "common") {
    if (!input.is_float()) return Value::integer(as_int(input, "value", line));
    return Value::floating(py_round(input.as_float(), precision));
  }
  if (method != "ceil" && method != "floor") {
    throw TemplateError(line, "method must be common, ceil or floor");
  }
  double p = std::pow(10.0, static_cast<double>(precision));
  double x = input.to_double() * p;
  return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / p);
}

Value filter_indent(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kFour = Value::integer(4);
  static const Value kFalse = Value::boolean(false);
  const Value& width = args.arg(0, "width", kFour);
  bool first = args.arg(1, "first", kFalse).truthy();
  bool blank = args.arg(2, "blank", kFalse).truthy();
  const int64_t spaces =
      width.is_string() ? 0 : std::max<int64_t>(0, as_int(width, "width", ctx.line));
  check_string_bytes(static_cast<uint64_t>(spaces), ctx.line);
  std::string indention =
      width.is_string() ? width.as_string() : std::string(static_cast<size_t>(spaces), ' ');
  // Jinja2 appends a newline before splitlines() so a trailing newline is kept.
  std::vector<std::string> lines = py_splitlines(soft_str(input) + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) append_checked(rv, "\n" + indention, ctx.line);
      append_checked(rv, lines[i], ctx.line);
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      append_checked(rv, "\n", ctx.line);
      if (!lines[i].empty()) append_checked(rv, indention, ctx.line);
      append_checked(rv, lines[i], ctx.line);
    }
  }
  if (first) {
    check_string_bytes(uint64_t{indention.size()} + rv.size(), ctx.line);
    rv = indention + rv;
  }
  return Value::string(rv);
}

// Jinja2's do_format: soft_str(value) % (kwargs or args).
Value filter_format(const Value& input, CallArgs& args, const FilterContext& ctx) {
  if (!args.keyword.empty()) {
    Dict d;
    for (const auto& [k, v] : args.keyword) d.set(k, v);
    return Value::string(percent_format(soft_str(input), Value::dict(std::move(d)), ctx.line));
  }
  return Value::string(
      percent_format(soft_str(input), Value::list(args.positional, /*is_tuple=*/true), ctx.line));
}

Value filter_center(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kEighty = Value::integer(80);
  int64_t width = as_int(args.arg(0, "width", kEighty), "width", ctx.line);
  std::string s = soft_str(input);
  auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value::string(s);
  // str.center puts the extra space on the right when the margin is odd and len is even.
  int64_t margin = width - len;
  check_string_bytes(s.size() + static_cast<uint64_t>(margin), ctx.line);
  int64_t left = margin / 2 + (margin & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                       std::string(static_cast<size_t>(margin - left), ' '));
}

Value filter_wordcount(const Value& input, CallArgs& /*args*/, const FilterContext& /*ctx*/) {
  int64_t words = 0;
  bool in_word = false;
  for (char32_t cp : utf8_decode(soft_str(input))) {
    bool word_char = cp == '_' || (cp >= '0' && cp <= '9') || py_is_alpha(cp) ||
                     (cp >= 0x80 && !py_is_space(cp));
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

Value filter_attr(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kEmpty = Value::string("");
  const Value& attribute = args.arg(0, "name", kEmpty);
  // Python's getattr only: unlike `x.name`, no fallback to the dict key.
  if (input.is_dict() && input.as_dict().find(soft_str(attribute)) != nullptr) {
    return Value::undefined(soft_str(attribute));
  }
  if (input.is_undefined()) return Value::undefined(soft_str(attribute));
  return get_attribute(input, soft_str(attribute), ctx.line);
}

Value filter_batch(const Value& input, CallArgs& args, const FilterContext& ctx) {
  static const Value kNone = Value::none();
  int64_t count = as_int(args.arg(0, "linecount", kNone), "linecount", ctx.line);
  if (count <= 0) throw TemplateError(ctx.line, "batch size must be positive");
  const Value& fill = args.arg(1, "fill_with", kNone);
  if (!fill.is_none()) check_list_items(static_cast<uint64_t>(count), ctx.line);
  std::vector<Value> batches;
  std::vector<Value> current;
  for (const Value& item : iterate(input, ctx.line)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == count) {
      batches.push_back(Value::list(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (!fill.is_none()) {
      while (static_cast<int64_t>(current.size()) < count) current.push_back(fill);
    }
    batches.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(batches));
}

// Every filter by name (aliases included); is_known_filter asks the same table, so a template
// that names anything else fails at load time.
const std::map<std::string, FilterFn, std::less<>> kFilters = {
    {"abs", filter_abs},
    {"attr", filter_attr},
    {"batch", filter_batch},
    {"capitalize", filter_text<py_capitalize>},
    {"center", filter_center},
    {"count", filter_length},
    {"d", filter_default},
    {"default", filter_default},
    {"dictsort", filter_dictsort},
    {"e", filter_text<html_escape>},
    {"escape", filter_text<html_escape>},
    {"first", filter_first},
    {"float", filter_float},
    {"format", filter_format},
    {"indent", filter_indent},
    {"int", filter_int},
    {"items", filter_items},
    {"join", filter_join},
    {"last", filter_last},
    {"length", filter_length},
    {"list", filter_list},
    {"lower", filter_text<py_lower_str>},
    {"map", filter_map},
    {"max", filter_min_max<true>},
    {"min", filter_min_max<false>},
    {"reject", filter_select<false, false>},
    {"rejectattr", filter_select<true, false>},
    {"replace", filter_replace},
    {"reverse", filter_reverse},
    {"round", filter_round},
    {"safe", filter_safe},
    {"select", filter_select<false, true>},
    {"selectattr", filter_select<true, true>},
    {"sort", filter_sort},
    {"string", filter_string},
    {"sum", filter_sum},
    {"title", filter_text<jinja_title>},
    {"tojson", filter_tojson},
    {"trim", filter_trim},
    {"unique", filter_unique},
    {"upper", filter_text<py_upper_str>},
    {"wordcount", filter_wordcount},
};

}  // namespace

bool is_known_filter(std::string_view name) {
  return kFilters.count(name) != 0;
}
bool is_known_test(std::string_view name) {
  return kTests.count(name) != 0;
}

Value apply_filter(const std::string& name, const Value& input, CallArgs& args,
                   const FilterContext& ctx) {
  const auto it = kFilters.find(name);
  if (it == kFilters.end()) {
    throw TemplateError(ctx.line, fmt::format("unsupported filter '{}'", name));
  }
  return it->second(input, args, ctx);
}

bool apply_test(const std::string& name, const Value& input, CallArgs& args, int line) {
  static const Value kUndefined;
  const Value& other = args.arg(0, "value", kUndefined);
  if (name == "defined") return !input.is_undefined();
  if (name == "undefined") return input.is_undefined();
  if (name == "none") return input.is_none();
  if (name == "boolean") return input.is_bool();
  if (name == "true") return input.is_bool() && input.as_bool();
  if (name == "false") return input.is_bool() && !input.as_bool();
  if (name == "integer") return input.is_int();
  if (name == "float") return input.is_float();
  if (name == "number") return input.is_number();
  if (name == "string") return input.is_string();
  if (name == "mapping") return input.is_dict();
  if (name == "iterable") {
    return input.is_undefined() || input.is_string() || input.is_list() || input.is_dict();
  }
  if (name == "sequence") {
    return input.is_undefined() || input.is_string() || input.is_list() || input.is_dict();
  }
  if (name == "callable") return input.is_callable();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    std::string s = soft_str(input);
    bool any_cased = false;
    for (char32_t c : utf8_decode(s)) {
      bool is_upper = py_lower(c) != c;
      bool is_lower = py_upper(c) != c;
      any_cased = any_cased || is_upper || is_lower;
      if (name == "lower" ? is_upper : is_lower) return false;
    }
    return any_cased;
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (input.is_undefined()) fail_undefined(input, line);
    if (!input.is_number()) {
      throw TemplateError(line, fmt::format("unsupported operand type(s) for %: '{}' and 'int'",
                                            input.type_name()));
    }
    double divisor = 2.0;
    if (name == "divisibleby") {
      if (!other.is_number()) throw TemplateError(line, "divisibleby needs a number");
      divisor = other.to_double();
      if (divisor == 0.0) throw TemplateError(line, "integer division or modulo by zero");
    }
    double r = std::fmod(input.to_double(), divisor);
    if (name == "odd") return r != 0.0;
    return r == 0.0;
  }
  if (name == "in") return contains(other, input, line);
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(input, other);
  if (name == "ne" || name == "!=") return !values_equal(input, other);
  if (name == "lt" || name == "lessthan" || name == "<") return value_less(input, other, line);
  if (name == "gt" || name == "greaterthan" || name == ">") return value_less(other, input, line);
  if (name == "le" || name == "<=") {
    return value_less(input, other, line) || values_equal(input, other);
  }
  if (name == "ge" || name == ">=") {
    return value_less(other, input, line) || values_equal(input, other);
  }
  if (name == "sameas") {
    if (input.kind() != other.kind()) return false;
    if (input.is_none() || input.is_undefined()) return true;
    if (input.is_bool()) return input.as_bool() == other.as_bool();
    return values_equal(input, other);
  }
  throw TemplateError(line, fmt::format("unsupported test '{}'", name));
}

}  // namespace minfer::chat
