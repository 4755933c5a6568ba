#include "sampling/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace minfer {

namespace {

void sort_descending(std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
}

bool is_sorted_descending(const std::vector<Candidate>& candidates) {
  return std::is_sorted(candidates.begin(), candidates.end(),
                        [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
}

}  // namespace

Status validate(const SamplerParams& params, int32_t n_vocab) {
  auto bad = [](const char* field, double value, const char* expected) {
    return make_error(ErrorCode::kInvalidArgument, "[sampler] {} is {}, expected {}", field, value,
                      expected);
  };
  if (!std::isfinite(params.temperature)) return bad("temperature", params.temperature, "a number");
  if (!(params.top_p >= 0.0f && params.top_p <= 1.0f)) return bad("top_p", params.top_p, "0..1");
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f)) return bad("min_p", params.min_p, "0..1");
  if (!(params.repeat_penalty > 0.0f) || !std::isfinite(params.repeat_penalty)) {
    return bad("repeat_penalty", params.repeat_penalty, "a number > 0");
  }
  if (!std::isfinite(params.frequency_penalty)) {
    return bad("frequency_penalty", params.frequency_penalty, "a number");
  }
  if (!std::isfinite(params.presence_penalty)) {
    return bad("presence_penalty", params.presence_penalty, "a number");
  }
  if (params.repeat_last_n < -1) return bad("repeat_last_n", params.repeat_last_n, "≥ -1");
  for (const auto& [id, bias] : params.logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[sampler] logit_bias token id {} is out of range (n_vocab {})", id,
                        n_vocab);
    }
    if (std::isnan(bias)) {
      return make_error(ErrorCode::kInvalidArgument, "[sampler] logit_bias for token {} is NaN",
                        id);
    }
  }
  return Status::ok();
}

void apply_logit_bias(std::vector<Candidate>& candidates,
                      std::span<const std::pair<int32_t, float>> bias) {
  if (bias.empty()) return;
  // Candidates start in id order (index == id); after a sort, fall back to a lookup.
  std::unordered_map<int32_t, float> by_id;
  for (const auto& [id, b] : bias) by_id[id] += b;
  for (Candidate& c : candidates) {
    auto it = by_id.find(c.id);
    if (it != by_id.end()) c.logit += it->second;
  }
}

void apply_penalties(std::vector<Candidate>& candidates, std::span<const int32_t> recent,
                     float repeat_penalty, float frequency_penalty, float presence_penalty) {
  if (recent.empty() ||
      (repeat_penalty == 1.0f && frequency_penalty == 0.0f && presence_penalty == 0.0f)) {
    return;
  }
  std::unordered_map<int32_t, int> counts;
  for (int32_t id : recent) ++counts[id];
  for (Candidate& c : candidates) {
    auto it = counts.find(c.id);
    if (it == counts.end()) continue;
    if (c.logit <= 0.0f) {
      c.logit *= repeat_penalty;
    } else {
      c.logit /= repeat_penalty;
    }
    c.logit -= static_cast<float>(it->second) * frequency_penalty + presence_penalty;
  }
}

namespace {

// The k highest (logit, then lower id), sorted so; k ≤ the number of candidates.
void keep_highest(std::vector<Candidate>& candidates, size_t k) {
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k),
                    candidates.end(), [](const Candidate& a, const Candidate& b) {
                      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
                    });
  candidates.resize(k);
}

}  // namespace

void apply_top_k(std::vector<Candidate>& candidates, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= candidates.size()) {
    return;
  }
  keep_highest(candidates, static_cast<size_t>(k));
}

bool top_k_of_row(std::span<const float> logits, int32_t k, std::vector<Candidate>& out) {
  out.clear();
  const size_t n = logits.size();
  if (k <= 0 || static_cast<size_t>(k) >= n) return false;
  const auto n_chunks = static_cast<size_t>(k);
  float floor = std::numeric_limits<float>::infinity();
  bool nan = false;
  for (size_t c = 0; c < n_chunks; ++c) {
    // The slice's maximum in 8 independent lanes (a loop the compiler vectorizes), then its tail.
    std::array<float, 8> lanes;
    lanes.fill(-std::numeric_limits<float>::infinity());
    const size_t end = (c + 1) * n / n_chunks;
    size_t i = c * n / n_chunks;
    for (; i + 8 <= end; i += 8) {
      for (size_t j = 0; j < 8; ++j) {
        const float x = logits[i + j];
        nan |= x != x;
        lanes[j] = x > lanes[j] ? x : lanes[j];
      }
    }
    for (; i < end; ++i) {
      nan |= logits[i] != logits[i];
      lanes[0] = logits[i] > lanes[0] ? logits[i] : lanes[0];
    }
    floor = std::min(floor, *std::max_element(lanes.begin(), lanes.end()));
  }
  if (nan) return false;
  for (size_t i = 0; i < n; ++i) {
    if (logits[i] >= floor) out.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  }
  keep_highest(out, n_chunks);  // sorted even where exactly k are left, as apply_top_k's are
  return true;
}

