#include "chat/interpreter.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "chat/budget.h"
#include "chat/builtins.h"

namespace minfer::chat {

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

[[noreturn]] void overflow(const std::string& op, int line) {
  throw TemplateError(line, fmt::format("integer overflow in '{}': the result does not fit in 64 "
                                        "bits",
                                        op));
}

int64_t checked_int(const std::string& op, int64_t a, int64_t b, int line) {
  int64_t r = 0;
  const bool over = op == "+"   ? __builtin_add_overflow(a, b, &r)
                    : op == "-" ? __builtin_sub_overflow(a, b, &r)
                                : __builtin_mul_overflow(a, b, &r);
  if (over) overflow(op, line);
  return r;
}

int64_t float_to_int(double x, int line) {
  // [-2^63, 2^63): every double in it converts; NaN fails both comparisons.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(x >= -kLimit && x < kLimit)) {
    throw TemplateError(line, fmt::format("cannot convert float {} to a 64-bit integer", x));
  }
  return static_cast<int64_t>(x);
}

namespace {

enum class Flow { kNormal, kBreak, kContinue };

int64_t int_of(const Value& v) {
  return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
}

[[noreturn]] void fail_operands(const std::string& op, const Value& a, const Value& b, int line) {
  if (a.is_undefined()) fail_undefined(a, line);
  if (b.is_undefined()) fail_undefined(b, line);
  throw TemplateError(line, fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                        a.type_name(), b.type_name()));
}

// seq * times, its size checked before anything is allocated.
Value repeat(const Value& seq, int64_t times, int line) {
  // An empty sequence repeated is empty however many times (the loops below must not run).
  const bool empty = seq.is_string() ? seq.as_string().empty() : seq.as_list().items.empty();
  const uint64_t n = times > 0 && !empty ? static_cast<uint64_t>(times) : 0;
  if (seq.is_string()) {
    check_string_bytes(saturating_mul(seq.as_string().size(), n), line);
    std::string out;
    out.reserve(seq.as_string().size() * n);
    for (uint64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value::string(std::move(out));
  }
  check_list_bytes(saturating_mul(seq.as_list().items.size(), n),
                   saturating_mul(value_bytes(seq), n), line);
  std::vector<Value> items;
  items.reserve(seq.as_list().items.size() * n);
  for (uint64_t i = 0; i < n; ++i) {
    items.insert(items.end(), seq.as_list().items.begin(), seq.as_list().items.end());
  }
  return Value::list(std::move(items), seq.is_tuple());
}

// Out of line: its locals stay out of the recursive eval frames (see exec_stmt).
[[gnu::noinline]] Value arithmetic(const std::string& op, const Value& a, const Value& b,
                                   int line) {
  if (op == "~") {
    std::string left = to_str(a);
    std::string right = to_str(b);
    check_string_bytes(uint64_t{left.size()} + right.size(), line);
    return Value::string(left + right);
  }
  bool both_numbers = a.is_number() && b.is_number();
  bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (both_numbers) {
      return any_float ? Value::floating(a.to_double() + b.to_double())
                       : Value::integer(checked_int(op, int_of(a), int_of(b), line));
    }
    if (a.is_string() && b.is_string()) {
      check_string_bytes(uint64_t{a.as_string().size()} + b.as_string().size(), line);
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      check_list_bytes(uint64_t{a.as_list().items.size()} + b.as_list().items.size(),
                       value_bytes(a) + value_bytes(b), line);
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::list(std::move(items), a.is_tuple());
    }
    fail_operands(op, a, b, line);
  }
  if (op == "*") {
    if (both_numbers) {
      return any_float ? Value::floating(a.to_double() * b.to_double())
                       : Value::integer(checked_int(op, int_of(a), int_of(b), line));
    }
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool()))
      return repeat(a, int_of(b), line);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool()))
      return repeat(b, int_of(a), line);
    fail_operands(op, a, b, line);
  }
  if (!both_numbers) {
    if (op == "%" && a.is_string()) return Value::string(percent_format(a.as_string(), b, line));
    fail_operands(op, a, b, line);
  }
  if (op == "-") {
    return any_float ? Value::floating(a.to_double() - b.to_double())
                     : Value::integer(checked_int(op, int_of(a), int_of(b), line));
  }
  if (op == "/") {
    if (b.to_double() == 0.0) throw TemplateError(line, "division by zero");
    return Value::floating(a.to_double() / b.to_double());
  }
  if (op == "//" || op == "%") {
    if (b.to_double() == 0.0) {
      throw TemplateError(line,
                          op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    }
    if (any_float) {
      double x = a.to_double();
      double y = b.to_double();
      double mod = std::fmod(x, y);
      if (mod != 0.0 && ((mod < 0) != (y < 0))) mod += y;
      if (op == "%") return Value::floating(mod);
      return Value::floating(std::floor((x - mod) / y + 0.5));
    }
    int64_t x = int_of(a);
    int64_t y = int_of(b);
    if (x == std::numeric_limits<int64_t>::min() && y == -1) {
      if (op == "%") return Value::integer(0);
      overflow(op, line);
    }
    int64_t q = x / y;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      --q;
      r += y;
    }
    return Value::integer(op == "%" ? r : q);
  }
  if (op == "**") {
    if (!any_float && int_of(b) >= 0) {
      // Square-and-multiply, in log2(exponent) steps (2 ** 10**18 must not loop 10**18 times).
      // A square is taken only when a higher bit of the exponent will use it, so it overflows
      // only when the result would.
      int64_t result = 1;
      int64_t base = int_of(a);
      for (int64_t exponent = int_of(b); exponent != 0;) {
        if ((exponent & 1) != 0 && __builtin_mul_overflow(result, base, &result))
          overflow(op, line);
        exponent >>= 1;
        if (exponent != 0 && __builtin_mul_overflow(base, base, &base)) overflow(op, line);
      }
      return Value::integer(result);
    }
    return Value::floating(std::pow(a.to_double(), b.to_double()));
  }
  throw TemplateError(line, fmt::format("unknown operator '{}'", op));
}

