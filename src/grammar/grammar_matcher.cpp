#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace minfer::grammar {

namespace {

using Stack = std::vector<uint32_t>;

// RFC 3629 §4: a lead byte gives the continuation bytes to come and the range of the first one
// (no overlong forms, no surrogates, nothing past U+10FFFF). False: not a lead byte.
bool utf8_lead(uint8_t b, MatchState& s) {
  s.lo = 0x80;
  s.hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    s.need = 1, s.partial = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    s.need = 2, s.partial = b & 0x0Fu;
    if (b == 0xE0) s.lo = 0xA0;
    if (b == 0xED) s.hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    s.need = 3, s.partial = b & 0x07u;
    if (b == 0xF0) s.lo = 0x90;
    if (b == 0xF4) s.hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  MINFER_CHECK(grammar_ != nullptr, "GrammarMatcher needs a grammar");
}

bool GrammarMatcher::expand(Stack& stack, std::vector<Stack>& out, StepStats* stats) const {
  const Grammar& g = *grammar_;
  // The rules whose alternatives are being tried, innermost last: the stack each alternative
  // continues and the next one to try. A loop over this list, not recursion: the chain of
  // references met before a character can be as long as the grammar has rules (a path that
  // meets a rule twice is left recursion, refused when the grammar was parsed).
  struct Pending {
    Stack base;
    uint32_t rule;
    size_t next;
  };
  std::vector<Pending> pending;
  Stack s = std::move(stack);
  while (true) {
    // Walk s to a character class, the root's end or a reference.
    while (true) {
      if (s.empty()) {
        out.emplace_back();
        break;
      }
      const uint32_t pos = s.back();
      const GrammarElement& e = g.elements[pos];
      if (e.kind == GrammarElement::Kind::kChars) {
        // Bounds the work before duplicates are removed too.
        if (out.size() >= limits_.max_stacks * 8) return false;
        out.push_back(s);
        break;
      }
      s.pop_back();
      if (e.kind == GrammarElement::Kind::kEnd) continue;
      // A reference: return to the next element (unless the alternative ends there: a tail
      // call, so right recursion does not grow the stack), then each alternative of the rule.
      if (g.elements[pos + 1].kind != GrammarElement::Kind::kEnd) s.push_back(pos + 1);
      if (stats != nullptr) stats->max_depth = std::max(stats->max_depth, s.size() + 1);
      if (s.size() + 1 > limits_.max_stack_depth) return false;
      pending.push_back({std::move(s), e.value, 0});
      break;
    }
    while (!pending.empty() && pending.back().next == g.alternatives[pending.back().rule].size()) {
      pending.pop_back();
    }
    if (pending.empty()) return true;
    Pending& p = pending.back();
    s = p.base;
    s.push_back(g.alternatives[p.rule][p.next++]);
  }
}

StepResult GrammarMatcher::finish(std::vector<Stack>& stacks, MatchState& out) const {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.size() > limits_.max_stacks) return StepResult::kTooManyStacks;
  if (stacks.empty()) return StepResult::kRefused;
  out.stacks = std::move(stacks);
  out.need = 0;
  out.partial = 0;
  out.lo = 0x80;
  out.hi = 0xBF;
  return StepResult::kOk;
}

StepResult GrammarMatcher::initial(MatchState& out) const {
  std::vector<Stack> stacks;
  for (const uint32_t start : grammar_->alternatives[grammar_->root]) {
    Stack s = {start};
    if (!expand(s, stacks)) return StepResult::kTooManyStacks;
  }
  return finish(stacks, out);
}

StepResult GrammarMatcher::advance_code_point(const MatchState& in, uint32_t cp, MatchState& out,
                                              StepStats* stats) const {
  const Grammar& g = *grammar_;
  std::vector<Stack> next;
  for (const Stack& stack : in.stacks) {
    if (stack.empty()) continue;
    const GrammarElement& e = g.elements[stack.back()];
    if (!g.classes[e.value].matches(cp)) continue;
    Stack s = stack;
    s.back() += 1;
    if (stats != nullptr) stats->max_depth = std::max(stats->max_depth, s.size());
    if (!expand(s, next, stats)) return StepResult::kTooManyStacks;
  }
  if (stats != nullptr) stats->expanded = next.size();
  const StepResult r = finish(next, out);
  if (stats != nullptr) stats->stacks = out.stacks.size();
  return r;
}

