#include "chat/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "chat/budget.h"
#include "chat/py_string.h"
#include "core/enum_names.h"

namespace minfer::chat {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::find_keyword(std::string_view name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value& CallArgs::arg(size_t i, std::string_view name, const Value& fallback) const {
  if (i < positional.size()) return positional[i];
  if (const Value* kw = find_keyword(name)) return *kw;
  return fallback;
}

namespace {

uint32_t depth_of(const Value& v) {
  if (v.is_list()) return v.as_list().depth;
  if (v.is_dict()) return v.as_dict().depth;
  return 0;
}

// 1 + the deepest of `values`, refused past kMaxNesting.
template <typename Range, typename Get>
uint32_t nesting(const Range& values, Get get) {
  uint32_t deepest = 0;
  for (const auto& item : values) deepest = std::max(deepest, depth_of(get(item)));
  if (deepest + 1 > kMaxNesting) {
    throw TemplateError(0,
                        fmt::format("lists and dicts nested more than {} deep exceed the "
                                    "nesting limit",
                                    kMaxNesting),
                        /*over_budget=*/true);
  }
  return deepest + 1;
}

}  // namespace

Value Value::list(std::vector<Value> items, bool is_tuple) {
  const uint32_t depth = nesting(items, [](const Value& v) -> const Value& { return v; });
  auto l = std::make_shared<List>();
  l->depth = depth;
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  return Value(std::shared_ptr<const List>(std::move(l)));
}

Value Value::dict(Dict d) {
  d.depth = nesting(d.items, [](const auto& kv) -> const Value& { return kv.second; });
  return Value(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(d))));
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  return Value(std::shared_ptr<const Callable>(
      std::make_shared<Callable>(Callable{std::move(name), std::move(fn)})));
}

Value Value::make_namespace(Dict attrs) {
  auto ns = std::make_shared<Namespace>();
  ns->attrs = std::move(attrs);
  // `{% set ns.self = ns %}` makes a cycle that reference counting never frees: the render
  // empties every namespace it made when it ends.
  track_namespace(ns);
  return Value(std::move(ns));
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::kBool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::kInt:
      return static_cast<double>(as_int());
    case Kind::kFloat:
      return as_float();
    default:
      return 0.0;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return !as_list().items.empty();
    case Kind::kDict:
      return !as_dict().items.empty();
    case Kind::kCallable:
    case Kind::kNamespace:
      return true;
  }
  return false;
}

const char* Value::type_name() const {
  // Python's type(x).__name__, in Kind order.
  static constexpr std::array<const char*, 10> kTypeNames = {
      "Undefined", "NoneType", "bool", "int",      "float",
      "str",       "list",     "dict", "function", "Namespace"};
  static_assert(kTypeNames.size() == static_cast<size_t>(Kind::kNamespace) + 1);
  if (is_tuple()) return "tuple";
  return enum_name(kTypeNames, kind(), "object");
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (f == 0.0) return std::signbit(f) ? "-0.0" : "0.0";
  // Python's repr: the shortest of %.1e .. %.17e that reads back to f (David Gay's algorithm
  // gives the same digits), then laid out as fixed point when -4 <= exponent < 16.
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string s = buf;
  size_t e_pos = s.find('e');
  std::string mantissa = s.substr(0, e_pos);
  int exponent = std::atoi(s.c_str() + e_pos + 1);
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out.assign("0.");
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out = digits;
      out.append(static_cast<size_t>(exponent + 1) - digits.size(), '0');
      out += ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent + 1));
      out += '.';
      out += digits.substr(static_cast<size_t>(exponent + 1));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

namespace {

void append_repr(const Value& v, std::string& out);

void append_str(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += float_repr(v.as_float());
      return;
    case Value::Kind::kString:
      out += v.as_string();
      return;
    case Value::Kind::kList: {
      const List& l = v.as_list();
      out += l.is_tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(l.items[i], out);
        // Items may share one big value: the size, not the item count, bounds the work.
        check_string_bytes(out.size(), 0);
      }
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Value::Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += py_str_repr(k);
        out += ": ";
        append_repr(item, out);
        check_string_bytes(out.size(), 0);
      }
      out += '}';
      return;
    }
    case Value::Kind::kCallable:
      out += "<function ";
      out += v.as_callable().name;
      out += '>';
      return;
    case Value::Kind::kNamespace: {
      // A namespace may hold itself; Python's repr would recurse until RecursionError.
      thread_local uint32_t printing = 0;
      if (printing >= kMaxNesting) {
        throw TemplateError(0, "a namespace nested in itself cannot be printed",
                            /*over_budget=*/true);
      }
      ++printing;
      struct Done {
        ~Done() { --printing; }
      } done;
      out += "<Namespace ";
      append_str(Value::dict(v.as_namespace().attrs), out);
      out += '>';
      return;
    }
  }
}

void append_repr(const Value& v, std::string& out) {
  if (v.is_string()) {
    out += py_str_repr(v.as_string());
  } else if (v.is_undefined()) {
    out += "Undefined";
  } else {
    append_str(v, out);
  }
}

}  // namespace

std::string to_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  std::string out;
  append_str(v, out);
  return out;
}

std::string to_repr(const Value& v) {
  std::string out;
  append_repr(v, out);
  return out;
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      // A list never equals a tuple in Python.
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      // Nested lists may share items, so each level pays for what it walks.
      charge_steps(1 + value_weight(a), 0);
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!values_equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      // Each key is looked up linearly.
      charge_steps(1 + x.items.size() * x.items.size() / kBytesPerStep, 0);
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (other == nullptr || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.as_callable() == &b.as_callable();
    case Value::Kind::kNamespace:
      return &a.as_namespace() == &b.as_namespace();
    default:
      return false;
  }
}

bool value_less(const Value& a, const Value& b, int line) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x < y;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is how Python compares str.
    return a.as_string() < b.as_string();
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    charge_steps(1 + value_weight(a), line);
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return value_less(x[i], y[i], line);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) fail_undefined(a, line);
  if (b.is_undefined()) fail_undefined(b, line);
  throw TemplateError(line, fmt::format("'<' not supported between instances of '{}' and '{}'",
                                        a.type_name(), b.type_name()));
}

void fail_undefined(const Value& v, int line) {
  const Undefined& u = v.as_undefined();
  if (!u.hint.empty()) throw TemplateError(line, u.hint);
  if (u.name.empty()) throw TemplateError(line, "value is undefined");
  throw TemplateError(line, fmt::format("'{}' is undefined", u.name));
}

}  // namespace minfer::chat
