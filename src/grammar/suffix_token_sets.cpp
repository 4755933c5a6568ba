#include "grammar/suffix_token_sets.h"

#include <algorithm>
#include <cstring>

namespace minfer::grammar {

namespace {
// A suffix that reaches more of its grammar than this (in key words: a JSON value's member reaches
// every nesting level below it) is not worth a vocabulary-wide key: its set stays the grammar's.
constexpr size_t kMaxSharedKey = 2048;
}  // namespace

SuffixTokenSets::SuffixTokenSets(const GrammarMatcher& matcher,
                                 std::shared_ptr<const VocabBytes> vocab, size_t max_sets)
    : matcher_(matcher), vocab_(std::move(vocab)), max_sets_(max_sets), automaton_(matcher) {
  const Grammar& g = matcher_.grammar();
  rule_of_.assign(g.elements.size(), 0);
  alternative_of_.assign(g.elements.size(), 0);
  user_rule_.assign(g.alternatives.size(), 0);
  for (uint32_t rule = 0; rule < g.alternatives.size(); ++rule) {
    // Generated rules (groups, repetitions) are named "rule~N" (grammar/gbnf.h).
    user_rule_[rule] = g.rule_names[rule].find('~') == std::string::npos ? 1 : 0;
    for (uint32_t alt = 0; alt < g.alternatives[rule].size(); ++alt) {
      for (uint32_t pos = g.alternatives[rule][alt];; ++pos) {
        rule_of_[pos] = rule;
        alternative_of_[pos] = alt;
        if (g.elements[pos].kind == GrammarElement::Kind::kEnd) break;
      }
    }
  }
  walk_.resize(vocab_->max_piece_bytes() + 1);
}

size_t SuffixTokenSets::suffix_length(std::span<const uint32_t> stack) const {
  const size_t n = stack.size();
  for (size_t len = 2; len <= n; ++len) {
    if (user_rule_[rule_of_[stack[n - len]]] != 0) return len;
  }
  return n;
}

void SuffixTokenSets::compute(const MatchState& start, bool whole, SuffixTokenSet& set) {
  const VocabBytes& vocab = *vocab_;
  set.accepted.assign((static_cast<size_t>(vocab.n_vocab()) + 63) / 64, 0);
  set.deferred.clear();
  // State ids live only during this walk, so the automaton may start over before it.
  if (automaton_.size() > matcher_.limits().max_states) automaton_.clear();
  walk_[0] = automaton_.intern(start);
  set.max = {start.stacks.size(), start.stacks.size(), 0};
  for (const std::vector<uint32_t>& stack : start.stacks) {
    set.max.max_depth = std::max(set.max.max_depth, stack.size());
  }
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
        const StepStats& s = automaton_.stats(next);  // (this step's included)
        set.max.expanded = std::max(set.max.expanded, s.expanded);
        set.max.stacks = std::max(set.max.stacks, s.stacks);
        set.max.max_depth = std::max(set.max.max_depth, s.max_depth);
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

std::string SuffixTokenSets::shared_key(std::span<const uint32_t> suffix) const {
  const Grammar& g = matcher_.grammar();
  const MatcherLimits& limits = matcher_.limits();
  std::vector<uint32_t> out = {static_cast<uint32_t>(limits.max_stacks),
                               static_cast<uint32_t>(limits.max_stack_depth),
                               static_cast<uint32_t>(suffix.size())};
  std::unordered_map<uint32_t, uint32_t> renumbered;
  std::vector<uint32_t> rules;  // in the order met
  const auto rule_number = [&](uint32_t rule) {
    const auto [it, added] = renumbered.emplace(rule, static_cast<uint32_t>(rules.size()));
    if (added) rules.push_back(rule);
    return it->second;
  };
  for (const uint32_t pos : suffix) {
    const uint32_t rule = rule_of_[pos];
    const uint32_t alt = alternative_of_[pos];
    out.insert(out.end(), {rule_number(rule), alt, pos - g.alternatives[rule][alt]});
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (out.size() > kMaxSharedKey) return {};
    out.push_back(static_cast<uint32_t>(g.alternatives[rules[r]].size()));
    for (uint32_t pos : g.alternatives[rules[r]]) {
      for (;; ++pos) {
        const GrammarElement& e = g.elements[pos];
        out.push_back(static_cast<uint32_t>(e.kind));
        if (e.kind == GrammarElement::Kind::kEnd) break;
        if (e.kind == GrammarElement::Kind::kRule) {
          out.push_back(rule_number(e.value));
          continue;
        }
        const CharClass& c = g.classes[e.value];
        out.insert(out.end(), {c.negated ? 1u : 0u, static_cast<uint32_t>(c.ranges.size())});
        for (const auto& [lo, hi] : c.ranges) out.insert(out.end(), {lo, hi});
      }
    }
  }
  std::string key(out.size() * sizeof(uint32_t), '\0');
  std::memcpy(key.data(), out.data(), key.size());
  return key;
}

const SuffixTokenSet& SuffixTokenSets::get_suffix(std::span<const uint32_t> suffix) {
  std::string key(suffix.size() * sizeof(uint32_t) + 1, '\0');
  if (!suffix.empty()) std::memcpy(key.data(), suffix.data(), suffix.size() * sizeof(uint32_t));
  Cached& cached = sets_[key];
  if (cached.set == nullptr) {
    SharedSuffixSets& shared = vocab_->suffix_sets();
    const std::string vocab_key = shared_key(suffix);
    if (!vocab_key.empty()) cached.set = shared.find(vocab_key);
    if (cached.set == nullptr) {
      auto set = std::make_shared<SuffixTokenSet>();
      MatchState start;
      start.stacks.emplace_back(suffix.begin(), suffix.end());
      compute(start, false, *set);
      if (!vocab_key.empty()) shared.insert(vocab_key, set);
      cached.set = std::move(set);
    }
  }
  cached.used = round_;
  return *cached.set;
}

const SuffixTokenSet& SuffixTokenSets::get_whole(const MatchState& stacks) {
  std::string key;
  for (const std::vector<uint32_t>& stack : stacks.stacks) {
    const auto n = static_cast<uint32_t>(stack.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(stack.data()), stack.size() * sizeof(uint32_t));
  }
  key.push_back('\1');  // (apart from get_suffix's keys, which end in '\0')
  Cached& cached = sets_[key];
  if (cached.set == nullptr) {
    auto set = std::make_shared<SuffixTokenSet>();
    compute(stacks, true, *set);
    cached.set = std::move(set);
  }
  cached.used = round_;
  return *cached.set;
}

std::shared_ptr<const SuffixTokenSet> SharedSuffixSets::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(key);
  if (it == sets_.end()) return nullptr;
  it->second.used = ++tick_;
  return it->second.set;
}

void SharedSuffixSets::insert(const std::string& key, std::shared_ptr<const SuffixTokenSet> set) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_sets_ == 0) return;
  while (sets_.size() >= max_sets_ && sets_.count(key) == 0) {
    auto oldest = sets_.begin();
    for (auto it = sets_.begin(); it != sets_.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
    }
    sets_.erase(oldest);
  }
  sets_[key] = {std::move(set), ++tick_};
}

