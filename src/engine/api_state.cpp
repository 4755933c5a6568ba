// The public API's state files (include/minfer/minfer.h: LanguageModel::save_state, load_state)
// over engine/state_file.h and the model's one Session.
#include <chrono>
#include <filesystem>

#include "core/elapsed.h"
#include "engine/api_impl.h"
#include "engine/state_file.h"

namespace minfer {

Result<StateReply> LanguageModel::save_state(const std::string& path, std::string_view app_data) {
  MINFER_RETURN_IF_ERROR(impl_->need_session());
  const auto t0 = std::chrono::steady_clock::now();
  const engine::Session& session = *impl_->loaded.session;
  const engine::KvState state =
      session.capture(engine::model_fingerprint(session.model()), std::string(app_data));
  MINFER_ASSIGN_OR_RETURN(const int64_t n_bytes, engine::write_state_file(path, state));
  return StateReply{.n_tokens = state.n_tokens(),
                    .tokens = state.tokens,
                    .app_data = state.app_data,
                    .n_bytes = n_bytes,
                    .ms = ms_between(t0, std::chrono::steady_clock::now())};
}

Result<StateReply> LanguageModel::load_state(const std::string& path) {
  MINFER_RETURN_IF_ERROR(impl_->need_session());
  const auto t0 = std::chrono::steady_clock::now();
  engine::Session& session = *impl_->loaded.session;
  MINFER_ASSIGN_OR_RETURN(engine::KvState state, engine::read_state_file(path));
  MINFER_RETURN_IF_ERROR(engine::check_state_fits(state, engine::model_fingerprint(session.model()),
                                                  session.cache(), path));
  MINFER_RETURN_IF_ERROR(session.restore(state));
  std::error_code ec;
  return StateReply{.n_tokens = state.n_tokens(),
                    .tokens = std::move(state.tokens),
                    .app_data = std::move(state.app_data),
                    .n_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec)),
                    .ms = ms_between(t0, std::chrono::steady_clock::now())};
}

}  // namespace minfer
