#include "chat/parser.h"

#include <array>
#include <set>

#include <fmt/format.h>

#include "chat/builtins.h"
#include "chat/lexer.h"
#include "core/enum_names.h"
#include "core/input_limits.h"

namespace minfer::chat {
namespace {

std::string describe(const Token& t) {
  // How an error names a token of each type, in TokenType order; nullptr: by its text.
  static constexpr std::array<const char*, 11> kNames = {
      "template text",  "'{{'",  "'}}'",  "'{%'",  "'%}'",           nullptr,
      "string literal", nullptr, nullptr, nullptr, "end of template"};
  static_assert(kNames.size() == static_cast<size_t>(TokenType::kEof) + 1);
  const char* name = enum_name(kNames, t.type, nullptr);
  return name != nullptr ? std::string(name) : fmt::format("'{}'", t.value);
}

// The levels of nesting one parse function adds to the tree — by recursing, or by each link of
// an operator chain (`a + b + c` is a tree as deep as it has links) — counted against
// kMaxTemplateNesting before the tree grows, and given back when the function returns.
class Nesting {
 public:
  explicit Nesting(int& depth) : depth_(depth) {}
  ~Nesting() { depth_ -= added_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;

  void add(int line) {
    ++added_;
    if (++depth_ > limits::kMaxTemplateNesting) {
      throw TemplateError(line, fmt::format("expressions and statements nested deeper than the "
                                            "limit of {}",
                                            limits::kMaxTemplateNesting));
    }
  }

 private:
  int& depth_;
  int added_ = 0;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  StmtList parse() {
    StmtList body = subparse({});
    // Calls of a bare name are checked once every assigned name is known: a macro may be
    // called before (above) its definition inside another macro.
    for (const auto& [name, line] : called_names_) {
      if (!is_known_global(name) && assigned_names_.count(name) == 0 && name != "caller") {
        throw TemplateError(line, fmt::format("unsupported function '{}'", name));
      }
    }
    return body;
  }

 private:
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const {
    return current().type == TokenType::kOperator && current().value == op;
  }
  bool is_name(const char* name) const {
    return current().type == TokenType::kName && current().value == name;
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw TemplateError(current().line, message);
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(fmt::format("expected '{}', got {}", op, describe(current())));
    next();
  }
  std::string expect_name() {
    if (current().type != TokenType::kName) {
      fail(fmt::format("expected a name, got {}", describe(current())));
    }
    return next().value;
  }
  void expect_block_end() {
    if (current().type != TokenType::kBlockEnd) {
      fail(fmt::format("expected end of statement '%}}', got {}", describe(current())));
    }
    next();
  }

  // Parses statements until a block tag whose name is one of `end_names`; leaves the parser on
  // that name (after its '{%').
  StmtList subparse(const std::set<std::string>& end_names) {
    StmtList body;
    while (true) {
      const Token& t = current();
      if (t.type == TokenType::kEof) {
        if (!end_names.empty()) {
          fail(fmt::format("unexpected end of template: expected '{}'", *end_names.rbegin()));
        }
        return body;
      }
      if (t.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = t.line;
        s->text = t.value;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokenType::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        s->expr = parse_tuple(true, {}, false);
        if (current().type != TokenType::kVarEnd) {
          fail(fmt::format("expected end of print statement '}}}}', got {}", describe(current())));
        }
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::kBlockBegin) {
        next();
        if (current().type != TokenType::kName) fail("expected a statement name after '{%'");
        if (end_names.count(current().value) != 0) return body;
        body.push_back(parse_statement());
      } else {
        fail(fmt::format("unexpected {}", describe(t)));
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& t = current();
    const std::string name = t.value;
    int line = t.line;
    Nesting nesting(nesting_);
    nesting.add(line);
    next();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (name == "if") {
      s->kind = Stmt::Kind::kIf;
      s->conditions.push_back(parse_tuple(false, {}, false));
      expect_block_end();
      s->bodies.push_back(subparse({"elif", "else", "endif"}));
      while (true) {
        std::string tag = next().value;
        if (tag == "elif") {
          s->conditions.push_back(parse_tuple(false, {}, false));
          expect_block_end();
          s->bodies.push_back(subparse({"elif", "else", "endif"}));
        } else if (tag == "else") {
          expect_block_end();
          s->else_body = subparse({"endif"});
          next();
          break;
        } else {
          break;
        }
      }
      expect_block_end();
    } else if (name == "for") {
      s->kind = Stmt::Kind::kFor;
      s->target = parse_assign_target(false);
      if (!is_name("in")) fail(fmt::format("expected 'in', got {}", describe(current())));
      next();
      s->expr = parse_tuple(false, {"recursive"}, false);
      if (is_name("if")) {
        next();
        s->condition = parse_expression(true);
      }
      if (is_name("recursive")) fail("unsupported construct 'recursive' loop");
      expect_block_end();
      ++loop_depth_;
      s->body = subparse({"endfor", "else"});
      --loop_depth_;
      if (next().value == "else") {
        expect_block_end();
        s->else_body = subparse({"endfor"});
        next();
      }
      expect_block_end();
    } else if (name == "set") {
      s->target = parse_assign_target(true);
      if (is_op("=")) {
        next();
        s->kind = Stmt::Kind::kSet;
        s->expr = parse_tuple(true, {}, false);
        expect_block_end();
      } else {
        s->kind = Stmt::Kind::kSetBlock;
        if (is_op("|")) s->expr = parse_filter(nullptr, false);
        expect_block_end();
        s->body = subparse({"endset"});
        next();
        expect_block_end();
      }
    } else if (name == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->name = expect_name();
      assigned_names_.insert(s->name);
      parse_signature(s->params);
      expect_block_end();
      int saved_depth = loop_depth_;
      loop_depth_ = 0;
      s->body = subparse({"endmacro"});
      loop_depth_ = saved_depth;
      next();
      expect_block_end();
    } else if (name == "call") {
      s->kind = Stmt::Kind::kCallBlock;
      if (is_op("(")) parse_signature(s->params);
      s->expr = parse_expression(true);
      if (s->expr->kind != Expr::Kind::kCall) fail("expected a call after 'call'");
      expect_block_end();
      s->body = subparse({"endcall"});
      next();
      expect_block_end();
    } else if (name == "filter") {
      s->kind = Stmt::Kind::kFilterBlock;
      s->expr = parse_filter(nullptr, true);
      expect_block_end();
      s->body = subparse({"endfilter"});
      next();
      expect_block_end();
    } else if (name == "with") {
      s->kind = Stmt::Kind::kWith;
      while (current().type != TokenType::kBlockEnd) {
        if (!s->assignments.empty()) expect_op(",");
        AssignTarget target = parse_assign_target(false);
        expect_op("=");
        s->assignments.emplace_back(std::move(target), parse_expression(true));
      }
      expect_block_end();
      s->body = subparse({"endwith"});
      next();
      expect_block_end();
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) throw TemplateError(line, fmt::format("'{}' outside of a loop", name));
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
    } else {
      throw TemplateError(line, fmt::format("unsupported tag '{}'", name));
    }
    return s;
  }

  void parse_signature(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      MacroParam p;
      p.name = expect_name();
      assigned_names_.insert(p.name);
      if (is_op("=")) {
        next();
        p.default_value = parse_expression(true);
      }
      params.push_back(std::move(p));
    }
    next();
  }

  AssignTarget parse_assign_target(bool with_namespace) {
    AssignTarget target;
    if (with_namespace && current().type == TokenType::kName &&
        peek().type == TokenType::kOperator && peek().value == ".") {
      target.names.push_back(next().value);
      next();
      target.attribute = expect_name();
      return target;
    }
    bool parenthesized = is_op("(");
    if (parenthesized) next();
    while (true) {
      std::string n = expect_name();
      assigned_names_.insert(n);
      target.names.push_back(n);
      if (!is_op(",")) break;
      target.is_tuple = true;
      next();
      if (current().type != TokenType::kName) break;
    }
    if (parenthesized) {
      target.is_tuple = true;
      expect_op(")");
    }
    return target;
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  bool is_tuple_end(const std::set<std::string>& extra_end) const {
    const Token& t = current();
    if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd ||
        t.type == TokenType::kEof) {
      return true;
    }
    if (t.type == TokenType::kOperator && t.value == ")") return true;
    return t.type == TokenType::kName && extra_end.count(t.value) != 0;
  }

  ExprPtr parse_tuple(bool with_condexpr, const std::set<std::string>& extra_end,
                      bool explicit_parentheses) {
    int line = current().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) {
        fail(fmt::format("expected an expression, got {}", describe(current())));
      }
    }
    auto e = make(Expr::Kind::kTuple, line);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Nesting nesting(nesting_);
    nesting.add(current().line);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr1 = parse_or();
    Nesting nesting(nesting_);
    while (is_name("if")) {
      int line = next().line;
      nesting.add(line);
      auto e = make(Expr::Kind::kCondExpr, line);
      ExprPtr test = parse_or();
      ExprPtr otherwise;
      if (is_name("else")) {
        next();
        otherwise = parse_condexpr();
      }
      e->args.push_back(std::move(test));
      e->args.push_back(std::move(expr1));
      e->args.push_back(std::move(otherwise));
      expr1 = std::move(e);
    }
    return expr1;
  }

