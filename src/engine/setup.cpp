#include "engine/setup.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernels/dispatch.h"

namespace minfer::engine {

Result<LoadedModel> load_for_generation(const ModelOptions& options) {
  MINFER_RETURN_IF_ERROR(kernels::init_kernels());
  SessionOptions session;
  if (!options.cache_type.empty()) {
    MINFER_ASSIGN_OR_RETURN(session.cache_type, parse_kv_cell_type(options.cache_type));
  } else {
    MINFER_ASSIGN_OR_RETURN(session.cache_type, kv_cell_type_from_env());
  }
  if (options.n_ctx < 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[engine] context size must be positive (or 0 for the model's), got {}",
                      options.n_ctx);
  }
  LoadedModel loaded;
  MINFER_ASSIGN_OR_RETURN(loaded.model, Model::load(options.path));
  MINFER_ASSIGN_OR_RETURN(loaded.tokenizer, Tokenizer::from_gguf(loaded.model->file()));
  const int64_t n_ctx_train = loaded.model->config().n_ctx_train;
  session.n_ctx = options.n_ctx > 0 ? options.n_ctx
                                    : std::max<int64_t>(1, std::min(n_ctx_train, kDefaultMaxCtx));
  session.n_batch = options.n_batch;
  session.n_threads = options.n_threads;
  MINFER_ASSIGN_OR_RETURN(loaded.session, Session::create(*loaded.model, session));
  return loaded;
}

std::string describe_setup(const LoadedModel& loaded, const std::string& path) {
  const Session& s = *loaded.session;
  std::string out = fmt::format("model:        {}\n", path);
  out += describe_model(*loaded.model);
  out += fmt::format("kernels:      {}\n", kernels::active_table().name);
  out += fmt::format("threads:      {}\n", s.n_threads());
  out += fmt::format("cache type:   {}\n", kv_cell_type_name(s.cache_type()));
  out += fmt::format("n_ctx:        {} (n_batch {})\n", s.n_ctx(), s.n_batch());
  return out;
}

}  // namespace minfer::engine
