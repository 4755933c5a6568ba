#include "engine/setup.h"

#include <fmt/format.h>

namespace minfer::engine {

Result<LoadedModel> load_for_generation(const ModelOptions& options) {
  SessionOptions session;
  session.observe = options.observe;
  MINFER_RETURN_IF_ERROR(apply_user_options(session, options.cache_type, GgmlType::kF16));
  LoadedModel loaded;
  MINFER_ASSIGN_OR_RETURN(loaded.model, Model::load(options.path, options.map));
  MINFER_ASSIGN_OR_RETURN(loaded.tokenizer, Tokenizer::from_gguf(loaded.model->file()));
  MINFER_ASSIGN_OR_RETURN(ContextChoice ctx,
                          resolve_n_ctx(*loaded.model, options.n_ctx, session.cache_type));
  session.n_ctx = ctx.n_ctx;
  loaded.n_ctx_why = std::move(ctx.why);
  session.n_batch = options.n_batch;
  session.n_threads = options.n_threads;
  loaded.runtime = session;
  if (options.with_session) {
    MINFER_ASSIGN_OR_RETURN(loaded.session, Session::create(*loaded.model, session));
  }
  return loaded;
}

std::string describe_setup(const LoadedModel& loaded, const std::string& path) {
  std::string out = fmt::format("model:        {}\n", path);
  out += describe_model(*loaded.model);
  if (loaded.session == nullptr) return out;
  const Session& s = *loaded.session;
  out += fmt::format("kernels:      {}\n", s.runtime().isa_name());
  out += fmt::format("threads:      {}\n", s.n_threads());
  out += fmt::format("cache type:   {}\n", kv_cell_type_name(s.cache_type()));
  out +=
      fmt::format("n_ctx:        {} (n_batch {}): {}\n", s.n_ctx(), s.n_batch(), loaded.n_ctx_why);
  return out;
}

}  // namespace minfer::engine
