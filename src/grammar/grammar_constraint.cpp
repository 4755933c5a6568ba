#include "grammar/grammar_constraint.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"

namespace minfer::grammar {

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar,
                           std::shared_ptr<const VocabBytes> vocab,
                           const TokenGrammarOptions& options)
    : vocab_(std::move(vocab)),
      matcher_(std::move(grammar), options.limits),
      options_(options),
      automaton_(matcher_),
      suffix_sets_(matcher_, vocab_, options.max_suffix_sets) {
  MINFER_CHECK(vocab_ != nullptr, "TokenGrammar needs a vocabulary");
}

Result<std::shared_ptr<TokenGrammar>> TokenGrammar::compile(std::string_view gbnf,
                                                            std::shared_ptr<const VocabBytes> vocab,
                                                            const TokenGrammarOptions& options) {
  MINFER_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, parse_gbnf(gbnf));
  return std::make_shared<TokenGrammar>(std::move(grammar), std::move(vocab), options);
}

int32_t TokenGrammar::locked_id(const MatchState& state, StateRef& ref) {
  if (ref.id >= 0 && ref.generation == generation_) return ref.id;
  if (automaton_.size() > options_.limits.max_states) {
    // Memory stays bounded: start over (other requests re-intern their states on their next call).
    automaton_.clear();
    ++generation_;
  }
  ref.id = automaton_.intern(state);
  ref.generation = generation_;
  return ref.id;
}

int32_t TokenGrammar::locked_walk(int32_t state, std::string_view bytes) {
  for (const char c : bytes) {
    state = automaton_.step(state, static_cast<uint8_t>(c));
    if (state < 0) return state;
  }
  return state;
}

void TokenGrammar::locked_fill(int32_t state, std::span<uint8_t> allowed,
                               std::vector<int32_t>& walk) {
  if (const std::vector<uint8_t>* cached = automaton_.mask(state)) {
    std::copy(cached->begin(), cached->end(), allowed.begin());
    return;
  }
  // walk[k]: the state after the first k bytes of the token being tried.
  walk[0] = state;
  const auto step = [&](size_t k, uint8_t byte) {
    const int32_t next = automaton_.step(walk[k], byte);
    walk[k + 1] = next;
    return next >= 0;
  };
  if (suffix_sets_.collect(automaton_.state(state), allowed, deferred_)) {
    // The sets decided every token but these.
    const std::span<const int32_t> sorted = vocab_->sorted_text();
    walk_token_subset(
        *vocab_, deferred_,
        [&](size_t k, uint8_t byte) {
          return step(k, byte) ? WalkStep::kContinue : WalkStep::kRefused;
        },
        [&](size_t i, WalkStep outcome) {
          if (outcome == WalkStep::kContinue) allowed[static_cast<size_t>(sorted[i])] = 1;
        });
  } else {
    std::fill(allowed.begin(), allowed.end(), uint8_t{0});
    walk_sorted_tokens(*vocab_, allowed, step);
  }
  if (automaton_.can_end(state)) {
    for (const int32_t id : vocab_->end_of_generation()) allowed[static_cast<size_t>(id)] = 1;
  }
  automaton_.store_mask(state, std::vector<uint8_t>(allowed.begin(), allowed.end()),
                        options_.max_masks);
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<TokenGrammar> grammar, GrammarOptions options,
                                     MatchState start)
    : grammar_(std::move(grammar)),
      options_(std::move(options)),
      start_(std::move(start)),
      state_(start_) {
  active_ = !lazy();
  for (const std::string& t : options_.trigger_texts)
    max_trigger_ = std::max(max_trigger_, t.size());
  walk_.resize(grammar_->vocab().max_piece_bytes() + 1);
}

Result<std::unique_ptr<GrammarConstraint>> GrammarConstraint::create(
    std::shared_ptr<TokenGrammar> grammar, GrammarOptions options) {
  MINFER_CHECK(grammar != nullptr, "GrammarConstraint needs a grammar");
  std::erase_if(options.trigger_texts, [](const std::string& t) { return t.empty(); });
  MatchState start;
  const MatcherLimits& limits = grammar->matcher().limits();
  if (grammar->matcher().initial(start) != StepResult::kOk) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[grammar] the grammar's start needs more than {} parse stacks or a stack "
                      "deeper than {}",
                      limits.max_stacks, limits.max_stack_depth);
  }
  return std::unique_ptr<GrammarConstraint>(
      new GrammarConstraint(std::move(grammar), std::move(options), std::move(start)));
}