StepResult GrammarMatcher::advance(const MatchState& in, uint8_t byte, MatchState& out,
                                   StepStats* stats) const {
  uint32_t cp = 0;
  if (in.need == 0) {
    if (byte < 0x80) return advance_code_point(in, byte, out, stats);
    MatchState lead;
    if (!utf8_lead(byte, lead)) return StepResult::kRefused;
    cp = lead.partial;
    out.need = lead.need;
    out.lo = lead.lo;
    out.hi = lead.hi;
  } else {
    if (byte < in.lo || byte > in.hi) return StepResult::kRefused;
    cp = (in.partial << 6) | (byte & 0x3Fu);
    out.need = static_cast<uint8_t>(in.need - 1);
    out.lo = 0x80;
    out.hi = 0xBF;
    if (out.need == 0) return advance_code_point(in, cp, out, stats);
  }
  // Mid-character: keep the stacks that some completion of it can still match. The completions
  // are exactly [first, last]: the next byte is in [lo, hi], any after it in [0x80, 0xBF].
  const int rest = 6 * (out.need - 1);
  const uint32_t first = (cp << (rest + 6)) | ((out.lo & 0x3Fu) << rest);
  const uint32_t last = (cp << (rest + 6)) | ((out.hi & 0x3Fu) << rest) | ((1u << rest) - 1);
  const Grammar& g = *grammar_;
  std::vector<Stack> alive;
  for (const Stack& stack : in.stacks) {
    if (stack.empty()) continue;
    if (g.classes[g.elements[stack.back()].value].intersects(first, last)) alive.push_back(stack);
  }
  if (alive.empty()) return StepResult::kRefused;
  if (stats != nullptr) {
    stats->stacks = alive.size();
    for (const Stack& stack : alive) stats->max_depth = std::max(stats->max_depth, stack.size());
  }
  out.stacks = std::move(alive);
  out.partial = cp;
  return StepResult::kOk;
}

StepResult GrammarMatcher::advance(const MatchState& in, std::string_view bytes,
                                   MatchState& out) const {
  MatchState cur = in;
  for (const char c : bytes) {
    MatchState next;
    const StepResult r = advance(cur, static_cast<uint8_t>(c), next);
    if (r != StepResult::kOk) return r;
    cur = std::move(next);
  }
  out = std::move(cur);
  return StepResult::kOk;
}

bool GrammarMatcher::can_end(const MatchState& s) {
  // Stacks are sorted, so the empty one comes first.
  return s.need == 0 && !s.stacks.empty() && s.stacks.front().empty();
}

bool GrammarMatcher::only_end(const MatchState& s) {
  return s.need == 0 && s.stacks.size() == 1 && s.stacks.front().empty();
}

std::string GrammarMatcher::key(const MatchState& s) {
  std::string k;
  size_t n = 2;
  for (const Stack& stack : s.stacks) n += 1 + stack.size();
  k.resize(n * sizeof(uint32_t));
  uint32_t* out = reinterpret_cast<uint32_t*>(k.data());
  *out++ = s.partial;
  *out++ = static_cast<uint32_t>(s.need) | (static_cast<uint32_t>(s.lo) << 8) |
           (static_cast<uint32_t>(s.hi) << 16);
  for (const Stack& stack : s.stacks) {
    *out++ = static_cast<uint32_t>(stack.size());
    if (stack.empty()) continue;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(out, stack.data(), stack.size() * sizeof(uint32_t));
    out += stack.size();
  }
  return k;
}

int32_t GrammarAutomaton::intern(const MatchState& s) {
  std::string k = GrammarMatcher::key(s);
  auto it = ids_.find(k);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  State state;
  state.match = s;
  can_end_.push_back(GrammarMatcher::can_end(s) ? 1 : 0);
  states_.push_back(std::move(state));
  next_.resize(states_.size() * 256, kUnknown);
  ids_.emplace(std::move(k), id);
  return id;
}

int32_t GrammarAutomaton::compute_step(int32_t state, uint8_t byte) {
  MatchState next;
  StepStats stats;
  const StepResult r =
      matcher_.advance(states_[static_cast<size_t>(state)].match, byte, next, &stats);
  int32_t id = kRefused;
  if (r == StepResult::kTooManyStacks) id = kTooManyStacks;
  if (r == StepResult::kOk) {
    id = intern(next);
    StepStats& max = states_[static_cast<size_t>(id)].stats;
    max.expanded = std::max(max.expanded, stats.expanded);
    max.stacks = std::max(max.stacks, stats.stacks);
    max.max_depth = std::max(max.max_depth, stats.max_depth);
  }
  next_[static_cast<size_t>(state) * 256 + byte] = id;
  return id;
}

void GrammarAutomaton::clear() {
  states_.clear();
  next_.clear();
  can_end_.clear();
  ids_.clear();
  n_masks_ = 0;
}

const std::vector<uint8_t>* GrammarAutomaton::mask(int32_t id) {
  State& s = states_[static_cast<size_t>(id)];
  if (s.mask == nullptr) return nullptr;
  s.mask_used = ++tick_;
  return s.mask.get();
}

void GrammarAutomaton::store_mask(int32_t id, std::vector<uint8_t> mask, size_t max_masks) {
  if (max_masks == 0) return;
  if (n_masks_ >= max_masks) {
    // Evict the least recently used mask.
    State* oldest = nullptr;
    for (State& s : states_) {
      if (s.mask != nullptr && (oldest == nullptr || s.mask_used < oldest->mask_used)) oldest = &s;
    }
    if (oldest != nullptr) {
      oldest->mask.reset();
      --n_masks_;
    }
  }
  State& s = states_[static_cast<size_t>(id)];
  if (s.mask == nullptr) ++n_masks_;
  s.mask = std::make_unique<std::vector<uint8_t>>(std::move(mask));
  s.mask_used = ++tick_;
}

}  // namespace minfer::grammar
