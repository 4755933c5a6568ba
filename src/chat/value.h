// The value model of the Jinja-subset interpreter: Python's data model as Jinja2 sees it, cut
// down to what chat templates touch (None, Undefined, bool, int, float, str, list/tuple, dict,
// callables and namespace()).
//
// Lists, tuples and dicts are immutable once built (the templates run in Jinja2's
// ImmutableSandboxedEnvironment, where list.append and dict.update are refused), so they are
// shared by pointer and copied cheaply. A namespace is the one mutable container; it is shared
// by reference exactly as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace minfer::chat {

// An error raised while rendering (or parsing) a template. It never crosses the chat layer's
// public API: ChatTemplate turns it into a Status. `line` is the template line (1-based), 0 when
// unknown. `over_budget`: the render went over one of its RenderLimits (the template's fault,
// whatever the request: the status is kResourceExhausted rather than kInvalidArgument).
class TemplateError : public std::runtime_error {
 public:
  TemplateError(int line, const std::string& message, bool over_budget = false)
      : std::runtime_error(message), line_(line), over_budget_(over_budget) {}
  int line() const { return line_; }
  bool over_budget() const { return over_budget_; }

 private:
  int line_;
  bool over_budget_;
};

class Value;

// Lists and dicts nest at most this deep (Python's repr and json.dumps stop near 1000 frames);
// the walks over them (printing, comparing, tojson, freeing) recurse once per level.
inline constexpr uint32_t kMaxNesting = 512;

// Jinja2's Undefined: prints as "", is falsy, iterates as empty; most other uses raise. `name`
// is the missing name or attribute; `hint`, when set, replaces the default error message (used
// for attributes the sandbox refuses).
struct Undefined {
  std::string name;
  std::string hint;
};

struct NoneType {};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;  // 1 + the deepest item's depth (set by Value::list)
};

// An insertion-ordered mapping with string keys (Python dicts keep insertion order; JSON keys
// are strings). Lookups are linear: chat template dicts hold a handful of keys.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  uint32_t depth = 1;  // 1 + the deepest value's depth (set by Value::dict)

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Replaces the value of an existing key in place (keeping its position), else appends.
  void set(std::string key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The keyword argument `name`, or nullptr.
  const Value* find_keyword(std::string_view name) const;

  // Argument `i` by position, else by keyword `name`, else `fallback`.
  const Value& arg(size_t i, std::string_view name, const Value& fallback) const;
};

// A function, macro or bound method. `name` is what error messages call it.
struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

// Jinja2's namespace(): attributes assignable with `{% set ns.x = ... %}` from any scope.
struct Namespace {
  Dict attrs;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable,
    kNamespace,
  };

  Value() : data_(Undefined{}) {}
  static Value undefined(std::string name = {}, std::string hint = {}) {
    return Value(Undefined{std::move(name), std::move(hint)});
  }
  static Value none() { return Value(NoneType{}); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(int64_t i) { return Value(i); }
  static Value floating(double f) { return Value(f); }
  static Value string(std::string s) { return Value(std::move(s)); }
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(Dict d);
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);
  static Value make_namespace(Dict attrs);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // int, float or bool (Python's bool is an int).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const { return is_list() && as_list().is_tuple; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // int/bool/float as double (callers check is_number first).
  double to_double() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Undefined& as_undefined() const { return std::get<Undefined>(data_); }

  // Python's bool(x).
  bool truthy() const;
  // Python's type(x).__name__, for messages.
  const char* type_name() const;

 private:
  template <typename T>
  explicit Value(T v) : data_(std::move(v)) {}

  std::variant<Undefined, NoneType, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<const Callable>,
               std::shared_ptr<Namespace>>
      data_;
};

// str(x) as Jinja2 prints it: strings as-is, None as "None", floats as Python's repr, lists and
// dicts as their Python repr, Undefined as "".
std::string to_str(const Value& v);
// repr(x): quoted strings, as used inside list/dict reprs.
std::string to_repr(const Value& v);
// Python's float repr: the shortest string that reads back to the same double ("0.1", "1e+16").
std::string float_repr(double f);
// Python's ==, deep for containers (1 == 1.0 == True).
bool values_equal(const Value& a, const Value& b);
// Python's <, for numbers, strings (code point order) and lists; throws TemplateError otherwise.
bool value_less(const Value& a, const Value& b, int line);

// The error Jinja2 raises when an Undefined is used in a way that needs a value.
[[noreturn]] void fail_undefined(const Value& v, int line);

}  // namespace minfer::chat