  ExprPtr binary(const std::string& op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = op;
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  // One left-associative precedence level: operand (operator operand)*, while at_operator() says
  // an operator of this level comes next; the operator token's text names the node.
  template <typename AtOperator, typename Operand>
  ExprPtr left_assoc(AtOperator at_operator, Operand operand) {
    ExprPtr left = operand();
    Nesting nesting(nesting_);
    while (at_operator()) {
      const Token& t = next();
      std::string op = t.value;
      const int line = t.line;
      nesting.add(line);
      left = binary(op, std::move(left), operand(), line);
    }
    return left;
  }

  // Comma-separated items up to and including `close` (a trailing comma is allowed);
  // parse_item() reads one.
  template <typename ParseItem>
  void parse_items(const char* close, ParseItem parse_item) {
    for (bool first = true; !is_op(close); first = false) {
      if (!first) expect_op(",");
      if (is_op(close)) break;
      parse_item();
    }
    expect_op(close);
  }

  ExprPtr parse_or() {
    return left_assoc([&] { return is_name("or"); }, [&] { return parse_and(); });
  }

  ExprPtr parse_and() {
    return left_assoc([&] { return is_name("and"); }, [&] { return parse_not(); });
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      int line = next().line;
      Nesting nesting(nesting_);
      nesting.add(line);
      auto e = make(Expr::Kind::kUnary, line);
      e->name = "not";
      e->target = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = current().line;
    ExprPtr expr = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (current().type == TokenType::kOperator &&
          (current().value == "==" || current().value == "!=" || current().value == "<" ||
           current().value == "<=" || current().value == ">" || current().value == ">=")) {
        op = next().value;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::kCompare, line);
        cmp->target = std::move(expr);
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(expr);
  }

  ExprPtr parse_math1() {
    return left_assoc([&] { return is_op("+") || is_op("-"); }, [&] { return parse_concat(); });
  }

  ExprPtr parse_concat() {
    return left_assoc([&] { return is_op("~"); }, [&] { return parse_math2(); });
  }

  ExprPtr parse_math2() {
    return left_assoc([&] { return is_op("*") || is_op("/") || is_op("//") || is_op("%"); },
                      [&] { return parse_pow(); });
  }

  ExprPtr parse_pow() {
    return left_assoc([&] { return is_op("**"); }, [&] { return parse_unary(true); });
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      Nesting nesting(nesting_);
      nesting.add(t.line);
      node = make(Expr::Kind::kUnary, t.line);
      node->name = t.value;
      node->target = parse_unary(false);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = current();
    int line = t.line;
    if (t.type == TokenType::kName) {
      next();
      if (t.value == "true" || t.value == "True") return constant(Value::boolean(true), line);
      if (t.value == "false" || t.value == "False") return constant(Value::boolean(false), line);
      if (t.value == "none" || t.value == "None") return constant(Value::none(), line);
      auto e = make(Expr::Kind::kName, line);
      e->name = t.value;
      return e;
    }
    if (t.type == TokenType::kString) {
      std::string s;
      while (current().type == TokenType::kString) s += next().value;
      return constant(Value::string(std::move(s)), line);
    }
    if (t.type == TokenType::kInteger) {
      next();
      try {
        return constant(Value::integer(std::stoll(t.value)), line);
      } catch (const std::exception&) {
        throw TemplateError(line, fmt::format("integer literal '{}' is out of range", t.value));
      }
    }
    if (t.type == TokenType::kFloat) {
      next();
      return constant(Value::floating(std::stod(t.value)), line);
    }
    if (is_op("(")) {
      next();
      ExprPtr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      next();
      auto e = make(Expr::Kind::kList, line);
      parse_items("]", [&] { e->args.push_back(parse_expression(true)); });
      return e;
    }
    if (is_op("{")) {
      next();
      auto e = make(Expr::Kind::kDict, line);
      parse_items("}", [&] {
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
      });
      return e;
    }
    fail(fmt::format("unexpected {}", describe(t)));
  }

  ExprPtr constant(Value v, int line) {
    auto e = make(Expr::Kind::kConst, line);
    e->constant = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    Nesting nesting(nesting_);
    while (true) {
      if (is_op(".") || is_op("[") || is_op("(")) nesting.add(current().line);
      if (is_op(".")) {
        int line = next().line;
        if (current().type == TokenType::kName) {
          auto e = make(Expr::Kind::kGetattr, line);
          e->name = next().value;
          e->target = std::move(node);
          node = std::move(e);
        } else if (current().type == TokenType::kInteger) {
          auto e = make(Expr::Kind::kGetitem, line);
          e->args.push_back(constant(Value::integer(std::stoll(next().value)), line));
          e->target = std::move(node);
          node = std::move(e);
        } else {
          fail("expected name or number after '.'");
        }
      } else if (is_op("[")) {
        int line = next().line;
        std::vector<ExprPtr> items;
        while (!is_op("]")) {
          if (!items.empty()) expect_op(",");
          items.push_back(parse_subscribed());
        }
        expect_op("]");
        auto e = make(Expr::Kind::kGetitem, line);
        if (items.size() == 1) {
          e->args.push_back(std::move(items[0]));
        } else {
          auto tuple = make(Expr::Kind::kTuple, line);
          tuple->args = std::move(items);
          e->args.push_back(std::move(tuple));
        }
        e->target = std::move(node);
        node = std::move(e);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscribed() {
    int line = current().line;
    std::vector<ExprPtr> parts;
    if (is_op(":")) {
      next();
      parts.push_back(nullptr);
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      parts.push_back(std::move(node));
    }
    if (is_op(":")) {
      parts.push_back(nullptr);
    } else if (!is_op("]") && !is_op(",")) {
      parts.push_back(parse_expression(true));
    } else {
      parts.push_back(nullptr);
    }
    if (is_op(":")) {
      next();
      if (!is_op("]") && !is_op(",")) {
        parts.push_back(parse_expression(true));
      } else {
        parts.push_back(nullptr);
      }
    } else {
      parts.push_back(nullptr);
    }
    auto e = make(Expr::Kind::kSlice, line);
    e->args = std::move(parts);
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (is_op("*") || is_op("**")) fail("unsupported construct '*args' or '**kwargs' in a call");
      if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
          peek().value == "=") {
        std::string key = next().value;
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail("positional argument after a keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    int line = current().line;
    if (callee->kind == Expr::Kind::kName) {
      called_names_.emplace_back(callee->name, line);
    } else if (callee->kind == Expr::Kind::kGetattr && !is_known_method(callee->name)) {
      throw TemplateError(line, fmt::format("unsupported method '{}'", callee->name));
    }
    auto e = make(Expr::Kind::kCall, line);
    e->target = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    Nesting nesting(nesting_);
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);  // counts its own links
      } else if (is_name("is")) {
        nesting.add(current().line);
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        nesting.add(current().line);
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  // `| name(args) | name2 ...`; with start_inline the first '|' is absent (filter blocks).
  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    Nesting nesting(nesting_);
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      int line = current().line;
      nesting.add(line);
      std::string name = expect_name();
      while (is_op(".")) {
        next();
        name += '.';
        name += expect_name();
      }
      if (!is_known_filter(name)) {
        throw TemplateError(line, fmt::format("unsupported filter '{}'", name));
      }
      auto e = make(Expr::Kind::kFilter, line);
      e->name = name;
      e->target = std::move(node);
      if (is_op("(")) parse_call_args(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = next().line;
    bool negated = false;
    if (is_name("not")) {
      next();
      negated = true;
    }
    int name_line = current().line;
    std::string name = expect_name();
    if (!is_known_test(name)) {
      throw TemplateError(name_line, fmt::format("unsupported test '{}'", name));
    }
    auto e = make(Expr::Kind::kTest, line);
    e->name = name;
    e->target = std::move(node);
    const Token& t = current();
    bool arg_start =
        t.type == TokenType::kName || t.type == TokenType::kString ||
        t.type == TokenType::kInteger || t.type == TokenType::kFloat ||
        (t.type == TokenType::kOperator && (t.value == "(" || t.value == "[" || t.value == "{"));
    if (is_op("(")) {
      parse_call_args(*e);
    } else if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    if (negated) {
      auto n = make(Expr::Kind::kUnary, line);
      n->name = "not";
      n->target = std::move(e);
      return n;
    }
    return e;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int nesting_ = 0;  // levels of the tree above what is being parsed (Nesting)
  std::set<std::string> assigned_names_;
  std::vector<std::pair<std::string, int>> called_names_;
};

}  // namespace

StmtList parse_template(std::string_view source) {
  return Parser(lex_template(source)).parse();
}

}  // namespace minfer::chat
