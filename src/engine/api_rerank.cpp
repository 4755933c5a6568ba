// The public API's reranker (include/minfer/minfer.h) over engine/reranker.h.
#include "engine/api_impl.h"
#include "engine/reranker.h"

namespace minfer {

struct Reranker::Impl {
  std::unique_ptr<engine::Reranker> reranker;
};

Reranker::Reranker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reranker::~Reranker() = default;

std::vector<int32_t> Reranker::pair_tokens(std::string_view query,
                                           std::string_view document) const {
  return impl_->reranker->pair_tokens(query, document);
}

Result<std::vector<float>> Reranker::score(const std::vector<std::vector<int32_t>>& pairs) {
  return impl_->reranker->score(pairs);
}

std::string Reranker::method() const {
  return impl_->reranker->describe();
}

int64_t Reranker::n_ctx() const {
  return impl_->reranker->n_ctx();
}

Result<std::unique_ptr<Reranker>> LanguageModel::reranker(const RerankOptions& options) const {
  const engine::LoadedModel& loaded = impl_->loaded;
  engine::RuntimeOptions runtime = loaded.runtime;
  if (options.n_ctx > 0) runtime.n_ctx = options.n_ctx;
  const engine::RerankHead* head = loaded.rerank_head ? &*loaded.rerank_head : nullptr;
  auto impl = std::make_unique<Reranker::Impl>();
  MINFER_ASSIGN_OR_RETURN(
      impl->reranker, engine::Reranker::create(*loaded.model, *loaded.tokenizer, head, runtime));
  return std::unique_ptr<Reranker>(new Reranker(std::move(impl)));
}

bool LanguageModel::is_reranker() const {
  return impl_->loaded.rerank_head.has_value();
}

}  // namespace minfer
