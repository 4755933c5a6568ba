// The hook through which a grammar restricts sampling: which tokens may come next, and the
// state that advances as tokens are chosen. The sampler only asks; src/grammar/ implements it
// (grammar/grammar_constraint.h: GBNF grammars, response_format json_object among them).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"

namespace minfer {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // True when `token` may come next. Cheap: the sampler asks this for the one token its
  // unconstrained chain picked.
  virtual bool allows(int32_t token) const = 0;
  // allowed[id] = 1 for every token that may come next, else 0. allowed is [n_vocab].
  virtual void fill_allowed(std::span<uint8_t> allowed) const = 0;
  // Advances past a token that allows() accepted. Error: the token is not allowed (the state
  // is then unchanged).
  virtual Status accept(int32_t token) = 0;
  // True when the constrained text is finished: nothing but end-of-generation may follow.
  virtual bool complete() const = 0;
  // Text the constrained reply must open with (a forced tool call's opening), which the token
  // pipeline writes in the tokenizer's own tokens instead of sampling it piece by piece; "" for
  // none.
  virtual std::string_view forced_prefix() const { return {}; }
};

}  // namespace minfer
