#include "server/choices.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <optional>
#include <utility>

#include "server/http_io.h"

namespace minfer::server {

Json ChoiceJoin::usage() {
  std::lock_guard<std::mutex> lock(mu);
  Json u = usage_json(total);
  u["choice_cached_tokens"] = cached;
  return u;
}

namespace {

// The first choice's first event, which the others wait for.
struct FirstEvent {
  std::mutex mu;
  std::condition_variable cv;
  bool seen = false;
};

// Choice i's events into the call, tagged, the choices' ends joined.
std::function<void(const BatchEvent&)> choice_sink(std::shared_ptr<PendingReply> call,
                                                   std::shared_ptr<ChoiceJoin> join,
                                                   std::shared_ptr<FirstEvent> first, int32_t i) {
  return [sink = PendingReply::sink(std::move(call)), join = std::move(join),
          first = std::move(first), i](const BatchEvent& e) {
    BatchEvent c = e;
    c.index = i;
    if (c.done) {
      std::lock_guard<std::mutex> lock(join->mu);
      RequestStats& t = join->total;
      if (i == 0) {
        t.n_prompt = e.stats.n_prompt;
        t.n_cached = e.stats.n_cached;
        t.queue_ms = e.stats.queue_ms;
        t.ttft_ms = e.stats.ttft_ms;
      }
      t.n_generated += e.stats.n_generated;
      t.total_ms = std::max(t.total_ms, e.stats.total_ms);
      t.n_preempted += e.stats.n_preempted;
      t.n_shifts += e.stats.n_shifts;
      t.n_drafted += e.stats.n_drafted;
      t.n_draft_accepted += e.stats.n_draft_accepted;
      join->cached[static_cast<size_t>(i)] = e.stats.n_cached;
      if (!e.error.empty() && join->error.empty()) join->error = e.error;
      c.done = --join->remaining == 0;
      if (c.done) {
        c.stats = t;
        c.error = join->error;
      }
    }
    if (i == 0) {
      std::lock_guard<std::mutex> lock(first->mu);
      first->seen = true;
      first->cv.notify_all();
    }
    sink(c);
  };
}

}  // namespace

Result<Choices> submit_choices(BatchGenerator& generator, std::span<const int32_t> prompt,
                               const GenerateParams& params, int32_t n, Metrics& metrics) {
  Choices out;
  out.call = std::make_shared<PendingReply>(metrics);
  out.join = std::make_shared<ChoiceJoin>();
  out.join->remaining = n;
  out.join->cached.assign(static_cast<size_t>(n), 0);
  auto first = std::make_shared<FirstEvent>();
  for (int32_t i = 0; i < n; ++i) {
    GenerateParams p = params;
    p.seed = params.seed + static_cast<uint64_t>(i);  // each choice its own sample
    Result<std::shared_ptr<RequestHandle>> handle =
        generator.submit(prompt, p, choice_sink(out.call, out.join, first, i));
    if (!handle.is_ok()) {
      if (i > 0) out.call->cancel();
      return handle.status();
    }
    if (i == 0) {
      out.call->attach(handle.value(), nullptr);
      // The prompt is computed once the first choice sampled: its full blocks are now in the
      // prefix cache, where the other choices find them.
      std::unique_lock<std::mutex> lock(first->mu);
      first->cv.wait(lock, [&] { return first->seen; });
    } else {
      out.call->attach_more(handle.value());
    }
  }
  return out;
}

namespace {

// Sets the index of a chunk's choice.
Json& with_index(Json& chunk, int32_t index) {
  if (chunk.contains("choices") && !chunk["choices"].empty()) {
    chunk["choices"][0]["index"] = index;
  }
  return chunk;
}

class OpenAiChoicesFormat : public WireFormat {
 public:
  OpenAiChoicesFormat(Reply reply, std::shared_ptr<ChoiceJoin> join, int32_t n)
      : reply_(std::move(reply)),
        join_(std::move(join)),
        n_(n),
        text_offsets_(static_cast<size_t>(n), 0) {}

  std::vector<std::string> stream_open() override {
    if (reply_.info().endpoint != Endpoint::kChat) return {};
    std::vector<std::string> frames;
    for (int32_t i = 0; i < n_; ++i) {
      Json c = reply_.role_chunk();
      frames.push_back(sse_frame(with_index(c, i)));
    }
    return frames;
  }

