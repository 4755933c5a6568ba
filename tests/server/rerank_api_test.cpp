// The rerank wire format: documents as strings or {text} objects, top_n and return_documents,
// every malformed field a 400 naming it (Cohere's fields minfer does not honour included), the
// document count bounded; the reply sorted by score (ties by index, NaN last), cut at top_n.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/input_limits.h"
#include "server/rerank_api.h"

namespace minfer::server {
namespace {

std::optional<ApiError> parse(const std::string& body, RerankRequest& out) {
  return parse_rerank_request(Json::parse(body), out);
}

TEST(RerankRequest, StringsAndTextObjectsWithOptions) {
  RerankRequest r;
  ASSERT_FALSE(parse(R"({"query": "q", "documents": ["a", {"text": "b"}, ""], "top_n": 2,
                         "return_documents": true, "model": "m"})",
                     r)
                   .has_value());
  EXPECT_EQ(r.query, "q");
  EXPECT_EQ(r.documents, (std::vector<std::string>{"a", "b", ""}));
  EXPECT_EQ(r.top_n, 2);
  EXPECT_TRUE(r.return_documents);
  RerankRequest d;
  ASSERT_FALSE(parse(R"({"query": "q", "documents": ["a"], "top_n": null})", d).has_value());
  EXPECT_EQ(d.top_n, 0);
  EXPECT_FALSE(d.return_documents);
}

TEST(RerankRequest, EachBadFieldIsA400NamingIt) {
  const struct {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"documents": ["a"]})", "query"},
      {R"({"query": 3, "documents": ["a"]})", "query"},
      {R"({"query": "q"})", "documents"},
      {R"({"query": "q", "documents": "a"})", "documents"},
      {R"({"query": "q", "documents": []})", "documents"},
      {R"({"query": "q", "documents": ["a", 5]})", "documents[1]"},
      {R"({"query": "q", "documents": [{"txt": "a"}]})", "documents[0].text"},
      {R"({"query": "q", "documents": [{"text": ["a"]}]})", "documents[0].text"},
      {R"({"query": "q", "documents": ["a"], "top_n": 0})", "top_n"},
      {R"({"query": "q", "documents": ["a"], "top_n": 1.5})", "top_n"},
      {R"({"query": "q", "documents": ["a"], "top_n": "2"})", "top_n"},
      {R"({"query": "q", "documents": ["a"], "return_documents": "yes"})", "return_documents"},
      {R"({"query": "q", "documents": ["a"], "rank_fields": ["title"]})", "rank_fields"},
      {R"({"query": "q", "documents": ["a"], "max_tokens_per_doc": 10})", "max_tokens_per_doc"},
      {R"({"query": "q", "documents": ["a"], "max_chunks_per_doc": 10})", "max_chunks_per_doc"},
  };
  for (const auto& c : cases) {
    RerankRequest r;
    const std::optional<ApiError> e = parse(c.body, r);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_NE(e->message.find(std::string(c.param).substr(0, 9)), std::string::npos) << e->message;
  }
}

TEST(RerankRequest, DocumentCountIsBounded) {
  Json body = {{"query", "q"}, {"documents", Json::array()}};
  for (size_t i = 0; i < limits::kMaxRerankDocuments; ++i) body["documents"].push_back("d");
  RerankRequest ok;
  EXPECT_FALSE(parse_rerank_request(body, ok).has_value());
  body["documents"].push_back("one too many");
  RerankRequest r;
  const std::optional<ApiError> e = parse_rerank_request(body, r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "documents");
  EXPECT_NE(e->message.find(std::to_string(limits::kMaxRerankDocuments)), std::string::npos);
}

TEST(RerankReply, SortedByScoreTiesByIndexCutAtTopN) {
  RerankRequest r;
  r.documents = {"a", "b", "c", "d"};
  const std::vector<float> scores = {0.25f, 0.75f, 0.25f, std::numeric_limits<float>::quiet_NaN()};
  const Json all = rerank_reply(r, scores, "m", 40);
  ASSERT_EQ(all["results"].size(), 4u);
  std::vector<int> order;
  for (const Json& item : all["results"]) order.push_back(item["index"].get<int>());
  EXPECT_EQ(order, (std::vector<int>{1, 0, 2, 3}));
  EXPECT_FLOAT_EQ(all["results"][0]["relevance_score"].get<float>(), 0.75f);
  EXPECT_FALSE(all["results"][0].contains("document"));
  EXPECT_EQ(all["model"], "m");
  EXPECT_EQ(all["object"], "list");
  EXPECT_EQ(all["usage"]["prompt_tokens"], 40);
  EXPECT_EQ(all["usage"]["total_tokens"], 40);

  r.top_n = 2;
  r.return_documents = true;
  const Json top = rerank_reply(r, scores, "m", 40);
  ASSERT_EQ(top["results"].size(), 2u);
  EXPECT_EQ(top["results"][0]["document"]["text"], "b");
  EXPECT_EQ(top["results"][1]["document"]["text"], "a");
  r.top_n = 10;  // more than the documents: all of them
  EXPECT_EQ(rerank_reply(r, scores, "m", 40)["results"].size(), 4u);
}

}  // namespace
}  // namespace minfer::server