void softmax_candidates(std::vector<Candidate>& candidates) {
  if (!is_sorted_descending(candidates)) sort_descending(candidates);
  const double max_logit = candidates.front().logit;  // subtract the max first (invariant 7)
  double sum = 0.0;
  for (const Candidate& c : candidates) sum += std::exp(static_cast<double>(c.logit) - max_logit);
  for (Candidate& c : candidates) {
    c.p = static_cast<float>(std::exp(static_cast<double>(c.logit) - max_logit) / sum);
  }
}

void apply_top_p(std::vector<Candidate>& candidates, float p) {
  if (p >= 1.0f || candidates.size() <= 1) return;
  softmax_candidates(candidates);
  double cumulative = 0.0;
  size_t keep = candidates.size();
  for (size_t i = 0; i < candidates.size(); ++i) {
    cumulative += candidates[i].p;
    if (cumulative >= p) {
      keep = i + 1;
      break;
    }
  }
  candidates.resize(std::max<size_t>(keep, 1));
}

void apply_min_p(std::vector<Candidate>& candidates, float min_p) {
  if (min_p <= 0.0f || candidates.size() <= 1) return;
  // p_i ≥ min_p · p_max  ⇔  logit_i ≥ logit_max + ln(min_p)
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  const float threshold = max_logit + std::log(min_p);
  // In place, in order: the vector keeps its capacity (a sampler reuses it for the next
  // vocabulary-sized list; a new one each token costs fresh pages).
  std::erase_if(candidates, [&](const Candidate& c) { return !(c.logit >= threshold); });
}

void apply_temperature(std::vector<Candidate>& candidates, float temperature) {
  if (temperature <= 0.0f || temperature == 1.0f) return;
  for (Candidate& c : candidates) c.logit /= temperature;
}

size_t argmax(std::span<const Candidate> candidates) {
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    const Candidate& b = candidates[best];
    if (c.logit > b.logit || (c.logit == b.logit && c.id < b.id)) best = i;
  }
  return best;
}

size_t argmax_logits(std::span<const float> logits) {
  // Nothing compares greater than a NaN first logit, so argmax keeps it; later NaNs never win.
  if (logits.empty() || std::isnan(logits[0])) return 0;
  // The largest logit, over independent lanes (x > m ? x : m passes over NaNs in any order)...
  constexpr size_t kLanes = 16;
  std::array<float, kLanes> lane_max;
  lane_max.fill(logits[0]);
  size_t i = 0;
  for (; i + kLanes <= logits.size(); i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      lane_max[k] = logits[i + k] > lane_max[k] ? logits[i + k] : lane_max[k];
    }
  }
  float m = logits[0];
  for (const float v : lane_max) m = v > m ? v : m;
  for (; i < logits.size(); ++i) m = logits[i] > m ? logits[i] : m;
  // ...then its first id, as argmax breaks ties (-0 and +0 compare equal there too).
  return static_cast<size_t>(std::find(logits.begin(), logits.end(), m) - logits.begin());
}

uint64_t SeededRandom::next_u64() {
  // SplitMix64 (Steele, Lea, Flood 2014).
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SeededRandom::next_unit() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;  // 53 random mantissa bits
}

size_t draw(std::span<const Candidate> candidates, SeededRandom& random) {
  const double u = random.next_unit();
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    cumulative += candidates[i].p;
    if (u < cumulative) return i;
  }
  return candidates.size() - 1;  // rounding left u just above the total
}

Sampler::Sampler(SamplerParams params, int32_t n_vocab)
    : params_(std::move(params)), n_vocab_(n_vocab), random_(0) {
  params_.seed = resolve_seed(params_.seed);  // reset() repeats the seed drawn here
  random_ = SeededRandom(params_.seed);
}

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n == 0) return;
  history_.push_back(token);
  if (params_.repeat_last_n > 0) {
    while (history_.size() > static_cast<size_t>(params_.repeat_last_n)) history_.pop_front();
  }
}

void Sampler::reset() {
  history_.clear();
  random_ = SeededRandom(params_.seed);
}

int32_t Sampler::sample(std::span<const float> logits) {
  return run_chain(logits, {});
}

