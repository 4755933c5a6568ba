// A request answered with n > 1 choices ('n' of chat/completions): n generation requests with
// seeds seed..seed+n-1, their events joined into one PendingReply, each tagged with its choice
// (BatchEvent::index). The 2nd..nth are submitted once the first has sampled (its prompt
// computed), so their prompt's full blocks come from the prefix cache instead of being
// prefilled again. Only the last choice to end sends a final event (done); a choice that ends
// before it sends one with done false and finish_reason set.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"
#include "server/openai_reply.h"
#include "server/reply_writer.h"
#include "server/wire_format.h"

namespace minfer::server {

// What the choices' final events add up to.
struct ChoiceJoin {
  std::mutex mu;
  int32_t remaining = 0;        // choices not ended yet
  RequestStats total;           // the prompt counted once (choice 0's), generation summed
  std::vector<int64_t> cached;  // [n] prompt tokens each choice took from the cache
  std::string error;            // the first choice's error, if any
  // Usage: prompt_tokens once, completion_tokens summed, and the cached tokens of each choice
  // (choice_cached_tokens, a minfer extension that shows the prompt was computed once).
  Json usage();
};

struct Choices {
  std::shared_ptr<PendingReply> call;
  std::shared_ptr<ChoiceJoin> join;
};

// Submits the n choices of one request (n >= 2) into one call. Errors: the first refused submit
// (the choices already submitted are cancelled).
Result<Choices> submit_choices(BatchGenerator& generator, std::span<const int32_t> prompt,
                               const GenerateParams& params, int32_t n, Metrics& metrics);

// OpenAI's streamed chunks of n choices: each carries its choice's index; each choice gets its
// finish chunk as it ends; the usage chunk (include_usage) and [DONE] after the last.
std::unique_ptr<WireFormat> openai_choices_format(Reply reply, std::shared_ptr<ChoiceJoin> join,
                                                  int32_t n);

// Waits for every choice, calls `release`, and answers with one reply holding `keep` of the n
// choices (or the first engine error as a 500): all of them when keep == n, else best_of's pick —
// the `keep` with the highest mean token logprob, best first (the legacy API's "best" per token).
// Usage counts every choice.
void write_blocking_choices(HttpResponse& res, PendingReply& call, const Reply& reply,
                            ChoiceJoin& join, int32_t n, int32_t keep,
                            const std::function<void()>& release);

}  // namespace minfer::server
