// Global functions (Jinja2's range, namespace and dict; transformers' raise_exception and
// strftime_now) and json.dumps, which transformers installs as the tojson filter.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "chat/py_string.h"

namespace minfer::chat {
namespace {

int64_t int_of(const Value& v, int line) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  throw TemplateError(
      line, fmt::format("'{}' object cannot be interpreted as an integer", v.type_name()));
}

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out.push_back('"');
  for (char32_t cp : utf8_decode(s)) {
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
          if (cp >= 0x10000) {
            char32_t v = cp - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
          }
        } else {
          utf8::append(out, cp);
        }
    }
  }
  out.push_back('"');
}

struct JsonWriter {
  bool ensure_ascii;
  bool has_indent;
  std::string indent;
  std::string item_sep;
  std::string key_sep;
  bool sort_keys;
  int line;

  void newline(int level, std::string& out) const {
    check_string_bytes(out.size() + 1 + saturating_mul(static_cast<uint64_t>(level), indent.size()),
                       line);
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += indent;
  }

  void write(const Value& v, int level, std::string& out) const {
    switch (v.kind()) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat: {
        double f = v.as_float();
        if (std::isnan(f)) {
          out += "NaN";
        } else if (std::isinf(f)) {
          out += f > 0 ? "Infinity" : "-Infinity";
        } else {
          out += float_repr(f);
        }
        return;
      }
      case Value::Kind::kString:
        dump_string(v.as_string(), ensure_ascii, out);
        return;
      case Value::Kind::kList: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += item_sep;
          if (has_indent) newline(level + 1, out);
          write(items[i], level + 1, out);
          // Items may share one big value: the size, not the item count, bounds the work.
          check_string_bytes(out.size(), line);
        }
        if (has_indent) newline(level, out);
        out.push_back(']');
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& e : v.as_dict().items) entries.push_back(&e);
        if (entries.empty()) {
          out += "{}";
          return;
        }
        if (sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out.push_back('{');
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out += item_sep;
          if (has_indent) newline(level + 1, out);
          dump_string(entries[i]->first, ensure_ascii, out);
          out += key_sep;
          write(entries[i]->second, level + 1, out);
          check_string_bytes(out.size(), line);
        }
        if (has_indent) newline(level, out);
        out.push_back('}');
        return;
      }
      default:
        throw TemplateError(
            line, fmt::format("Object of type {} is not JSON serializable", v.type_name()));
    }
  }
};

Value make_range() {
  return Value::callable("range", [](CallArgs& args) {
    int64_t start = 0;
    int64_t stop = 0;
    int64_t step = 1;
    const auto& p = args.positional;
    if (p.size() == 1) {
      stop = int_of(p[0], 0);
    } else if (p.size() == 2 || p.size() == 3) {
      start = int_of(p[0], 0);
      stop = int_of(p[1], 0);
      if (p.size() == 3) step = int_of(p[2], 0);
    } else {
      throw TemplateError(0, fmt::format("range expected 1 to 3 arguments, got {}", p.size()));
    }
    if (step == 0) throw TemplateError(0, "range() arg 3 must not be zero");
    // The sandbox caps ranges at MAX_RANGE (100000) items.
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (items.size() >= 100000) {
        throw TemplateError(0,
                            "Range too big. The sandbox blocks ranges larger than MAX_RANGE "
                            "(100000).");
      }
      items.push_back(Value::integer(i));
    }
    return Value::list(std::move(items));
  });
}

