// Attribute and item access, slicing, iteration, `in`, and the methods of str, list and dict,
// as Jinja2's ImmutableSandboxedEnvironment resolves them (jinja2/sandbox.py: getattr/getitem,
// modifies_known_mutable).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "chat/py_string.h"

namespace minfer::chat {
namespace {

const std::set<std::string, std::less<>> kStrMethods = {
    "startswith", "endswith", "split",      "rsplit",  "strip",      "lstrip",  "rstrip",
    "replace",    "upper",    "lower",      "title",   "capitalize", "find",    "rfind",
    "count",      "join",     "splitlines", "isdigit", "isalpha",    "isspace", "isalnum",
    "islower",    "isupper",  "format",     "index",   "rindex"};
const std::set<std::string, std::less<>> kDictMethods = {"items", "keys", "values", "get", "copy"};
// Mutating methods: present on the type, refused by the immutable sandbox.
const std::set<std::string, std::less<>> kDictUnsafe = {"pop", "popitem", "update", "setdefault",
                                                        "clear"};
const std::set<std::string, std::less<>> kListMethods = {"index", "count", "copy"};
const std::set<std::string, std::less<>> kListUnsafe = {"append", "extend", "insert", "pop",
                                                        "remove", "clear",  "sort",   "reverse"};

std::optional<std::string> optional_string(const Value& v, const char* method, int line) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  if (!v.is_string()) {
    throw TemplateError(
        line, fmt::format("{}() argument must be str or None, not {}", method, v.type_name()));
  }
  return v.as_string();
}

int64_t int_arg(const Value& v, const char* what, int line) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  throw TemplateError(line, fmt::format("{} must be an integer, not {}", what, v.type_name()));
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (std::string& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  std::u32string cps = utf8_decode(s);
  if (cps.empty()) return false;
  return std::all_of(cps.begin(), cps.end(), pred);
}

// str.format with automatic ({}), positional ({0}) and keyword ({name}) fields; format specs
// and conversions are not supported.
std::string str_format(const std::string& fmt_text, const CallArgs& args, int line) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt_text.size(); ++i) {
    char c = fmt_text[i];
    if (c == '{' && i + 1 < fmt_text.size() && fmt_text[i + 1] == '{') {
      out.push_back('{');
      ++i;
    } else if (c == '}' && i + 1 < fmt_text.size() && fmt_text[i + 1] == '}') {
      out.push_back('}');
      ++i;
    } else if (c == '{') {
      size_t close = fmt_text.find('}', i);
      if (close == std::string::npos) throw TemplateError(line, "single '{' in format string");
      std::string field = fmt_text.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!") != std::string::npos) {
        throw TemplateError(line, "unsupported construct: str.format spec or conversion");
      }
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index < args.positional.size()) v = &args.positional[auto_index++];
      } else if (std::all_of(field.begin(), field.end(),
                             [](char d) { return d >= '0' && d <= '9'; })) {
        size_t idx = std::stoul(field);
        if (idx < args.positional.size()) v = &args.positional[idx];
      } else {
        v = args.find_keyword(field);
      }
      if (v == nullptr)
        throw TemplateError(line, fmt::format("format field '{}' has no value", field));
      append_checked(out, to_str(*v), line);
      i = close;
    } else if (c == '}') {
      throw TemplateError(line, "single '}' in format string");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Value call_str_method(const std::string& s, const std::string& name, CallArgs& args, int line) {
  static const Value kNone = Value::none();
  static const Value kMinusOne = Value::integer(-1);
  if (name == "startswith" || name == "endswith") {
    const Value& prefix = args.arg(0, "prefix", kNone);
    std::vector<std::string> options;
    if (prefix.is_string()) {
      options.push_back(prefix.as_string());
    } else if (prefix.is_tuple()) {
      for (const Value& p : prefix.as_list().items) {
        if (!p.is_string()) throw TemplateError(line, "tuple for startswith must only contain str");
        options.push_back(p.as_string());
      }
    } else {
      throw TemplateError(line, fmt::format("{} first arg must be str or a tuple of str, not {}",
                                            name, prefix.type_name()));
    }
    for (const std::string& o : options) {
      bool hit = name == "startswith"
                     ? s.compare(0, o.size(), o) == 0
                     : (s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0);
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "split" || name == "rsplit") {
    std::optional<std::string> sep = optional_string(args.arg(0, "sep", kNone), "split", line);
    if (sep && sep->empty()) throw TemplateError(line, "empty separator");
    int64_t maxsplit = int_arg(args.arg(1, "maxsplit", kMinusOne), "maxsplit", line);
    return string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    std::optional<std::string> chars =
        optional_string(args.arg(0, "chars", kNone), name.c_str(), line);
    return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "replace") {
    const Value& old_v = args.arg(0, "old", kNone);
    const Value& new_v = args.arg(1, "new", kNone);
    if (!old_v.is_string() || !new_v.is_string()) {
      throw TemplateError(line, "replace() arguments must be str");
    }
    int64_t count = int_arg(args.arg(2, "count", kMinusOne), "count", line);
    return Value::string(py_replace(s, old_v.as_string(), new_v.as_string(), count));
  }
  if (name == "upper") return Value::string(py_upper_str(s));
  if (name == "lower") return Value::string(py_lower_str(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const Value& sub = args.arg(0, "sub", kNone);
    if (!sub.is_string()) {
      throw TemplateError(line, fmt::format("must be str, not {}", sub.type_name()));
    }
    if (args.positional.size() > 1) {
      throw TemplateError(line, fmt::format("unsupported construct: str.{} with start/end", name));
    }
    if (name == "count") return Value::integer(py_count(s, sub.as_string()));
    int64_t at = py_find(s, sub.as_string(), name[0] == 'r');
    if (at < 0 && (name == "index" || name == "rindex")) {
      throw TemplateError(line, "substring not found");
    }
    return Value::integer(at);
  }
  if (name == "join") {
    const Value& items = args.arg(0, "iterable", kNone);
    std::string out;
    bool first = true;
    for (const Value& item : iterate(items, line)) {
      if (!item.is_string()) {
        throw TemplateError(
            line, fmt::format("sequence item: expected str instance, {} found", item.type_name()));
      }
      if (!first) append_checked(out, s, line);
      first = false;
      append_checked(out, item.as_string(), line);
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") return string_list(py_splitlines(s));
  if (name == "isdigit") {
    return Value::boolean(all_chars(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  }
  if (name == "isalpha") return Value::boolean(all_chars(s, py_is_alpha));
  if (name == "isspace") return Value::boolean(all_chars(s, py_is_space));
  if (name == "isalnum") {
    return Value::boolean(
        all_chars(s, [](char32_t c) { return py_is_alpha(c) || (c >= '0' && c <= '9'); }));
  }
  if (name == "islower" || name == "isupper") {
    bool any_cased = false;
    for (char32_t c : utf8_decode(s)) {
      bool is_upper = py_lower(c) != c;
      bool is_lower = py_upper(c) != c;
      if (is_upper || is_lower) any_cased = true;
      if (name == "islower" ? is_upper : is_lower) return Value::boolean(false);
    }
    return Value::boolean(any_cased);
  }
  if (name == "format") return Value::string(str_format(s, args, line));
  throw TemplateError(line, fmt::format("'str' object has no attribute '{}'", name));
}

Value call_dict_method(const Value& obj, const std::string& name, CallArgs& args, int line) {
  const Dict& d = obj.as_dict();
  std::vector<Value> items;
  if (name == "items") {
    for (const auto& [k, v] : d.items) items.push_back(Value::list({Value::string(k), v}, true));
    return Value::list(std::move(items));
  }
  if (name == "keys") {
    for (const auto& [k, v] : d.items) items.push_back(Value::string(k));
    return Value::list(std::move(items));
  }
  if (name == "values") {
    for (const auto& [k, v] : d.items) items.push_back(v);
    return Value::list(std::move(items));
  }
  if (name == "get") {
    static const Value kNone = Value::none();
    const Value& key = args.arg(0, "key", kNone);
    const Value& fallback = args.arg(1, "default", kNone);
    if (!key.is_string()) return fallback;
    const Value* v = d.find(key.as_string());
    return v != nullptr ? *v : fallback;
  }
  if (name == "copy") return obj;
  throw TemplateError(line, fmt::format("'dict' object has no attribute '{}'", name));
}

Value call_list_method(const Value& obj, const std::string& name, CallArgs& args, int line) {
  const auto& items = obj.as_list().items;
  static const Value kUndefined;
  const Value& x = args.arg(0, "value", kUndefined);
  if (name == "count") {
    int64_t n = 0;
    for (const Value& item : items) n += values_equal(item, x) ? 1 : 0;
    return Value::integer(n);
  }
  if (name == "index") {
    for (size_t i = 0; i < items.size(); ++i) {
      if (values_equal(items[i], x)) return Value::integer(static_cast<int64_t>(i));
    }
    throw TemplateError(line, fmt::format("{} is not in list", to_repr(x)));
  }
  if (name == "copy") return Value::list(items, obj.is_tuple());
  throw TemplateError(line, fmt::format("'list' object has no attribute '{}'", name));
}

Value bound_method(const Value& obj, const std::string& name) {
  return Value::callable(name, [obj, name](CallArgs& args) -> Value {
    // A method reads its object (str.count over 16 MiB is not one step).
    charge_steps(value_weight(obj), 0);
    if (obj.is_string()) return call_str_method(obj.as_string(), name, args, 0);
    if (obj.is_dict()) return call_dict_method(obj, name, args, 0);
    return call_list_method(obj, name, args, 0);
  });
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined(name, fmt::format("access to attribute '{}' of '{}' object is unsafe.",
                                            name, obj.type_name()));
}

// Python's slice.indices(n) followed by the index walk.
std::vector<size_t> slice_indices(int64_t n, const Value* start, const Value* stop,
                                  const Value* step, int line) {
  auto read = [line](const Value* v, const char* what) -> std::optional<int64_t> {
    if (v == nullptr || v->is_none()) return std::nullopt;
    if (v->is_int() || v->is_bool()) return v->is_bool() ? int64_t{v->as_bool()} : v->as_int();
    throw TemplateError(line, fmt::format("slice {} must be an integer or None", what));
  };
  int64_t st = read(step, "step").value_or(1);
  if (st == 0) throw TemplateError(line, "slice step cannot be zero");
  int64_t lower = st > 0 ? 0 : -1;
  int64_t upper = st > 0 ? n : n - 1;
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  int64_t b = clamp(read(start, "start"), st > 0 ? lower : upper);
  int64_t e = clamp(read(stop, "stop"), st > 0 ? upper : lower);
  std::vector<size_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

bool is_known_method(std::string_view name) {
  return kStrMethods.count(name) != 0 || kDictMethods.count(name) != 0 ||
         kDictUnsafe.count(name) != 0 || kListMethods.count(name) != 0 ||
         kListUnsafe.count(name) != 0 || name == "cycle";
}

Value get_attribute(const Value& obj, const std::string& name, int line) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      fail_undefined(obj, line);
    case Value::Kind::kString:
      if (kStrMethods.count(name) != 0) return bound_method(obj, name);
      break;
    case Value::Kind::kDict:
      if (kDictMethods.count(name) != 0) return bound_method(obj, name);
      if (kDictUnsafe.count(name) != 0) return unsafe(obj, name);
      if (const Value* v = obj.as_dict().find(name)) return *v;
      break;
    case Value::Kind::kList:
      if (kListMethods.count(name) != 0) return bound_method(obj, name);
      if (kListUnsafe.count(name) != 0 && !obj.is_tuple()) return unsafe(obj, name);
      break;
    case Value::Kind::kNamespace:
      if (const Value* v = obj.as_namespace().attrs.find(name)) return *v;
      break;
    default:
      break;
  }
  return Value::undefined(name, "");
}

Value get_item(const Value& obj, const Value& key, int line) {
  // Indexing a str decodes it, a dict lookup is linear: both are paid for; a list's is not.
  if (!obj.is_list()) charge_steps(value_weight(obj), line);
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      fail_undefined(obj, line);
    case Value::Kind::kDict:
      if (key.is_string()) {
        if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
      }
      break;
    case Value::Kind::kList:
    case Value::Kind::kString:
      if (key.is_int() || key.is_bool()) {
        int64_t i = key.is_bool() ? int64_t{key.as_bool()} : key.as_int();
        if (obj.is_list()) {
          const auto n = static_cast<int64_t>(obj.as_list().items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return obj.as_list().items[static_cast<size_t>(i)];
        } else {
          std::u32string cps = utf8_decode(obj.as_string());
          const auto n = static_cast<int64_t>(cps.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n)
            return Value::string(utf8_encode(cps.substr(static_cast<size_t>(i), 1)));
        }
        return Value::undefined(to_str(key));
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attribute(obj, key.as_string(), line);
  return Value::undefined(to_str(key));
}

Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step,
                int line) {
  charge_steps(value_weight(obj), line);
  if (obj.is_list()) {
    const auto& items = obj.as_list().items;
    std::vector<Value> out;
    for (size_t i : slice_indices(static_cast<int64_t>(items.size()), start, stop, step, line)) {
      out.push_back(items[i]);
    }
    return Value::list(std::move(out), obj.is_tuple());
  }
  if (obj.is_string()) {
    std::u32string cps = utf8_decode(obj.as_string());
    std::u32string out;
    for (size_t i : slice_indices(static_cast<int64_t>(cps.size()), start, stop, step, line)) {
      out.push_back(cps[i]);
    }
    return Value::string(utf8_encode(out));
  }
  if (obj.is_undefined()) fail_undefined(obj, line);
  // Python raises TypeError (dict: unhashable slice); Jinja2 turns that into Undefined.
  return Value::undefined("slice");
}

std::vector<Value> iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, item] : v.as_dict().items) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Kind::kString: {
      check_list_items(utf8_length(v.as_string()), line);
      std::vector<Value> chars;
      for (char32_t cp : utf8_decode(v.as_string())) {
        std::string one;
        utf8::append(one, cp);
        chars.push_back(Value::string(std::move(one)));
      }
      return chars;
    }
    default:
      throw TemplateError(line, fmt::format("'{}' object is not iterable", v.type_name()));
  }
}

bool contains(const Value& container, const Value& item, int line) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw TemplateError(
            line,
            fmt::format("'in <string>' requires string as left operand, not {}", item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& x : container.as_list().items) {
        if (values_equal(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      throw TemplateError(
          line, fmt::format("argument of type '{}' is not iterable", container.type_name()));
  }
}

}  // namespace minfer::chat
