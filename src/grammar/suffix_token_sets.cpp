#include "grammar/suffix_token_sets.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace minfer::grammar {

SuffixTokenSets::SuffixTokenSets(const GrammarMatcher& matcher,
                                 std::shared_ptr<const VocabBytes> vocab, size_t max_sets)
    : matcher_(matcher), vocab_(std::move(vocab)), max_sets_(max_sets), automaton_(matcher) {
  const Grammar& g = matcher_.grammar();
  in_user_rule_.assign(g.elements.size(), 0);
  for (size_t rule = 0; rule < g.alternatives.size(); ++rule) {
    // Generated rules (groups, repetitions) are named "rule~N" (grammar/gbnf.h).
    if (g.rule_names[rule].find('~') != std::string::npos) continue;
    for (uint32_t pos : g.alternatives[rule]) {
      for (; g.elements[pos].kind != GrammarElement::Kind::kEnd; ++pos) in_user_rule_[pos] = 1;
      in_user_rule_[pos] = 1;
    }
  }
  walk_.resize(vocab_->max_piece_bytes() + 1);
}

size_t SuffixTokenSets::suffix_length(std::span<const uint32_t> stack) const {
  const size_t n = stack.size();
  for (size_t len = 2; len <= n; ++len) {
    if (in_user_rule_[stack[n - len]] != 0) return len;
  }
  return n;
}

void SuffixTokenSets::compute(std::span<const uint32_t> suffix, bool whole, SuffixTokenSet& set) {
  const VocabBytes& vocab = *vocab_;
  set.accepted.assign((static_cast<size_t>(vocab.n_vocab()) + 63) / 64, 0);
  set.deferred.clear();
  // State ids live only during this walk, so the automaton may start over before it.
  if (automaton_.size() > matcher_.limits().max_states) automaton_.clear();
  MatchState start;
  start.stacks.emplace_back(suffix.begin(), suffix.end());
  walk_[0] = automaton_.intern(start);
  set.max = {1, 1, suffix.size()};
  const std::span<const int32_t> sorted = vocab.sorted_text();
  const std::span<const uint32_t> shared = vocab.shared_prefix();
  walk_token_run(
      vocab, sorted.size(), true, [](size_t j) { return j; }, [&](size_t j) { return shared[j]; },
      [&](size_t k, uint8_t byte) {
        const int32_t next = automaton_.step(walk_[k], byte);
        if (next == GrammarAutomaton::kRefused) return WalkStep::kRefused;
        // A bound passed by the suffix alone, or a path that popped it empty: the whole state
        // decides.
        if (next < 0 || (!whole && automaton_.can_end(next))) return WalkStep::kDeferred;
        if (next != walk_[k]) {  // (a step round a loop adds nothing new)
          const StepStats& s = automaton_.stats(next);
          set.max.expanded = std::max(set.max.expanded, s.expanded);
          set.max.stacks = std::max(set.max.stacks, s.stacks);
          set.max.max_depth = std::max(set.max.max_depth, s.max_depth);
        }
        walk_[k + 1] = next;
        return WalkStep::kContinue;
      },
      [&](size_t i, WalkStep outcome) {
        if (outcome == WalkStep::kContinue) {
          const auto id = static_cast<size_t>(sorted[i]);
          set.accepted[id / 64] |= uint64_t{1} << (id % 64);
        } else if (outcome == WalkStep::kDeferred) {
          set.deferred.push_back(static_cast<uint32_t>(i));
        }
      });
}

const SuffixTokenSet& SuffixTokenSets::get(std::span<const uint32_t> suffix, bool whole) {
  std::string key(suffix.size() * sizeof(uint32_t) + 1, '\0');
  std::memcpy(key.data(), suffix.data(), suffix.size() * sizeof(uint32_t));
  key.back() = whole ? 1 : 0;
  std::unique_ptr<SuffixTokenSet>& set = sets_[key];
  if (set == nullptr) {
    set = std::make_unique<SuffixTokenSet>();
    compute(suffix, whole, *set);
  }
  set->used = round_;
  return *set;
}

void SuffixTokenSets::evict() {
  while (sets_.size() > max_sets_) {
    auto oldest = sets_.begin();
    for (auto it = sets_.begin(); it != sets_.end(); ++it) {
      if (it->second->used < oldest->second->used) oldest = it;
    }
    sets_.erase(oldest);
  }
}

bool SuffixTokenSets::collect(const MatchState& state, std::span<uint8_t> allowed,
                              std::vector<uint32_t>& deferred) {
  if (state.need != 0 || max_sets_ == 0) return false;
  evict();
  ++round_;
  const MatcherLimits& limits = matcher_.limits();
  std::vector<const SuffixTokenSet*> parts;
  size_t expanded = 0;
  size_t stacks = 0;
  // A state whose stacks are all their own suffixes shares nothing with other states: the full
  // walk costs what making their sets would, and leaves the cache to sets that are shared.
  const bool shares = std::any_of(state.stacks.begin(), state.stacks.end(),
                                  [&](const std::vector<uint32_t>& stack) {
                                    return !stack.empty() && suffix_length(stack) < stack.size();
                                  });
  if (!shares) return false;
  for (const std::vector<uint32_t>& stack : state.stacks) {
    if (stack.empty()) continue;  // the grammar is complete: no token continues this one
    const size_t len = suffix_length(stack);
    const SuffixTokenSet& set =
        get(std::span<const uint32_t>(stack).subspan(stack.size() - len), len == stack.size());
    // The whole state's step makes at most the sum of its stacks' steps (the bounds are checked
    // on the whole stack: the rest below adds its entries to the depth).
    expanded += set.max.expanded;
    stacks += set.max.stacks;
    if (stack.size() - len + set.max.max_depth > limits.max_stack_depth) return false;
    parts.push_back(&set);
  }
  if (expanded > limits.max_stacks * 8 || stacks > limits.max_stacks) return false;

  deferred.clear();
  const size_t n_words = (allowed.size() + 63) / 64;
  for (size_t w = 0; w < n_words; ++w) {
    uint64_t bits = 0;
    for (const SuffixTokenSet* set : parts) bits |= set->accepted[w];
    const size_t end = std::min(allowed.size(), (w + 1) * 64);
    for (size_t id = w * 64; id < end; ++id, bits >>= 1)
      allowed[id] = static_cast<uint8_t>(bits & 1);
  }
  for (const SuffixTokenSet* set : parts) {
    deferred.insert(deferred.end(), set->deferred.begin(), set->deferred.end());
  }
  if (parts.size() > 1) {
    std::sort(deferred.begin(), deferred.end());
    deferred.erase(std::unique(deferred.begin(), deferred.end()), deferred.end());
  }
  const std::span<const int32_t> sorted = vocab_->sorted_text();
  for (const uint32_t i : deferred) allowed[static_cast<size_t>(sorted[i])] = 0;
  return true;
}

}  // namespace minfer::grammar
