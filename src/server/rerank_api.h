// The rerank wire format (POST /v1/rerank, /rerank, /v1/reranking): llama.cpp's, which is
// Jina's and Cohere's — https://docs.cohere.com/reference/rerank:
//
//   {model?, query, documents: [string | {text}], top_n?, return_documents?}
//   → {model, object: "list", results: [{index, relevance_score, document?: {text}}], usage}
//
// results sorted by relevance_score, highest first (ties by index), the first top_n of them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/openai_api.h"

namespace minfer::server {

struct RerankRequest {
  std::string query;
  std::vector<std::string> documents;
  int64_t top_n = 0;              // results returned: 1 … documents; 0: all of them
  bool return_documents = false;  // each result carries its document's text
};

// Checks the fields above (documents ≤ limits::kMaxRerankDocuments; top_n ≥ 1, more than the
// documents meaning all); Cohere's fields minfer does not honour (rank_fields,
// max_chunks_per_doc, max_tokens_per_doc) are a 400 naming them.
std::optional<ApiError> parse_rerank_request(const Json& body, RerankRequest& out);

// The reply: scores[i] is documents[i]'s; prompt_tokens: the tokens of every pair's prompt.
Json rerank_reply(const RerankRequest& request, std::span<const float> scores,
                  const std::string& model, int64_t prompt_tokens);

}  // namespace minfer::server
