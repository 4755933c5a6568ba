#include "engine/logits.h"

#include <algorithm>
#include <memory>

#include "models/model.h"

namespace minfer::engine {

Result<std::string> teacher_forced_logits(const Model& model, RuntimeOptions options,
                                          std::span<const int32_t> ids, int64_t batch,
                                          const LogitsRows& on_rows) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t n_ctx = model.config().n_ctx_train;
  const int64_t n_vocab = model.config().n_vocab;
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "[logits] no ids to feed");
  if (n > n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[logits] {} ids do not fit the model's context of {} positions", n, n_ctx);
  }
  for (int64_t t = 0; t < n; ++t) {
    const int32_t id = ids[static_cast<size_t>(t)];
    if (id < 0 || id >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[logits] id {} at index {} is outside the vocabulary [0, {})", id, t,
                        n_vocab);
    }
  }
  options.n_ctx = n;
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> runtime, Runtime::create(model, options));
  const int64_t step = batch > 0 ? batch : n;
  for (int64_t start = 0; start < n; start += step) {
    Batch forward;
    for (int64_t t = start; t < std::min(n, start + step); ++t) {
      forward.add(ids[static_cast<size_t>(t)], static_cast<int32_t>(t), 0, true);
    }
    MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime->step(forward));
    if (runtime->trace() != nullptr) {
      // Teacher forcing: the step's "token" is the next id fed, its logits the last row's.
      const int64_t next = start + step;
      runtime->trace()->end_step(next < n ? ids[static_cast<size_t>(next)] : -1,
                                 logits.last(static_cast<size_t>(n_vocab)));
    }
    MINFER_RETURN_IF_ERROR(on_rows(logits));
  }
  return runtime->profile_table();
}

}  // namespace minfer::engine
