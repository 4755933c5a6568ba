#include "engine/setup.h"

#include <algorithm>

#include <fmt/format.h>

namespace minfer::engine {

Result<std::unique_ptr<Model>> load_model_and_head(const std::string& path, const MapOptions& map,
                                                   std::optional<RerankHead>* rerank_head) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path, map));
  MINFER_ASSIGN_OR_RETURN(std::optional<RerankHead> head, take_rerank_head(*file));
  if (rerank_head != nullptr) *rerank_head = std::move(head);
  return Model::from_file(std::move(file));
}

Result<LoadedModel> load_for_generation(const ModelOptions& options) {
  RuntimeOptions runtime;
  runtime.observe = options.observe;
  MINFER_RETURN_IF_ERROR(apply_user_options(runtime, options.cache_type));
  LoadedModel loaded;
  MINFER_ASSIGN_OR_RETURN(loaded.model,
                          load_model_and_head(options.path, options.map, &loaded.rerank_head));
  MINFER_ASSIGN_OR_RETURN(loaded.tokenizer, Tokenizer::from_gguf(loaded.model->file()));
  MINFER_ASSIGN_OR_RETURN(ContextChoice ctx,
                          resolve_n_ctx(*loaded.model, options.n_ctx, runtime.cache_type));
  runtime.n_ctx = ctx.n_ctx;
  runtime.n_threads = options.n_threads;
  loaded.runtime = runtime;
  loaded.n_batch = options.n_batch;
  loaded.n_ctx_why = std::move(ctx.why);
  return loaded;
}

std::string describe_model(const Model& model) {
  const ModelConfig& c = model.config();
  std::string out;
  out += fmt::format("arch:         {}\n", c.arch);
  out += fmt::format("n_layer:      {}\n", c.n_layer);
  out += fmt::format("n_embd:       {}\n", c.n_embd);
  out += fmt::format("n_head:       {} (n_head_kv {})\n", c.n_head, c.n_head_kv);
  out += fmt::format("head_dim:     {}\n", c.head_dim);
  out += fmt::format("n_ff:         {}\n", c.n_ff);
  out += fmt::format("n_vocab:      {}\n", c.n_vocab);
  out += fmt::format("n_ctx_train:  {}\n", c.n_ctx_train);
  if (c.n_swa > 0) {
    const auto n_sliding = std::count(c.swa_layers.begin(), c.swa_layers.end(), true);
    out += fmt::format("n_swa:        {} ({} of {} layers slide, rope base {})\n", c.n_swa,
                       n_sliding, c.n_layer, c.rope_freq_base_swa);
  }
  out += describe_layer_kinds(c);
  out += describe_recurrent(c);
  return out;
}

std::string describe_setup(const LoadedModel& loaded, const std::string& path,
                           const Runtime* runtime) {
  std::string out = fmt::format("model:        {}\n", path);
  out += describe_model(*loaded.model);
  if (runtime == nullptr) return out;
  out += fmt::format("kernels:      {}\n", runtime->isa_name());
  out += fmt::format("threads:      {}\n", runtime->n_threads());
  out += fmt::format("cache type:   {}\n", kv_cell_type_name(loaded.runtime.cache_type));
  out += fmt::format("n_ctx:        {} (n_batch {}): {}\n", loaded.runtime.n_ctx, loaded.n_batch,
                     loaded.n_ctx_why);
  return out;
}

}  // namespace minfer::engine
