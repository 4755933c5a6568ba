// The parsed form of a template: expressions and statements as Jinja2's parser builds them
// (jinja2/nodes.py), trimmed to the subset the interpreter runs.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace minfer::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kConst,     // constant
    kName,      // name
    kList,      // args
    kTuple,     // args
    kDict,      // args: key0, value0, key1, value1, ...
    kGetattr,   // target.name
    kGetitem,   // target[args[0]]
    kSlice,     // args[0]:args[1]:args[2], each may be null
    kCall,      // target(args, kwargs)
    kFilter,    // target | name(args, kwargs)
    kTest,      // target is name(args, kwargs)
    kUnary,     // op target   (op: "not", "-", "+")
    kBinary,    // args[0] op args[1]  (op: + - * / // % ** ~ and or)
    kCompare,   // target ops[i] args[i] ...  (ops: == != < <= > >= in notin)
    kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
  };

  Kind kind = Kind::kConst;
  int line = 0;
  std::string name;  // variable, attribute, filter, test or operator
  Value constant;
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

// What a set/for statement assigns to: one name, a namespace attribute, or a tuple of names.
struct AssignTarget {
  std::vector<std::string> names;  // one name, or the tuple's names
  std::string attribute;           // set when the target is names[0].attribute
  bool is_tuple = false;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when the parameter has no default
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conditions[i] -> bodies[i]; else_body
    kFor,          // for target in expr [if condition]: body; else_body
    kSet,          // set target = expr
    kSetBlock,     // set target %}body{% endset (expr: optional filter applied to the body)
    kMacro,        // macro name(params): body
    kCallBlock,    // call(params) expr: body  (body becomes `caller`)
    kFilterBlock,  // filter expr: body (expr is a kFilter chain whose innermost target is null)
    kWith,         // with assignments: body
    kBreak,
    kContinue,
  };

  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr condition;
  AssignTarget target;
  std::vector<ExprPtr> conditions;
  std::vector<StmtList> bodies;
  StmtList body;
  StmtList else_body;
  std::vector<MacroParam> params;
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
};

}  // namespace minfer::chat
