// The Scheduler's private part shared by its translation units (scheduler.cpp: admission, batch
// planning, preemption, applying a step, finishing; scheduler_speculation.cpp: the drafts a
// sequence verifies and what their rows give): one request's sequence.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/token_pipeline.h"

namespace minfer::engine {

inline TokenPipelineOptions pipeline_options(const RequestParams& params) {
  const GenerateParams& g = params.generate;
  return {.sampling = g,
          .stops = g.stop,
          .render_special = g.render_special,
          .max_tokens = g.max_tokens,
          .top_logprobs = g.top_logprobs,
          .constraint = params.constraint.get(),
          .reply = params.reply().parser_options(),
          .reasoning_budget = g.reasoning_budget};
}

struct Scheduler::Sequence {
  Sequence(int32_t seq_id, RequestParams p, EventSink s, const Tokenizer& tokenizer,
           int32_t n_vocab)
      : id(seq_id),
        handle(std::make_shared<RequestHandle>(seq_id)),
        params(std::move(p)),
        sink(std::move(s)),
        pipeline(tokenizer, n_vocab, pipeline_options(params), params.prompt),
        tokens(params.prompt),
        n_keep(params.generate.n_keep < 0 ? static_cast<int64_t>(params.prompt.size())
                                          : params.generate.n_keep) {}

  int32_t id;
  int32_t slot = -1;  // while running: its slot, also its KV sequence id
  std::shared_ptr<RequestHandle> handle;
  RequestParams params;
  EventSink sink;
  TokenPipeline pipeline;  // sampler, constraint, decoder, stop strings, logprobs
  // [n_prompt + tokens fed back] what the sequence's positions hold or will hold; the last one
  // is computed by the next step that includes this sequence.
  std::vector<int32_t> tokens;
  int64_t n_computed = 0;  // positions whose K and V are in the cache
  int64_t n_keep = 0;      // tokens a context shift keeps (generate.n_keep, < 0 resolved)
  bool admitted = false;   // once admitted (stats.n_cached counts the first admission)
  bool finished = false;
  // The drafts the current step verifies after the last token (prompt lookup or the draft
  // model), at positions tokens.size() onwards, with the draft model's distribution of each when
  // it sampled them; empty between steps. draft_base: positions computed before.
  std::vector<int32_t> drafts;
  std::vector<DraftProposal> proposals;
  int64_t draft_base = 0;
  // With recurrent layers: a checkpoint of the state at draft_base (KvCache::checkpoint_state)
  // while drafts are verified, which settle_drafts rewinds to when a draft is rejected; -1: none.
  int32_t checkpoint = -1;
  RequestStats stats;
  RequestForwards forwards;
  Clock::time_point t_submit;
  Clock::time_point t_first;

  // Its handle's cancel(), or its own flag (GenerateParams::cancel).
  bool cancelled() const {
    return handle->cancelled() || (params.generate.cancel != nullptr &&
                                   params.generate.cancel->load(std::memory_order_relaxed));
  }
};

}  // namespace minfer::engine
