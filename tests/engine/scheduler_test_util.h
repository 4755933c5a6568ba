// Helpers the Scheduler's tests share: what a request streamed, gathered, and greedy sampling
// that only max_tokens ends.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/request.h"
#include "engine/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// Everything one request streamed.
struct Collected {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // [n_generated] of the sampled tokens
  std::string text;
  bool done = false;
  FinishReason finish = FinishReason::kLength;
  std::string stop;  // the stop string that matched (kStop)
  RequestStats stats;
};

inline EventSink collect_into(Collected& c) {
  return [&c](RequestEvent&& e) {
    for (const SampledToken& t : e.tokens) {
      c.tokens.push_back(t.token);
      c.logprobs.push_back(t.logprob);
    }
    c.text += e.text;
    if (e.done) {
      c.done = true;
      c.finish = e.finish;
      c.stop = e.stop;
      c.stats = e.stats;
    }
  };
}

// A greedy request of `max_tokens` tokens at most.
inline RequestParams greedy_request(std::vector<int32_t> prompt, int64_t max_tokens) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.generate.temperature = 0.0f;
  p.generate.max_tokens = max_tokens;
  p.generate.top_logprobs = 0;  // the sampled token's logprob: a bit-exact view of the logits
  return p;
}

// Greedy, end-of-generation tokens banned: only max_tokens ends a reply.
inline SamplerParams greedy_without_eog(const Tokenizer& tokenizer, int64_t n_vocab) {
  SamplerParams s;
  s.temperature = 0.0f;
  for (int32_t id = 0; id < static_cast<int32_t>(n_vocab); ++id) {
    if (tokenizer.is_eog(id)) s.logit_bias.emplace_back(id, -INFINITY);
  }
  return s;
}

// Submits the requests, each streaming into its own Collected (what is returned; its elements
// stay where they are while the scheduler runs them).
inline std::vector<Collected> submit_collecting(Scheduler& sched,
                                                std::vector<RequestParams> requests) {
  std::vector<Collected> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    auto h = sched.submit(std::move(requests[i]), collect_into(out[i]));
    EXPECT_TRUE(h.is_ok()) << h.status().message();
  }
  return out;
}

// Once every request ran: each got its final event, and no KV block is in use.
inline void expect_all_done(const Scheduler& sched, const std::vector<Collected>& out,
                            SchedulerStats* stats) {
  EXPECT_EQ(sched.cache().n_blocks_used(), 0);
  if (sched.has_draft_model()) {
    EXPECT_EQ(sched.draft_cache().n_blocks_used(), 0);
  }
  if (stats != nullptr) *stats = sched.stats();
  for (const Collected& c : out) EXPECT_TRUE(c.done);
}

// Two replies of the same tokens, log-probabilities (bit-identical logits), text and ending.
inline void expect_same_reply(const Collected& a, const Collected& b) {
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.logprobs, b.logprobs);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.finish, b.finish);
}

}  // namespace minfer::engine
