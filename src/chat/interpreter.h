// Runs a parsed template over a set of variables, with Jinja2's scoping: a for loop, macro call
// or with block opens a scope; if blocks do not; namespace() objects are shared by reference.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "chat/ast.h"
#include "chat/budget.h"
#include "chat/value.h"

namespace minfer::chat {

class Scope {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  // The nearest binding of `name`, or nullptr.
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value value) { vars_[name] = std::move(value); }
  Scope* parent() const { return parent_; }

 private:
  Scope* parent_;
  std::unordered_map<std::string, Value> vars_;
};

// Renders `program` with `variables` (plus the global functions) as the template's context.
// Throws TemplateError on any runtime error (including raise_exception()) and when the render
// goes over one of `limits`.
std::string render_program(const StmtList& program, const Dict& variables,
                           const RenderLimits& limits);

}  // namespace minfer::chat