Result<int32_t> Sampler::sample(std::span<const float> logits, const TokenConstraint& constraint) {
  const int32_t first = run_chain(logits, {});
  if (constraint.allows(first)) return first;
  ++n_resampled_;
  allowed_.assign(static_cast<size_t>(n_vocab_), 0);
  constraint.fill_allowed(allowed_);
  if (std::find(allowed_.begin(), allowed_.end(), uint8_t{1}) == allowed_.end()) {
    return make_error(ErrorCode::kUnsupported,
                      "[sampler] the constraint allows no token of the {}-token vocabulary",
                      n_vocab_);
  }
  return run_chain(logits, allowed_);
}

bool Sampler::logits_kept(std::span<const uint8_t> allowed) const {
  const bool penalized =
      !history_.empty() && (params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                            params_.presence_penalty != 0.0f);
  return allowed.empty() && params_.logit_bias.empty() && !penalized;
}

bool Sampler::plain_greedy(std::span<const uint8_t> allowed) const {
  return params_.temperature <= 0.0f && logits_kept(allowed);
}

void Sampler::run_distribution(std::span<const float> logits, std::span<const uint8_t> allowed) {
  MINFER_CHECK(logits.size() == static_cast<size_t>(n_vocab_), "logits row size != n_vocab");
  MINFER_CHECK(allowed.empty() || allowed.size() == logits.size(), "mask size != n_vocab");
  if (plain_greedy(allowed)) {
    // Nothing changes a logit: the candidate argmax would pick, read off the row itself rather
    // than built as a full candidate list of the vocabulary.
    const size_t best = argmax_logits(logits);
    candidates_.assign(1, {static_cast<int32_t>(best), logits[best], 1.0f});
    return;
  }
  candidates_.clear();
  candidates_.reserve(logits.size());
  // Top-k straight off the row where nothing changes a logit: the list of the whole vocabulary
  // would give the same k.
  const bool top_k_taken = params_.temperature > 0.0f && logits_kept(allowed) &&
                           top_k_of_row(logits, params_.top_k, candidates_);
  if (!top_k_taken) {
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!allowed.empty() && allowed[i] == 0) continue;
      candidates_.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
    }
    apply_logit_bias(candidates_, params_.logit_bias);
    const std::vector<int32_t> recent(history_.begin(), history_.end());
    apply_penalties(candidates_, recent, params_.repeat_penalty, params_.frequency_penalty,
                    params_.presence_penalty);
    if (params_.temperature <= 0.0f) {
      // Greedy: no sort of the whole vocabulary; the chosen token is the only candidate left.
      const Candidate best = candidates_[argmax(candidates_)];
      candidates_.assign(1, {best.id, best.logit, 1.0f});
      return;
    }
    apply_top_k(candidates_, params_.top_k);
  }
  apply_top_p(candidates_, params_.top_p);
  apply_min_p(candidates_, params_.min_p);
  apply_temperature(candidates_, params_.temperature);
  softmax_candidates(candidates_);
}

int32_t Sampler::run_chain(std::span<const float> logits, std::span<const uint8_t> allowed) {
  run_distribution(logits, allowed);
  if (params_.temperature <= 0.0f) return candidates_.front().id;
  return candidates_[draw(candidates_, random_)].id;
}

int32_t Sampler::sample(std::span<const float> logits, const DraftProposal& draft) {
  run_distribution(logits, {});
  return accept_or_resample(candidates_, draft, random_);
}

double probability_of(std::span<const Candidate> by_id, int32_t id) {
  const auto it = std::lower_bound(by_id.begin(), by_id.end(), id,
                                   [](const Candidate& c, int32_t v) { return c.id < v; });
  return it != by_id.end() && it->id == id ? static_cast<double>(it->p) : 0.0;
}

int32_t accept_or_resample(std::span<const Candidate> p, const DraftProposal& draft,
                           SeededRandom& random) {
  double p_x = 0.0;
  for (const Candidate& c : p) {
    if (c.id == draft.token) p_x = c.p;
  }
  const double q_x = probability_of(draft.q, draft.token);
  if (p_x > 0.0 && (p_x >= q_x || random.next_unit() * q_x < p_x)) return draft.token;
  // Rejected: max(0, p − q), normalized. It is 0 at x (rejection needs p(x) < q(x)), so the
  // token differs from the draft.
  std::vector<Candidate> residual;
  double total = 0.0;
  for (const Candidate& c : p) {
    const double r = static_cast<double>(c.p) - probability_of(draft.q, c.id);
    if (r <= 0.0) continue;
    residual.push_back({c.id, c.logit, static_cast<float>(r)});
    total += r;
  }
  if (residual.empty()) {
    // p = q up to rounding (then x is accepted with probability ~1): draw from p itself.
    return p[draw(p, random)].id;
  }
  for (Candidate& c : residual) c.p = static_cast<float>(static_cast<double>(c.p) / total);
  return residual[draw(residual, random)].id;
}

}  // namespace minfer
