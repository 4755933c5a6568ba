#include "chat/budget.h"

#include <limits>

#include <fmt/format.h>

#include "chat/value.h"

namespace minfer::chat {
namespace {

thread_local RenderBudget* t_budget = nullptr;

// "16 MiB" for whole MiB, else the byte count.
std::string describe_bytes(uint64_t bytes) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits) : limits_(limits), previous_(t_budget) {
  t_budget = this;
}

RenderBudget::~RenderBudget() {
  t_budget = previous_;
  for (const std::shared_ptr<Namespace>& ns : namespaces_) ns->attrs.items.clear();
}

void track_namespace(std::shared_ptr<Namespace> ns) {
  if (t_budget != nullptr) t_budget->namespaces_.push_back(std::move(ns));
}

const RenderLimits* current_limits() {
  return t_budget != nullptr ? &t_budget->limits_ : nullptr;
}

void charge_steps(uint64_t n, int line) {
  RenderBudget* b = t_budget;
  if (b == nullptr) return;
  b->steps_ += n;
  if (b->steps_ > b->limits_.max_steps) {
    throw TemplateError(line,
                        fmt::format("the render took more than {} steps (loop iterations, "
                                    "calls, filters and data copied): it exceeds the step "
                                    "budget",
                                    b->limits_.max_steps),
                        /*over_budget=*/true);
  }
}

namespace {

uint64_t string_bytes(const Value& v) {
  return v.is_string() ? v.as_string().size() : 0;
}

}  // namespace

uint64_t value_weight(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return v.as_string().size() / kStringBytesPerStep;
    case Value::Kind::kList: {
      uint64_t strings = 0;
      for (const Value& item : v.as_list().items) strings += string_bytes(item);
      return v.as_list().items.size() * sizeof(Value) / kBytesPerStep +
             strings / kStringBytesPerStep;
    }
    case Value::Kind::kDict: {
      uint64_t strings = 0;
      for (const auto& [k, item] : v.as_dict().items) strings += k.size() + string_bytes(item);
      return v.as_dict().items.size() * sizeof(std::pair<std::string, Value>) / kBytesPerStep +
             strings / kStringBytesPerStep;
    }
    default:
      return 0;
  }
}

uint64_t value_bytes(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return v.as_string().size();
    case Value::Kind::kList: {
      uint64_t bytes = v.as_list().items.size() * sizeof(Value);
      for (const Value& item : v.as_list().items) bytes += string_bytes(item);
      return bytes;
    }
    case Value::Kind::kDict: {
      uint64_t bytes = v.as_dict().items.size() * sizeof(std::pair<std::string, Value>);
      for (const auto& [k, item] : v.as_dict().items) bytes += k.size() + string_bytes(item);
      return bytes;
    }
    default:
      return sizeof(Value);
  }
}

void charge_value(const Value& v, int line) {
  charge_steps(1 + value_weight(v), line);
}

void check_string_bytes(uint64_t bytes, int line) {
  const RenderLimits* l = current_limits();
  if (l == nullptr || bytes <= l->max_value_bytes) return;
  throw TemplateError(line,
                      fmt::format("a string of {} bytes exceeds the {} size budget", bytes,
                                  describe_bytes(l->max_value_bytes)),
                      /*over_budget=*/true);
}

void check_list_items(uint64_t items, int line) {
  const RenderLimits* l = current_limits();
  if (l == nullptr || items <= l->max_value_bytes / sizeof(Value)) return;
  throw TemplateError(
      line,
      fmt::format("a list of {} items ({} bytes) exceeds the {} size budget", items,
                  saturating_mul(items, sizeof(Value)), describe_bytes(l->max_value_bytes)),
      /*over_budget=*/true);
}

void check_list_bytes(uint64_t items, uint64_t bytes, int line) {
  const RenderLimits* l = current_limits();
  if (l == nullptr || bytes <= l->max_value_bytes) return;
  throw TemplateError(line,
                      fmt::format("a list of {} items ({} bytes) exceeds the {} size budget", items,
                                  bytes, describe_bytes(l->max_value_bytes)),
                      /*over_budget=*/true);
}

void check_output_bytes(uint64_t bytes, int line) {
  const RenderLimits* l = current_limits();
  if (l == nullptr || bytes <= l->max_output_bytes) return;
  throw TemplateError(line,
                      fmt::format("the rendered text reached {} bytes: it exceeds the {} "
                                  "output budget",
                                  bytes, describe_bytes(l->max_output_bytes)),
                      /*over_budget=*/true);
}

void append_checked(std::string& out, std::string_view piece, int line) {
  check_string_bytes(uint64_t{out.size()} + piece.size(), line);
  out += piece;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

}  // namespace minfer::chat
