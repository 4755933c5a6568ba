// What one render of a chat template may spend. A GGUF file's template is code from whoever made
// the file; these budgets keep a hostile one (`{{ 'a' * 10**11 }}`, a doubling loop, nested
// loops of 10^10 steps, exponential macro recursion) from hanging the process or exhausting its
// memory. Every check happens where the work is done, before the memory is allocated, and
// raises a TemplateError naming the budget.
//
//   RenderBudget budget(limits);      // for the duration of one render on this thread
//   charge_steps(1, line);            // a loop iteration, call, filter or method
//   check_string_bytes(a.size() + b.size(), line);  // before building a + b
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/input_limits.h"

namespace minfer::chat {

class Value;
struct Namespace;

// The limits of one render. The defaults leave real templates far from every limit (the
// largest test template on a long conversation uses a few thousand steps) while a hostile one
// stops within about a second and a few tens of MiB.
struct RenderLimits {
  // Loop iterations, macro and function calls, filter and method applications; copying data
  // costs further steps: one per 16 bytes of strings, one per list item, that it creates or
  // reads.
  uint64_t max_steps = 1'000'000;
  // The largest string, list or dict (items × their size) a render may create.
  uint64_t max_value_bytes = uint64_t{16} << 20;
  // The largest text a render (or a macro or block inside it) may print.
  uint64_t max_output_bytes = uint64_t{16} << 20;
  // Statements and expressions being run within each other, across macro calls: each level is a
  // few C++ frames, so this bounds the stack a render takes (a macro recursing through a deep
  // expression multiplies the two nestings the parser and kMaxMacroDepth bound one by one).
  int max_depth = limits::kMaxRenderDepth;
};

// Copying (or scanning) this many bytes of a string costs one step; of list items (sizeof(Value)
// each) or dict entries, kBytesPerStep. Strings pay more per byte: their operations decode
// UTF-8 code point by code point.
inline constexpr uint64_t kStringBytesPerStep = 16;
inline constexpr uint64_t kBytesPerStep = 64;

// Installs `limits` as this thread's budget until destroyed (renders do not nest; a nested
// RenderBudget replaces the outer one until it ends). Without one, the checks do nothing.
class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  uint64_t steps() const { return steps_; }

 private:
  friend void charge_steps(uint64_t n, int line);
  friend const RenderLimits* current_limits();

  friend void track_namespace(std::shared_ptr<Namespace> ns);

  RenderLimits limits_;
  uint64_t steps_ = 0;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
  RenderBudget* previous_;
};

// Keeps `ns` until the render ends, then empties it (breaking any cycle through it).
void track_namespace(std::shared_ptr<Namespace> ns);

// The limits of the render running on this thread, or nullptr.
const RenderLimits* current_limits();

// Spends `n` steps; throws "... exceed the step budget" when the render goes over.
void charge_steps(uint64_t n, int line);
// The steps copying (or scanning) `v` costs (kStringBytesPerStep, kBytesPerStep).
uint64_t value_weight(const Value& v);
// Spends 1 step plus the weight of `v` (a filter's or method's input or result).
void charge_value(const Value& v, int line);

// Throws when a string of `bytes` bytes would exceed the size budget.
void check_string_bytes(uint64_t bytes, int line);
// Throws when a list (or dict) of `items` items would exceed the size budget.
void check_list_items(uint64_t items, int line);
// The same for a list of `items` items holding `bytes` bytes in all: a list's strings are held
// by value, so copying a list copies them (value_bytes).
void check_list_bytes(uint64_t items, uint64_t bytes, int line);
// What copying `v` copies: a string's bytes; a list's or dict's items and the strings directly
// in them (nested lists and dicts are shared, not copied).
uint64_t value_bytes(const Value& v);
// Throws when rendered text of `bytes` bytes would exceed the output budget.
void check_output_bytes(uint64_t bytes, int line);
// out += piece, after checking the result against the size budget.
void append_checked(std::string& out, std::string_view piece, int line);
// a * b, saturating at UINT64_MAX (sizes asked for by `'a' * n` can overflow).
uint64_t saturating_mul(uint64_t a, uint64_t b);

}  // namespace minfer::chat
