// The public API's teacher-forced logits (include/minfer/minfer.h: LanguageModel::logits) over
// engine/logits.h, which `minfer logits` (write_logits) runs too.
#include "engine/api_impl.h"
#include "engine/logits.h"

namespace minfer {

Result<std::vector<float>> LanguageModel::logits(std::span<const int32_t> ids, int64_t batch,
                                                 const std::string& cache_type) const {
  engine::RuntimeOptions options;
  options.n_threads = impl_->loaded.runtime.n_threads;
  MINFER_RETURN_IF_ERROR(engine::apply_user_options(options, cache_type, GgmlType::kF32));
  std::vector<float> out;  // [n, n_vocab]
  out.reserve(ids.size() * static_cast<size_t>(n_vocab()));
  MINFER_RETURN_IF_ERROR(engine::teacher_forced_logits(*impl_->loaded.model, options, ids, batch,
                                                       [&out](std::span<const float> rows) {
                                                         out.insert(out.end(), rows.begin(),
                                                                    rows.end());
                                                         return Status::ok();
                                                       })
                             .status());
  return out;
}

}  // namespace minfer