size_t GrammarConstraint::trigger_start(int32_t token, std::string_view text) const {
  const auto& tokens = options_.trigger_tokens;
  if (std::find(tokens.begin(), tokens.end(), token) != tokens.end()) return pending_.size();
  size_t best = std::string_view::npos;
  for (const std::string& t : options_.trigger_texts) best = std::min(best, text.find(t));
  return best;
}

bool GrammarConstraint::grammar_accepts(const MatchState& from, std::string_view bytes) const {
  MatchState out;
  return grammar_->matcher().advance(from, bytes, out) == StepResult::kOk;
}

bool GrammarConstraint::allows_waiting(int32_t token) const {
  const VocabBytes& vocab = grammar_->vocab();
  if (vocab.role(token) == TokenRole::kEndOfGeneration) return true;
  const std::string text = pending_ + std::string(vocab.piece(token));
  const size_t start = trigger_start(token, text);
  if (start == std::string_view::npos) return true;
  // A token that completes a trigger must also begin what the grammar allows after it.
  return grammar_accepts(start_, std::string_view(text).substr(start));
}

bool GrammarConstraint::allows(int32_t token) const {
  const VocabBytes& vocab = grammar_->vocab();
  if (token < 0 || token >= vocab.n_vocab()) return false;
  if (!active_) return allows_waiting(token);
  switch (vocab.role(token)) {
    case TokenRole::kEndOfGeneration:
      return GrammarMatcher::can_end(state_);
    case TokenRole::kNever:
      return false;
    case TokenRole::kText:
      break;
  }
  std::lock_guard<std::mutex> lock(grammar_->mu_);
  const int32_t id = grammar_->locked_id(state_, ref_);
  return grammar_->locked_walk(id, vocab.piece(token)) >= 0;
}

void GrammarConstraint::fill_allowed(std::span<uint8_t> allowed) const {
  const VocabBytes& vocab = grammar_->vocab();
  MINFER_CHECK(allowed.size() == static_cast<size_t>(vocab.n_vocab()), "mask size != n_vocab");
  if (!active_) {
    for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
      allowed[static_cast<size_t>(id)] = allows_waiting(id) ? 1 : 0;
    }
    return;
  }
  std::lock_guard<std::mutex> lock(grammar_->mu_);
  const int32_t id = grammar_->locked_id(state_, ref_);
  grammar_->locked_fill(id, allowed, walk_);
}

Status GrammarConstraint::accept(int32_t token) {
  const VocabBytes& vocab = grammar_->vocab();
  if (!allows(token)) {
    const bool in_vocab = token >= 0 && token < vocab.n_vocab();
    const std::string piece = in_vocab ? std::string(vocab.piece(token)) : std::string();
    return make_error(ErrorCode::kInvalidArgument,
                      "[grammar] token {} ('{}') does not continue the grammar here (or the "
                      "grammar needs more than {} parse stacks after it)",
                      token, piece, grammar_->matcher().limits().max_stacks);
  }
  if (!active_) {
    const std::string text = pending_ + std::string(vocab.piece(token));
    const size_t start = trigger_start(token, text);
    if (start == std::string_view::npos) {
      // Keep the bytes a trigger may still begin with.
      const size_t keep = max_trigger_ > 0 ? max_trigger_ - 1 : 0;
      pending_ = text.size() > keep ? text.substr(text.size() - keep) : text;
      return Status::ok();
    }
    active_ = true;
    pending_.clear();
    MatchState next;
    const StepResult r =
        grammar_->matcher().advance(start_, std::string_view(text).substr(start), next);
    MINFER_CHECK(r == StepResult::kOk, "a trigger allows() accepted was refused");
    state_ = std::move(next);
    ref_ = {};
    after_match();
    return Status::ok();
  }
  if (vocab.role(token) != TokenRole::kText) return Status::ok();  // end of generation
  {
    std::lock_guard<std::mutex> lock(grammar_->mu_);
    const int32_t id = grammar_->locked_id(state_, ref_);
    const int32_t next = grammar_->locked_walk(id, vocab.piece(token));
    MINFER_CHECK(next >= 0, "a token allows() accepted was refused");
    state_ = grammar_->automaton_.state(next);
    ref_ = {next, grammar_->generation_};
  }
  after_match();
  return Status::ok();
}

void GrammarConstraint::after_match() {
  if (lazy() && !options_.end_on_complete && GrammarMatcher::only_end(state_)) {
    // The grammar is done: back to free text until the next trigger.
    active_ = false;
    state_ = start_;
    ref_ = {};
  }
}

bool GrammarConstraint::complete() const {
  return active_ && options_.end_on_complete && GrammarMatcher::only_end(state_);
}

}  // namespace minfer::grammar