Dict dict_from_args(const CallArgs& args, const char* what) {
  Dict d;
  if (args.positional.size() > 1) {
    throw TemplateError(0, fmt::format("{} expected at most 1 positional argument", what));
  }
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict()) {
      d = init.as_dict();
    } else {
      for (const Value& pair : iterate(init, 0)) {
        std::vector<Value> kv = iterate(pair, 0);
        if (kv.size() != 2 || !kv[0].is_string()) {
          throw TemplateError(
              0, fmt::format("{}: expected (key, value) pairs with string keys", what));
        }
        // Dict::set looks the key up linearly.
        charge_steps(1 + d.items.size() / kBytesPerStep, 0);
        d.set(kv[0].as_string(), kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(k, v);
  return d;
}

// %s with `spec` ("%-10.3"): precision cuts and width pads in code points, as Python's do
// (snprintf would count bytes and stop at its buffer).
std::string pad_text(std::string text, const std::string& spec, int line) {
  const bool left = spec.find('-') != std::string::npos;
  size_t p = 1;
  while (p < spec.size() && std::string("-+ #0").find(spec[p]) != std::string::npos) ++p;
  size_t dot = spec.find('.', p);
  const std::string width_text =
      spec.substr(p, dot == std::string::npos ? std::string::npos : dot - p);
  std::u32string cps = utf8_decode(text);
  if (dot != std::string::npos) {
    const std::string precision_text = spec.substr(dot + 1);
    const uint64_t precision =
        precision_text.empty() ? 0 : std::stoull(precision_text.substr(0, 12));
    if (precision < cps.size()) {
      cps.resize(static_cast<size_t>(precision));
      text = utf8_encode(cps);
    }
  }
  const uint64_t width = width_text.empty() ? 0 : std::stoull(width_text.substr(0, 12));
  if (width <= cps.size()) return text;
  check_string_bytes(text.size() + (width - cps.size()), line);
  const std::string padding(static_cast<size_t>(width - cps.size()), ' ');
  return left ? text + padding : padding + text;
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args, int line) {
  std::vector<Value> positional;
  const Dict* mapping = nullptr;
  if (args.is_tuple()) {
    positional = args.as_list().items;
  } else if (args.is_dict()) {
    mapping = &args.as_dict();
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    size_t p = i + 1;
    const Value* arg = nullptr;
    if (p < fmt.size() && fmt[p] == '(') {
      size_t close = fmt.find(')', p);
      if (close == std::string::npos || mapping == nullptr) {
        throw TemplateError(line, "format requires a mapping");
      }
      arg = mapping->find(fmt.substr(p + 1, close - p - 1));
      if (arg == nullptr)
        throw TemplateError(line, fmt::format("KeyError: '{}'", fmt.substr(p + 1, close - p - 1)));
      p = close + 1;
    }
    std::string spec = "%";
    while (p < fmt.size() && std::string("-+ #0").find(fmt[p]) != std::string::npos)
      spec += fmt[p++];
    while (p < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[p]))) spec += fmt[p++];
    if (p < fmt.size() && fmt[p] == '.') {
      spec += fmt[p++];
      while (p < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[p]))) spec += fmt[p++];
    }
    if (p >= fmt.size()) throw TemplateError(line, "incomplete format");
    char type = fmt[p];
    i = p;
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    if (arg == nullptr) {
      if (mapping != nullptr || next >= positional.size()) {
        throw TemplateError(line, "not enough arguments for format string");
      }
      arg = &positional[next++];
    }
    char buf[512];
    if (type != 's' && type != 'r' && type != 'a') {
      // snprintf below writes into buf: a wider field would be cut, and a huge one is slow.
      size_t run = 0;
      for (size_t k = spec.find_first_not_of("%-+ #0"); k < spec.size(); ++k) {
        run = std::isdigit(static_cast<unsigned char>(spec[k])) ? run + 1 : 0;
        if (run > 3) {
          throw TemplateError(line, fmt::format("unsupported construct: format width or "
                                                "precision over 999 in '{}{}'",
                                                spec, type));
        }
      }
    }
    if (type == 's' || type == 'r' || type == 'a') {
      append_checked(out, pad_text(type == 's' ? to_str(*arg) : to_repr(*arg), spec, line), line);
    } else if (type == 'd' || type == 'i' || type == 'x' || type == 'X' || type == 'o' ||
               type == 'c') {
      if (!arg->is_number()) {
        throw TemplateError(
            line, fmt::format("%{} format: a number is required, not {}", type, arg->type_name()));
      }
      const long long v =
          arg->is_float() ? float_to_int(arg->as_float(), line) : int_of(*arg, line);
      if (type == 'c') {
        if (v < 0 || v > 0x10FFFF) {
          throw TemplateError(line, fmt::format("%c arg not in range(0x110000): {}", v));
        }
        std::string one;
        utf8::append(one, static_cast<char32_t>(v));
        append_checked(out, one, line);
        continue;
      }
      spec += "ll";
      spec += (type == 'i') ? 'd' : type;
      std::snprintf(buf, sizeof(buf), spec.c_str(), v);
      append_checked(out, buf, line);
    } else if (std::string("fFeEgG").find(type) != std::string::npos) {
      if (!arg->is_number()) {
        throw TemplateError(line, fmt::format("must be real number, not {}", arg->type_name()));
      }
      spec += type;
      std::snprintf(buf, sizeof(buf), spec.c_str(), arg->to_double());
      append_checked(out, buf, line);
    } else {
      throw TemplateError(line, fmt::format("unsupported format character '{}'", type));
    }
  }
  if (mapping == nullptr && next < positional.size()) {
    throw TemplateError(line, "not all arguments converted during string formatting");
  }
  return out;
}

bool is_known_global(std::string_view name) {
  static const std::set<std::string, std::less<>> kGlobals = {"range", "namespace", "dict",
                                                              "raise_exception", "strftime_now"};
  return kGlobals.count(name) != 0;
}

Value make_global(const std::string& name) {
  if (name == "range") return make_range();
  if (name == "namespace") {
    return Value::callable("namespace", [](CallArgs& args) {
      return Value::make_namespace(dict_from_args(args, "namespace"));
    });
  }
  if (name == "dict") {
    return Value::callable(
        "dict", [](CallArgs& args) { return Value::dict(dict_from_args(args, "dict")); });
  }
  if (name == "raise_exception") {
    return Value::callable("raise_exception", [](CallArgs& args) -> Value {
      std::string message = args.positional.empty() ? "" : to_str(args.positional[0]);
      throw TemplateError(0, "raise_exception: " + message);
    });
  }
  if (name == "strftime_now") {
    return Value::callable("strftime_now", [](CallArgs& args) {
      if (args.positional.empty() || !args.positional[0].is_string()) {
        throw TemplateError(0, "strftime_now expects a format string");
      }
      std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      char buf[512];
      size_t n = std::strftime(buf, sizeof(buf), args.positional[0].as_string().c_str(), &local);
      return Value::string(std::string(buf, n));
    });
  }
  throw TemplateError(0, fmt::format("unknown global '{}'", name));
}

std::string json_dumps(const Value& v, bool ensure_ascii, const Value& indent,
                       const std::string& item_separator, const std::string& key_separator,
                       bool sort_keys, int line) {
  JsonWriter w{ensure_ascii, false, "", item_separator, key_separator, sort_keys, line};
  if (indent.is_string()) {
    w.has_indent = true;
    w.indent = indent.as_string();
  } else if (indent.is_int() || indent.is_bool()) {
    w.has_indent = true;
    int64_t n = indent.is_bool() ? indent.as_bool() : indent.as_int();
    check_string_bytes(static_cast<uint64_t>(std::max<int64_t>(0, n)), line);
    w.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
  } else if (!indent.is_none()) {
    throw TemplateError(
        line, fmt::format("tojson indent must be an int or a string, not {}", indent.type_name()));
  }
  std::string out;
  w.write(v, 0, out);
  return out;
}

}  // namespace minfer::chat
