#include "engine/request.h"

namespace minfer::engine {

namespace {

Status check_speculative(const RequestParams& params, const RequestBounds& b) {
  if (params.generate.spec_ngram < 0 || params.generate.spec_ngram > kMaxSpecNgram) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] spec_ngram must be in 0..{}, got {}", kMaxSpecNgram,
                      params.generate.spec_ngram);
  }
  if (params.spec_draft_model && !b.has_draft_model) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] a request asks for the draft model, but none is loaded");
  }
  if (params.spec_draft_model && params.generate.spec_ngram > 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] speculative decoding drafts by prompt lookup (spec_ngram {}) or "
                      "by the draft model, not both",
                      params.generate.spec_ngram);
  }
  if (!(params.generate.draft_p_min >= 0.0f && params.generate.draft_p_min <= 1.0f)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_p_min must be in 0..1, got {}",
                      params.generate.draft_p_min);
  }
  if (params.generate.spec_ngram == 0 && !params.spec_draft_model) return Status::ok();
  if (params.generate.draft_max < 1 || params.generate.draft_max > kMaxDraft) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_max must be in 1..{} with speculative decoding, got {}",
                      kMaxDraft, params.generate.draft_max);
  }
  if (params.generate.draft_min < 0 || params.generate.draft_min > params.generate.draft_max) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_min must be in 0..draft_max ({}), got {}",
                      params.generate.draft_max, params.generate.draft_min);
  }
  if (b.n_swa > 0) {
    // Drafts past the window would return cells the sequence still needs once they are dropped.
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] speculative decoding does not run with sliding-window layers "
                      "(this model's window is {} positions): expected no speculation",
                      b.n_swa);
  }
  return Status::ok();
}

}  // namespace

Status check_request(const RequestParams& params, const Tokenizer& tokenizer,
                     const RequestBounds& b) {
  if (params.prompt.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "[scheduler] empty prompt");
  }
  MINFER_RETURN_IF_ERROR(tokenizer.check_ids(params.prompt));
  for (const int32_t t : params.prompt) {
    if (t < 0 || t >= b.n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[scheduler] token id {} is out of range: expected 0..{}", t,
                        b.n_vocab - 1);
    }
  }
  MINFER_RETURN_IF_ERROR(validate(params.generate, b.n_vocab));
  if (params.generate.top_logprobs > kMaxTopLogprobs) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] top_logprobs must be at most {}, got {}", kMaxTopLogprobs,
                      params.generate.top_logprobs);
  }
  const int64_t n_prompt = static_cast<int64_t>(params.prompt.size());
  if (params.generate.id_slot >= b.n_slots) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] slot {} does not exist: expected 0..{} (n_parallel {})",
                      params.generate.id_slot, b.n_slots - 1, b.n_slots);
  }
  if (n_prompt > b.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[scheduler] the prompt does not fit the context: {} tokens, expected at "
                      "most n_ctx {}",
                      n_prompt, b.n_ctx);
  }
  if (params.generate.context_shift && b.recurrent) {
    return make_error(ErrorCode::kUnsupported,
                      "[scheduler] context shift does not run on a model with recurrent layers "
                      "(their state cannot drop tokens): expected context_shift off");
  }
  const int64_t n_keep = params.generate.n_keep < 0 ? n_prompt : params.generate.n_keep;
  if (params.generate.context_shift && n_keep + 2 > b.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] context shift keeps {} tokens: expected at most {} (n_ctx {} "
                      "less 2 positions to shift)",
                      n_keep, b.n_ctx - 2, b.n_ctx);
  }
  return check_speculative(params, b);
}

}  // namespace minfer::engine