// loop.cycle(a, b, ...) for iteration `i`: the argument at i modulo their count.
Value cycle_for(int64_t i, int line) {
  return Value::callable("cycle", [i, line](CallArgs& args) {
    if (args.positional.empty()) throw TemplateError(line, "no items for cycling given");
    return args.positional[static_cast<size_t>(i) % args.positional.size()];
  });
}

class Interpreter {
 public:
  explicit Interpreter(Scope* root) : root_(root) {}

  Flow exec_list(const StmtList& list, Scope& scope, std::string& out) {
    for (const StmtPtr& s : list) {
      Flow f = exec(*s, scope, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

 private:
  // What a block statement's body ({% set x %}…, {% filter %}…) renders, in a scope of its own.
  Value render_body(const Stmt& s, Scope& scope) {
    std::string body;
    Scope inner(&scope);
    exec_list(s.body, inner, body);
    return Value::string(std::move(body));
  }

  static void print(std::string& out, std::string_view text, int line) {
    check_output_bytes(uint64_t{out.size()} + text.size(), line);
    out += text;
  }

  // Runs one statement; an error raised without a line (by a budget check deep in a filter, or
  // a global function) gets the statement's.
  Flow exec(const Stmt& s, Scope& scope, std::string& out) {
    const Deeper deeper(*this, s.line);
    try {
      return exec_stmt(s, scope, out);
    } catch (const TemplateError& err) {
      if (err.line() != 0) throw;
      throw TemplateError(s.line, err.what(), err.over_budget());
    }
  }

  // Each statement and expression kind with locals of its own runs in a function of its own
  // (kept out of line), so that a nesting level's stack frame holds only what its kind needs:
  // one switch over every kind's locals made a frame of ~9 KB under ASan, and templates nest
  // up to RenderLimits::max_depth deep.
  Flow exec_stmt(const Stmt& s, Scope& scope, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText:
        print(out, s.text, s.line);
        return Flow::kNormal;
      case Stmt::Kind::kOutput:
        exec_output(s, scope, out);
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        return exec_if(s, scope, out);
      case Stmt::Kind::kFor:
        exec_for(s, scope, out);
        return Flow::kNormal;
      case Stmt::Kind::kSet:
        exec_set(s, scope);
        return Flow::kNormal;
      case Stmt::Kind::kSetBlock:
        exec_set_block(s, scope);
        return Flow::kNormal;
      case Stmt::Kind::kMacro:
        exec_macro(s, scope);
        return Flow::kNormal;
      case Stmt::Kind::kCallBlock:
        exec_call_block(s, scope, out);
        return Flow::kNormal;
      case Stmt::Kind::kFilterBlock:
        exec_filter_block(s, scope, out);
        return Flow::kNormal;
      case Stmt::Kind::kWith:
        return exec_with(s, scope, out);
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  [[gnu::noinline]] void exec_output(const Stmt& s, Scope& scope, std::string& out) {
    print(out, to_str(eval(*s.expr, scope)), s.line);
  }

  [[gnu::noinline]] Flow exec_if(const Stmt& s, Scope& scope, std::string& out) {
    for (size_t i = 0; i < s.conditions.size(); ++i) {
      if (eval(*s.conditions[i], scope).truthy()) return exec_list(s.bodies[i], scope, out);
    }
    return exec_list(s.else_body, scope, out);
  }

  [[gnu::noinline]] void exec_set(const Stmt& s, Scope& scope) {
    assign(s.target, eval(*s.expr, scope), scope, s.line);
  }

  [[gnu::noinline]] void exec_set_block(const Stmt& s, Scope& scope) {
    Value v = render_body(s, scope);
    if (s.expr) v = eval_filter(*s.expr, scope, &v);
    assign(s.target, std::move(v), scope, s.line);
  }

  [[gnu::noinline]] void exec_macro(const Stmt& s, Scope& scope) {
    scope.set(s.name, make_macro(s, s.name, root_));
  }

  [[gnu::noinline]] void exec_call_block(const Stmt& s, Scope& scope, std::string& out) {
    Value caller = make_macro(s, "caller", &scope);
    print(out, to_str(eval_call(*s.expr, scope, &caller)), s.line);
  }

  [[gnu::noinline]] void exec_filter_block(const Stmt& s, Scope& scope, std::string& out) {
    const Value v = render_body(s, scope);
    print(out, to_str(eval_filter(*s.expr, scope, &v)), s.line);
  }

  [[gnu::noinline]] Flow exec_with(const Stmt& s, Scope& scope, std::string& out) {
    Scope inner(&scope);
    for (const auto& [target, expr] : s.assignments) {
      assign(target, eval(*expr, scope), inner, s.line);
    }
    return exec_list(s.body, inner, out);
  }

  void assign(const AssignTarget& target, Value value, Scope& scope, int line) {
    if (!target.attribute.empty()) {
      const Value* ns = scope.lookup(target.names[0]);
      if (ns == nullptr || !ns->is_namespace()) {
        throw TemplateError(line, "cannot assign attribute on non-namespace object");
      }
      ns->as_namespace().attrs.set(target.attribute, std::move(value));
      return;
    }
    if (!target.is_tuple) {
      scope.set(target.names[0], std::move(value));
      return;
    }
    std::vector<Value> items = iterate(value, line);
    if (items.size() != target.names.size()) {
      throw TemplateError(line, fmt::format("cannot unpack {} values into {} names", items.size(),
                                            target.names.size()));
    }
    for (size_t i = 0; i < items.size(); ++i) scope.set(target.names[i], std::move(items[i]));
  }

  void exec_for(const Stmt& s, Scope& scope, std::string& out) {
    std::vector<Value> items = iterate(eval(*s.expr, scope), s.line);
    if (s.condition) items = kept_items(s, std::move(items), scope);
    if (items.empty()) {
      Scope else_scope(&scope);
      exec_list(s.else_body, else_scope, out);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      charge_steps(1, s.line);
      // Each iteration starts from the enclosing scope's values: Jinja2 does not carry a
      // variable set in one iteration into the next.
      Scope iteration_scope(&scope);
      assign(s.target, items[static_cast<size_t>(i)], iteration_scope, s.line);
      iteration_scope.set("loop", loop_variable(items, i, s.line));
      Flow f = exec_list(s.body, iteration_scope, out);
      if (f == Flow::kBreak) break;
    }
  }

  // The items a for loop's `if` keeps: Jinja2 filters before counting, so loop.length and
  // loop.last see the kept items only.
  [[gnu::noinline]] std::vector<Value> kept_items(const Stmt& s, std::vector<Value> items,
                                                  Scope& scope) {
    Scope filter_scope(&scope);
    std::vector<Value> kept;
    for (Value& item : items) {
      charge_steps(1, s.line);
      assign(s.target, item, filter_scope, s.line);
      if (eval(*s.condition, filter_scope).truthy()) kept.push_back(std::move(item));
    }
    return kept;
  }

  // `loop` in iteration i of n = items.size().
  [[gnu::noinline]] Value loop_variable(const std::vector<Value>& items, int64_t i, int line) {
    const auto n = static_cast<int64_t>(items.size());
    const auto idx = static_cast<size_t>(i);
    // The keys are distinct, so they are appended without Dict::set's lookup.
    Dict loop;
    auto& fields = loop.items;
    fields.reserve(12);
    fields.emplace_back("index", Value::integer(i + 1));
    fields.emplace_back("index0", Value::integer(i));
    fields.emplace_back("revindex", Value::integer(n - i));
    fields.emplace_back("revindex0", Value::integer(n - i - 1));
    fields.emplace_back("first", Value::boolean(i == 0));
    fields.emplace_back("last", Value::boolean(i == n - 1));
    fields.emplace_back("length", Value::integer(n));
    fields.emplace_back("depth", Value::integer(1));
    fields.emplace_back("depth0", Value::integer(0));
    fields.emplace_back(
        "previtem",
        i > 0 ? items[idx - 1] : Value::undefined("previtem", "there is no previous item"));
    fields.emplace_back("nextitem", i + 1 < n
                                        ? items[idx + 1]
                                        : Value::undefined("nextitem", "there is no next item"));
    fields.emplace_back("cycle", cycle_for(i, line));
    return Value::dict(std::move(loop));
  }

  // A macro (or a call block's `caller`): calling it renders `s.body` in a fresh scope whose
  // parent is `parent` (the template's top level for macros, as Jinja2 resolves their free
  // names in the template context).
  // A macro call's arguments bound to its parameters in `local`: positional, then by keyword,
  // then the defaults; other keywords go to `kwargs`, `caller` to `caller`.
  [[gnu::noinline]] void bind_macro_args(const Stmt& s, const std::string& name, CallArgs& args,
                                         Scope& local) {
    const auto& params = s.params;
    if (args.positional.size() > params.size()) {
      throw TemplateError(s.line, fmt::format("macro '{}' takes not more than {} argument(s)", name,
                                              params.size()));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const MacroParam& p = params[i];
      if (i < args.positional.size()) {
        local.set(p.name, args.positional[i]);
      } else if (const Value* kw = args.find_keyword(p.name)) {
        local.set(p.name, *kw);
      } else if (p.default_value) {
        local.set(p.name, eval(*p.default_value, local));
      } else {
        local.set(p.name,
                  Value::undefined(p.name, fmt::format("parameter '{}' was not provided", p.name)));
      }
    }
    Dict extra_kwargs;
    for (const auto& [key, value] : args.keyword) {
      bool is_param = false;
      for (const MacroParam& p : params) is_param = is_param || p.name == key;
      if (key == "caller") {
        local.set("caller", value);
      } else if (!is_param) {
        extra_kwargs.set(key, value);
      }
    }
    local.set("varargs", Value::list({}, /*is_tuple=*/true));
    local.set("kwargs", Value::dict(std::move(extra_kwargs)));
  }

  Value make_macro(const Stmt& s, const std::string& name, Scope* parent) {
    const Stmt* stmt = &s;
    return Value::callable(name, [this, stmt, name, parent](CallArgs& args) {
      // Python stops runaway recursion with RecursionError; so do we, before the C++ stack
      // runs out.
      struct DepthGuard {
        int& depth;
        explicit DepthGuard(int& d) : depth(d) { ++depth; }
        ~DepthGuard() { --depth; }
      } guard(macro_depth_);
      charge_steps(1, stmt->line);
      if (macro_depth_ > kMaxMacroDepth) {
        throw TemplateError(stmt->line,
                            fmt::format("maximum recursion depth exceeded in macro '{}'", name));
      }
      Scope local(parent);
      bind_macro_args(*stmt, name, args, local);
      std::string out;
      exec_list(stmt->body, local, out);
      return Value::string(std::move(out));
    });
  }

  Value eval(const Expr& e, Scope& scope) {
    const Deeper deeper(*this, e.line);
    switch (e.kind) {
      case Expr::Kind::kConst:
        return e.constant;
      case Expr::Kind::kName: {
        const Value* v = scope.lookup(e.name);
        return v != nullptr ? *v : Value::undefined(e.name);
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple:
        return eval_sequence(e, scope);
      case Expr::Kind::kDict:
        return eval_dict(e, scope);
      case Expr::Kind::kGetattr:
        return eval_getattr(e, scope);
      case Expr::Kind::kGetitem:
        return eval_getitem(e, scope);
      case Expr::Kind::kSlice:
        throw TemplateError(e.line, "a slice outside of a subscript");
      case Expr::Kind::kCall:
        return eval_call(e, scope, nullptr);
      case Expr::Kind::kFilter:
        return eval_filter(e, scope, nullptr);
      case Expr::Kind::kTest:
        return eval_test(e, scope);
      case Expr::Kind::kUnary:
        return eval_unary(e, scope);
      case Expr::Kind::kBinary:
        return eval_binary(e, scope);
      case Expr::Kind::kCompare:
        return eval_compare(e, scope);
      case Expr::Kind::kCondExpr:
        return eval_cond(e, scope);
    }
    throw TemplateError(e.line, "unknown expression");
  }

  [[gnu::noinline]] Value eval_sequence(const Expr& e, Scope& scope) {
    std::vector<Value> items;
    items.reserve(e.args.size());
    for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
    return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
  }

  [[gnu::noinline]] Value eval_dict(const Expr& e, Scope& scope) {
    Dict d;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = eval(*e.args[i], scope);
      if (!key.is_string()) {
        throw TemplateError(
            e.line, fmt::format("unsupported construct: dict key of type '{}'", key.type_name()));
      }
      d.set(key.as_string(), eval(*e.args[i + 1], scope));
    }
    return Value::dict(std::move(d));
  }

  [[gnu::noinline]] Value eval_getattr(const Expr& e, Scope& scope) {
    Value obj = eval(*e.target, scope);
    if (obj.is_undefined()) fail_undefined(obj, e.line);
    return get_attribute(obj, e.name, e.line);
  }

  [[gnu::noinline]] Value eval_getitem(const Expr& e, Scope& scope) {
    Value obj = eval(*e.target, scope);
    if (obj.is_undefined()) fail_undefined(obj, e.line);
    const Expr& arg = *e.args[0];
    if (arg.kind == Expr::Kind::kSlice) {
      Value parts[3];
      const Value* ptrs[3] = {nullptr, nullptr, nullptr};
      for (size_t i = 0; i < 3; ++i) {
        if (arg.args[i]) {
          parts[i] = eval(*arg.args[i], scope);
          ptrs[i] = &parts[i];
        }
      }
      return get_slice(obj, ptrs[0], ptrs[1], ptrs[2], e.line);
    }
    return get_item(obj, eval(arg, scope), e.line);
  }

  [[gnu::noinline]] Value eval_test(const Expr& e, Scope& scope) {
    Value input = eval(*e.target, scope);
    CallArgs args = eval_args(e, scope);
    return Value::boolean(apply_test(e.name, input, args, e.line));
  }

  [[gnu::noinline]] Value eval_unary(const Expr& e, Scope& scope) {
    Value v = eval(*e.target, scope);
    if (e.name == "not") return Value::boolean(!v.truthy());
    if (v.is_undefined()) fail_undefined(v, e.line);
    if (!v.is_number()) {
      throw TemplateError(
          e.line, fmt::format("bad operand type for unary {}: '{}'", e.name, v.type_name()));
    }
    if (e.name == "+") return v.is_float() ? v : Value::integer(int_of(v));
    return v.is_float() ? Value::floating(-v.as_float())
                        : Value::integer(checked_int("-", 0, int_of(v), e.line));
  }

  [[gnu::noinline]] Value eval_binary(const Expr& e, Scope& scope) {
    Value left = eval(*e.args[0], scope);
    if (e.name == "and") return left.truthy() ? eval(*e.args[1], scope) : left;
    if (e.name == "or") return left.truthy() ? left : eval(*e.args[1], scope);
    Value result = arithmetic(e.name, left, eval(*e.args[1], scope), e.line);
    charge_steps(value_weight(result), e.line);
    return result;
  }

  [[gnu::noinline]] Value eval_compare(const Expr& e, Scope& scope) {
    Value left = eval(*e.target, scope);
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right = eval(*e.args[i], scope);
      if (!compare(e.ops[i], left, right, e.line)) return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  [[gnu::noinline]] Value eval_cond(const Expr& e, Scope& scope) {
    if (eval(*e.args[0], scope).truthy()) return eval(*e.args[1], scope);
    if (e.args[2]) return eval(*e.args[2], scope);
    return Value::undefined("",
                            "the inline if-expression evaluated to false and no else "
                            "section was defined.");
  }

  static bool compare(const std::string& op, const Value& a, const Value& b, int line) {
    charge_steps(value_weight(a) + value_weight(b), line);
    if (op == "==") return values_equal(a, b);
    if (op == "!=") return !values_equal(a, b);
    if (op == "<") return value_less(a, b, line);
    if (op == ">") return value_less(b, a, line);
    if (op == "<=") return value_less(a, b, line) || values_equal(a, b);
    if (op == ">=") return value_less(b, a, line) || values_equal(a, b);
    if (op == "in") return contains(b, a, line);
    if (op == "notin") return !contains(b, a, line);
    throw TemplateError(line, fmt::format("unknown comparison '{}'", op));
  }

  CallArgs eval_args(const Expr& e, Scope& scope) {
    CallArgs args;
    for (const ExprPtr& a : e.args) args.positional.push_back(eval(*a, scope));
    for (const auto& [key, expr] : e.kwargs) args.keyword.emplace_back(key, eval(*expr, scope));
    return args;
  }

  Value eval_call(const Expr& e, Scope& scope, const Value* caller) {
    Value callee;
    if (e.target->kind == Expr::Kind::kGetattr) {
      Value obj = eval(*e.target->target, scope);
      if (obj.is_undefined()) fail_undefined(obj, e.line);
      callee = get_attribute(obj, e.target->name, e.line);
    } else {
      callee = eval(*e.target, scope);
    }
    if (callee.is_undefined()) fail_undefined(callee, e.line);
    if (!callee.is_callable()) {
      throw TemplateError(e.line, fmt::format("'{}' object is not callable", callee.type_name()));
    }
    CallArgs args = eval_args(e, scope);
    if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
    try {
      charge_steps(1, e.line);
      Value result = callee.as_callable().fn(args);
      charge_steps(value_weight(result), e.line);
      return result;
    } catch (const TemplateError& err) {
      if (err.line() != 0) throw;
      throw TemplateError(e.line, err.what(), err.over_budget());
    }
  }

  // A filter chain; `block_input` replaces the innermost (absent) target of a filter block.
  Value eval_filter(const Expr& e, Scope& scope, const Value* block_input) {
    Value input;
    if (e.target) {
      input = e.target->kind == Expr::Kind::kFilter ? eval_filter(*e.target, scope, block_input)
                                                    : eval(*e.target, scope);
    } else if (block_input != nullptr) {
      input = *block_input;
    }
    CallArgs args = eval_args(e, scope);
    FilterContext ctx;
    ctx.line = e.line;
    // Each application (map's and select's per item too) pays for reading its input and for
    // the value it makes.
    ctx.filter = [&ctx](const std::string& name, const Value& v, CallArgs& a) {
      charge_value(v, ctx.line);
      Value result = apply_filter(name, v, a, ctx);
      charge_steps(value_weight(result), ctx.line);
      return result;
    };
    ctx.test = [line = e.line](const std::string& name, const Value& v, CallArgs& a) {
      charge_steps(1, line);
      return apply_test(name, v, a, line);
    };
    try {
      return ctx.filter(e.name, input, args);
    } catch (const TemplateError& err) {
      if (err.line() != 0) throw;
      throw TemplateError(e.line, err.what(), err.over_budget());
    }
  }

  // Macro calls nest at most this deep (each level costs a few C++ frames; Python's own limit
  // of 1000 frames allows roughly this many Jinja2 macro levels).
  static constexpr int kMaxMacroDepth = 250;

  // One more statement or expression being run inside the others (RenderLimits::max_depth).
  class Deeper {
   public:
    Deeper(Interpreter& in, int line) : depth_(in.depth_) {
      const RenderLimits* limits = current_limits();
      if (limits != nullptr && depth_ >= limits->max_depth) {
        throw TemplateError(line,
                            fmt::format("statements and expressions run within each other (macro "
                                        "calls included) deeper than the depth budget of {}",
                                        limits->max_depth),
                            /*over_budget=*/true);
      }
      ++depth_;
    }
    ~Deeper() { --depth_; }
    Deeper(const Deeper&) = delete;
    Deeper& operator=(const Deeper&) = delete;

   private:
    int& depth_;
  };

  Scope* root_;
  int macro_depth_ = 0;
  int depth_ = 0;  // Deeper's count
};

}  // namespace

std::string render_program(const StmtList& program, const Dict& variables,
                           const RenderLimits& limits) {
  Scope root(nullptr);
  for (const char* name : {"range", "namespace", "dict", "raise_exception", "strftime_now"}) {
    root.set(name, make_global(name));
  }
  for (const auto& [k, v] : variables.items) root.set(k, v);
  Interpreter interpreter(&root);
  RenderBudget budget(limits);
  std::string out;
  interpreter.exec_list(program, root, out);
  return out;
}

}  // namespace minfer::chat
