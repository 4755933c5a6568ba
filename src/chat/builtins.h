// The filters, tests, global functions and methods the interpreter provides, with Jinja2 3.x
// semantics (jinja2/filters.py, jinja2/tests.py, jinja2/defaults.py) and Python's str, list and
// dict methods. The parser asks the is_known_* functions so that a template using anything else
// fails at load time.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "chat/value.h"

namespace minfer::chat {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
bool is_known_global(std::string_view name);
// A method of str, list or dict (or loop.cycle) that the interpreter can call.
bool is_known_method(std::string_view name);

// Hooks the filters that take a filter or test by name (map, select, ...) call back into.
struct FilterContext {
  int line = 0;
  std::function<Value(const std::string& filter, const Value& input, CallArgs& args)> filter;
  std::function<bool(const std::string& test, const Value& input, CallArgs& args)> test;
};

Value apply_filter(const std::string& name, const Value& input, CallArgs& args,
                   const FilterContext& ctx);

// Integers are 64-bit here, unbounded in Python: a result past 64 bits is a TemplateError naming
// the operation, never undefined behaviour or a wrapped value. checked_int: a op b for + - *.
[[noreturn]] void overflow(const std::string& op, int line);
int64_t checked_int(const std::string& op, int64_t a, int64_t b, int line);
// A float as an integer, truncated toward zero (Python's int(x)); past 64 bits, an error.
int64_t float_to_int(double x, int line);
bool apply_test(const std::string& name, const Value& input, CallArgs& args, int line);

// Jinja2's getattr(obj, name) under the immutable sandbox: a method of the object's type
// (bound, or an Undefined carrying the sandbox's refusal for mutating methods), else a dict key
// or namespace attribute, else Undefined.
Value get_attribute(const Value& obj, const std::string& name, int line);
// obj[key] with Jinja2's fallback to getattr for string keys.
Value get_item(const Value& obj, const Value& key, int line);
// obj[start:stop:step]; null pointers are omitted bounds.
Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step,
                int line);

// list(x) as a for loop sees it: list items, dict keys, string characters; Undefined is empty.
std::vector<Value> iterate(const Value& v, int line);
// `item in container`.
bool contains(const Value& container, const Value& item, int line);

// The global functions (range, namespace, dict, raise_exception, strftime_now).
Value make_global(const std::string& name);

// Python's `fmt % args` (printf-style): %s %r %d %i %f %e %g %x %o %c %% with flags, width,
// precision and %(name)s keys; `args` is a tuple, a dict or a single value.
std::string percent_format(const std::string& fmt, const Value& args, int line);

// Python's json.dumps(x, ensure_ascii, indent, separators, sort_keys) — what transformers
// installs as the tojson filter. `indent` is None, an int or a string.
std::string json_dumps(const Value& v, bool ensure_ascii, const Value& indent,
                       const std::string& item_separator, const std::string& key_separator,
                       bool sort_keys, int line);

}  // namespace minfer::chat
