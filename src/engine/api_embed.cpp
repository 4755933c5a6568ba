// The public API's embedder (include/minfer/minfer.h) over engine/embedder.h.
#include <algorithm>

#include "engine/api_impl.h"
#include "engine/embedder.h"

namespace minfer {

struct Embedder::Impl {
  std::unique_ptr<engine::Embedder> embedder;
};

Embedder::Embedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Embedder::~Embedder() = default;

Result<std::vector<std::vector<float>>> Embedder::embed(
    const std::vector<std::vector<int32_t>>& inputs) {
  return impl_->embedder->embed(inputs);
}

int64_t Embedder::n_embd() const {
  return impl_->embedder->n_embd();
}

int64_t Embedder::n_ctx() const {
  return impl_->embedder->n_ctx();
}

std::string Embedder::pooling() const {
  return engine::pooling_name(impl_->embedder->pooling());
}

Result<std::unique_ptr<Embedder>> LanguageModel::embedder(const EmbedOptions& options) const {
  const Model& model = *impl_->loaded.model;
  engine::EmbedderOptions o;
  if (options.pooling.empty()) {
    MINFER_ASSIGN_OR_RETURN(o.pooling, engine::model_pooling(model.config()));
  } else {
    MINFER_ASSIGN_OR_RETURN(o.pooling, engine::parse_pooling(options.pooling));
  }
  o.normalize = options.normalize;
  engine::RuntimeOptions runtime = impl_->loaded.runtime;
  if (options.n_ctx > 0) runtime.n_ctx = options.n_ctx;
  o.n_batch = std::min<int64_t>(runtime.n_ctx, 2048);
  // The observers (trace, dump) follow generation, not the embedder.
  runtime.observe = {};
  auto impl = std::make_unique<Embedder::Impl>();
  MINFER_ASSIGN_OR_RETURN(impl->embedder, engine::Embedder::create(model, runtime, o));
  return std::unique_ptr<Embedder>(new Embedder(std::move(impl)));
}

bool LanguageModel::is_embedding_model() const {
  // A reranker's pooling_type (rank) says how it scores pairs, not how it embeds.
  return impl_->loaded.model->config().pooling_type >= 0 && !is_reranker();
}

}  // namespace minfer