  std::vector<std::string> stream_event(const BatchEvent& e) override {
    std::vector<std::string> frames;
    for (Json& chunk : reply_.event_chunks(e, text_offsets_[static_cast<size_t>(e.index)])) {
      frames.push_back(sse_frame(with_index(chunk, e.index)));
    }
    if (!e.done) {
      if (!e.finish_reason.empty() && e.error.empty()) {
        Json c = reply_.finish_chunk(e.finish);
        frames.push_back(sse_frame(with_index(c, e.index)));
      }
      return frames;
    }
    if (!e.error.empty()) {
      frames.push_back(sse_frame(api_error(500, e.error, "server_error", "").to_json()));
    } else {
      Json c = reply_.finish_chunk(e.finish);
      c["timings"] = timings_json(e.stats);  // the choices' together
      frames.push_back(sse_frame(with_index(c, e.index)));
      if (reply_.info().include_usage) {
        Json u = reply_.usage_chunk(e.stats);
        const Json seed = u["usage"]["seed"];
        u["usage"] = join_->usage();
        u["usage"]["seed"] = seed;
        frames.push_back(sse_frame(u));
      }
    }
    frames.emplace_back("data: [DONE]\n\n");
    return frames;
  }

  // Not called: write_blocking_choices builds the blocking reply of n choices.
  Json complete(const ReplyParts&, const std::vector<SampledToken>&,
                const BatchEvent&) const override {
    return Json::object();
  }

 private:
  Reply reply_;
  std::shared_ptr<ChoiceJoin> join_;
  int32_t n_;
  std::vector<int64_t> text_offsets_;  // [n] bytes of text sent so far per choice
};

// One choice's reply as it gathers.
struct ChoiceParts {
  ReplyParts parts;
  std::vector<SampledToken> tokens;
  FinishReason finish = FinishReason::kLength;

  void add(const BatchEvent& e) {
    parts.add(e);
    tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
    if (!e.finish_reason.empty()) finish = e.finish;  // the choice ended
  }
};

}  // namespace

std::unique_ptr<WireFormat> openai_choices_format(Reply reply, std::shared_ptr<ChoiceJoin> join,
                                                  int32_t n) {
  return std::make_unique<OpenAiChoicesFormat>(std::move(reply), std::move(join), n);
}

namespace {

// Mean token logprob of a choice (-inf when it has no token).
double mean_logprob(const ChoiceParts& c) {
  if (c.tokens.empty()) return -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  for (const SampledToken& t : c.tokens) sum += t.logprob;
  return sum / static_cast<double>(c.tokens.size());
}

// The indexes of the `keep` choices to return, in the order they are returned.
std::vector<size_t> best_of_order(const std::vector<ChoiceParts>& choices, int32_t keep) {
  std::vector<size_t> order(choices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (static_cast<size_t>(keep) < choices.size()) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return mean_logprob(choices[a]) > mean_logprob(choices[b]);
    });
    order.resize(static_cast<size_t>(keep));
  }
  return order;
}

}  // namespace

void write_blocking_choices(HttpResponse& res, PendingReply& call, const Reply& reply,
                            ChoiceJoin& join, int32_t n, int32_t keep,
                            const std::function<void()>& release) {
  std::vector<ChoiceParts> choices(static_cast<size_t>(n));  // [n]
  std::optional<BatchEvent> last;                            // the final event, once it came
  std::deque<BatchEvent> events;
  while (!last.has_value()) {
    events.clear();
    call.take_events(events);  // a departed client is cancelled; the final event still comes
    for (BatchEvent& e : events) {
      choices[static_cast<size_t>(e.index)].add(e);
      if (e.done) last = std::move(e);
    }
  }
  release();
  const BatchEvent& final_event = *last;
  if (!final_event.error.empty()) {
    res.status = 500;
    return send_json(res, api_error(500, final_event.error, "server_error", "").to_json());
  }
  Json out;
  Json list = Json::array();
  const std::vector<size_t> order = best_of_order(choices, keep);
  for (size_t i = 0; i < order.size(); ++i) {
    const ChoiceParts& c = choices[order[i]];
    Json one = reply.complete(c.parts, c.tokens, c.finish, final_event.stats);
    list.push_back(with_index(one, static_cast<int32_t>(i))["choices"][0]);
    if (i == 0) out = std::move(one);
  }
  out["choices"] = std::move(list);
  const Json seed = out["usage"]["seed"];
  out["usage"] = join.usage();
  out["usage"]["seed"] = seed;
  send_json(res, out);
}

}  // namespace minfer::server
