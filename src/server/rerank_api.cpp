#include "server/rerank_api.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/input_limits.h"

namespace minfer::server {

namespace {

// `documents`: a non-empty array of strings or {text} objects.
std::optional<ApiError> parse_documents(const Json& documents, std::vector<std::string>& out) {
  if (!documents.is_array()) {
    return wrong_type("documents", "an array of strings or {\"text\"} objects", documents);
  }
  if (documents.empty()) return bad_request("[server] 'documents' is empty", "documents");
  if (documents.size() > limits::kMaxRerankDocuments) {
    return bad_request(fmt::format("[server] 'documents' holds {} documents; the limit is {}",
                                   documents.size(), limits::kMaxRerankDocuments),
                       "documents", "invalid_value");
  }
  for (size_t i = 0; i < documents.size(); ++i) {
    const Json& d = documents[i];
    const std::string name = fmt::format("documents[{}]", i);
    if (d.is_string()) {
      out.push_back(d.get<std::string>());
      continue;
    }
    auto text = d.is_object() ? d.find("text") : d.end();
    if (!d.is_object() || text == d.end() || !text->is_string()) {
      return wrong_type(d.is_object() ? name + ".text" : name,
                        d.is_object() ? "a string" : "a string or a {\"text\"} object",
                        d.is_object() && text != d.end() ? *text : d);
    }
    out.push_back(text->get<std::string>());
  }
  return std::nullopt;
}

// The sort key: a NaN score (a broken model) sorts last instead of breaking the ordering.
float sort_key(float score) {
  return std::isnan(score) ? -std::numeric_limits<float>::infinity() : score;
}

}  // namespace

std::optional<ApiError> parse_rerank_request(const Json& body, RerankRequest& out) {
  for (const char* field : {"rank_fields", "max_chunks_per_doc", "max_tokens_per_doc"}) {
    if (auto f = body.find(field); f != body.end() && !f->is_null()) {
      return bad_request(fmt::format("[server] '{}' is not supported by minfer's rerank", field),
                         field, "unsupported_field");
    }
  }
  auto query = body.find("query");
  if (query == body.end() || query->is_null()) {
    return bad_request("[server] 'query' is required", "query");
  }
  if (!query->is_string()) return wrong_type("query", "a string", *query);
  out.query = query->get<std::string>();
  auto documents = body.find("documents");
  if (documents == body.end() || documents->is_null()) {
    return bad_request("[server] 'documents' is required", "documents");
  }
  if (auto e = parse_documents(*documents, out.documents)) return e;
  if (auto n = body.find("top_n"); n != body.end() && !n->is_null()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1) {
      return bad_request(fmt::format("[server] 'top_n' must be an integer ≥ 1, got {}", n->dump()),
                         "top_n");
    }
    out.top_n = n->get<int64_t>();
  }
  if (auto r = body.find("return_documents"); r != body.end() && !r->is_null()) {
    if (!r->is_boolean()) return wrong_type("return_documents", "a boolean", *r);
    out.return_documents = r->get<bool>();
  }
  return std::nullopt;
}

Json rerank_reply(const RerankRequest& request, std::span<const float> scores,
                  const std::string& model, int64_t prompt_tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&scores](size_t a, size_t b) {
    return sort_key(scores[a]) > sort_key(scores[b]);
  });
  const auto n = static_cast<int64_t>(order.size());
  const int64_t shown = request.top_n > 0 ? std::min(request.top_n, n) : n;
  Json results = Json::array();
  for (int64_t k = 0; k < shown; ++k) {
    const size_t i = order[static_cast<size_t>(k)];
    Json item = {{"index", i}, {"relevance_score", scores[i]}};
    if (request.return_documents) item["document"] = {{"text", request.documents[i]}};
    results.push_back(std::move(item));
  }
  return Json{{"model", model},
              {"object", "list"},
              {"results", std::move(results)},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace minfer::server
