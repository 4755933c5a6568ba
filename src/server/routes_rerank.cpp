// POST /v1/rerank (and llama.cpp's /rerank, /v1/reranking): a query and documents to relevance
// scores through the backend's reranker (LanguageModel::reranker), which runs beside the batch
// generator on a KV cache of its own, one request at a time. Served when the server runs with
// --rerank; otherwise 400 naming the flag.

#include <fmt/format.h>

#include "server/http_io.h"
#include "server/http_server.h"
#include "server/rerank_api.h"

namespace minfer::server {

void HttpServer::handle_rerank(const HttpRequest& req, HttpResponse& res) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  if (b->reranker == nullptr) {
    return send_error(res, bad_request("[server] reranking is not enabled for this model: start "
                                       "minfer serve with --rerank",
                                       "", "rerank_not_enabled"));
  }
  RerankRequest request;
  if (auto e = parse_rerank_request(body, request)) return send_error(res, *e);
  std::vector<std::vector<int32_t>> pairs;
  pairs.reserve(request.documents.size());
  int64_t n_tokens = 0;
  for (size_t i = 0; i < request.documents.size(); ++i) {
    pairs.push_back(b->reranker->pair_tokens(request.query, request.documents[i]));
    const auto n = static_cast<int64_t>(pairs.back().size());
    if (n > b->reranker->n_ctx()) {
      return send_error(res,
                        bad_request(fmt::format("[server] documents[{}] with the query makes "
                                                "a prompt of {} tokens, more than the "
                                                "context of {}",
                                                i, n, b->reranker->n_ctx()),
                                    fmt::format("documents[{}]", i), "context_length_exceeded"));
    }
    n_tokens += n;
  }
  Result<std::vector<float>> scores = b->reranker->score(pairs);
  if (!scores.is_ok()) return send_error(res, bad_request(scores.status().message(), "documents"));
  send_json(res, rerank_reply(request, *scores, b->model_name, n_tokens));
}

}  // namespace minfer::server
