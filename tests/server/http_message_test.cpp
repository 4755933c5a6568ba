// The server's HTTP messages: header names without case, query fields decoded, replies that
// stream.
#include "server/http_message.h"

#include <gtest/gtest.h>

namespace minfer::server {
namespace {

TEST(HttpMessage, HeaderNamesCompareWithoutCase) {
  HttpRequest req;
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace("x-api-key", "k");
  EXPECT_EQ(req.get_header_value("content-type"), "application/json");
  EXPECT_EQ(req.get_header_value("X-API-KEY"), "k");
  EXPECT_TRUE(req.has_header("CONTENT-TYPE"));
  EXPECT_EQ(req.get_header_value("Origin"), "");
  EXPECT_FALSE(req.has_header("Origin"));
}

TEST(HttpMessage, QueryFieldsArePercentDecoded) {
  const auto q = parse_query("action=save&model=a%2Fb+c&flag&&bad=%zz%4&x=%41");
  EXPECT_EQ(q.find("action")->second, "save");
  EXPECT_EQ(q.find("model")->second, "a/b c");
  EXPECT_EQ(q.find("flag")->second, "");
  EXPECT_EQ(q.find("bad")->second, "%zz%4");  // malformed escapes stay as written
  EXPECT_EQ(q.find("x")->second, "A");
  EXPECT_EQ(q.size(), 5u);
  HttpRequest req;
  req.params = q;
  EXPECT_TRUE(req.has_param("model"));
  EXPECT_EQ(req.get_param_value("missing"), "");
}

TEST(HttpMessage, SetContentReplacesTheTypeAndAStreamKeepsItsProducer) {
  HttpResponse res;
  res.set_content("a", "text/plain");
  res.set_content("{}", "application/json");
  EXPECT_EQ(res.headers.count("content-type"), 1u);
  EXPECT_EQ(res.headers.find("Content-Type")->second, "application/json");
  EXPECT_EQ(res.body, "{}");
  bool ended = false;
  res.set_chunked_content_provider(
      "text/event-stream", [](ChunkSink&) { return false; }, [&] { ended = true; });
  EXPECT_EQ(res.headers.find("Content-Type")->second, "text/event-stream");
  ASSERT_TRUE(res.stream);
  res.stream_ended();
  EXPECT_TRUE(ended);
}

}  // namespace
}  // namespace minfer::server
