// POST /v1/embeddings (and llama.cpp's /embeddings): texts or token arrays to vectors through the
// backend's embedder (LanguageModel::embedder), which runs beside the batch generator on a KV
// cache of its own, one request at a time. Served when the server runs with --embeddings or the
// model is an embedding model (its file sets pooling_type); otherwise 400 naming the flag.

#include "server/embeddings_api.h"
#include "server/http_io.h"
#include "server/http_server.h"

namespace minfer::server {

void HttpServer::handle_embeddings(const HttpRequest& req, HttpResponse& res) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  if (b->embedder == nullptr) {
    return send_error(res, bad_request("[server] embeddings are not enabled for this model: "
                                       "start minfer serve with --embeddings (or serve an "
                                       "embedding model, whose file sets pooling_type)",
                                       "", "embeddings_not_enabled"));
  }
  EmbeddingRequest request;
  if (auto e = parse_embedding_request(body, b->embedder->n_embd(), request)) {
    return send_error(res, *e);
  }
  std::vector<std::vector<int32_t>> inputs = std::move(request.token_inputs);
  for (const std::string& text : request.texts) inputs.push_back(b->model->tokenize(text));
  int64_t n_tokens = 0;
  for (const auto& in : inputs) n_tokens += static_cast<int64_t>(in.size());
  Result<std::vector<std::vector<float>>> vectors = b->embedder->embed(inputs);
  if (!vectors.is_ok()) {
    return send_error(res, bad_request(vectors.status().message(), "input"));
  }
  for (auto& v : *vectors) truncate_embedding(v, request.dimensions);
  send_json(res, embedding_reply(*vectors, request.base64, b->model_name, n_tokens));
}

}  // namespace minfer::server