void SuffixTokenSets::evict() {
  while (sets_.size() > max_sets_) {
    auto oldest = sets_.begin();
    for (auto it = sets_.begin(); it != sets_.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
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
  const auto add = [&](const SuffixTokenSet& set) {
    // The whole state's step makes at most the sum of its parts' steps.
    expanded += set.max.expanded;
    stacks += set.max.stacks;
    parts.push_back(&set);
  };
  MatchState whole;  // the stacks that are their own suffix, decided together by one set
  for (const std::vector<uint32_t>& stack : state.stacks) {
    if (stack.empty()) continue;  // the grammar is complete: no token continues this one
    const size_t len = suffix_length(stack);
    if (len == stack.size()) {
      whole.stacks.push_back(stack);
      continue;
    }
    const SuffixTokenSet& set =
        get_suffix(std::span<const uint32_t>(stack).subspan(stack.size() - len));
    // The bound is on the whole stack: the rest below adds its entries.
    if (stack.size() - len + set.max.max_depth > limits.max_stack_depth) return false;
    add(set);
  }
  // A state of whole stacks alone shares nothing with other states: the full walk costs what
  // their set would, and leaves the cache to sets that are shared.
  if (parts.empty()) return false;
  if (!whole.stacks.empty()) add(get_whole(whole));
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
