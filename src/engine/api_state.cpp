// The public API's state files (include/minfer/minfer.h: LanguageModel::save_state, load_state)
// over engine/state_file.h and the model's one sequence (a scheduler slot).
#include <chrono>
#include <filesystem>

#include "core/elapsed.h"
#include "engine/api_impl.h"
#include "engine/state_file.h"

namespace minfer {

Result<StateReply> LanguageModel::save_state(const std::string& path, std::string_view app_data) {
  MINFER_RETURN_IF_ERROR(impl_->need_sequence());
  const auto t0 = std::chrono::steady_clock::now();
  MINFER_ASSIGN_OR_RETURN(const engine::KvState state,
                          impl_->sequence->slot_table().capture(0, std::string(app_data)));
  MINFER_ASSIGN_OR_RETURN(const int64_t n_bytes, engine::write_state_file(path, state));
  return StateReply{.n_tokens = state.n_tokens(),
                    .tokens = state.tokens,
                    .app_data = state.app_data,
                    .n_bytes = n_bytes,
                    .ms = ms_between(t0, std::chrono::steady_clock::now())};
}

Result<StateReply> LanguageModel::load_state(const std::string& path) {
  MINFER_RETURN_IF_ERROR(impl_->need_sequence());
  const auto t0 = std::chrono::steady_clock::now();
  MINFER_ASSIGN_OR_RETURN(engine::KvState state, engine::read_state_file(path));
  MINFER_RETURN_IF_ERROR(impl_->sequence->slot_table().restore(0, state, path));
  std::error_code ec;
  return StateReply{.n_tokens = state.n_tokens(),
                    .tokens = std::move(state.tokens),
                    .app_data = std::move(state.app_data),
                    .n_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec)),
                    .ms = ms_between(t0, std::chrono::steady_clock::now())};
}

}  // namespace minfer
