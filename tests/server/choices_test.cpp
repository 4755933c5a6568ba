// The request fields of n > 1 and the length limit's names, and the usage of joined choices: the
// prompt counted once, the generation summed, each choice's cached prompt tokens.
#include <gtest/gtest.h>

#include <string>

#include "server/choices.h"
#include "server/openai_api.h"

namespace minfer::server {
namespace {

std::optional<ApiError> parse(const std::string& extra, ParsedRequest& out) {
  const Json body =
      Json::parse(R"({"messages": [{"role": "user", "content": "hi"}])" + extra + "}");
  return parse_request(body, Endpoint::kChat, 1000, out);
}

TEST(ChoicesRequest, NIsOneByDefaultAndUpToSixteen) {
  ParsedRequest p;
  ASSERT_FALSE(parse("", p).has_value());
  EXPECT_EQ(p.n, 1);
  ASSERT_FALSE(parse(R"(, "n": 16)", p).has_value());
  EXPECT_EQ(p.n, kMaxChoices);
  for (const char* bad : {R"(, "n": 0)", R"(, "n": 17)", R"(, "n": "3")"}) {
    ParsedRequest q;
    std::optional<ApiError> e = parse(bad, q);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, "n");
  }
  ParsedRequest pinned;
  std::optional<ApiError> e = parse(R"(, "n": 2, "id_slot": 1)", pinned);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "n");
}

TEST(ChoicesRequest, MaxCompletionTokensIsMaxTokensNewerName) {
  ParsedRequest p;
  ASSERT_FALSE(parse(R"(, "max_completion_tokens": 7)", p).has_value());
  EXPECT_EQ(p.params.max_tokens, 7);
  ASSERT_FALSE(parse(R"(, "max_tokens": 5, "max_completion_tokens": 5)", p).has_value());
  EXPECT_EQ(p.params.max_tokens, 5);
  ParsedRequest q;
  std::optional<ApiError> e = parse(R"(, "max_tokens": 5, "max_completion_tokens": 6)", q);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "max_completion_tokens");
  EXPECT_NE(e->message.find("'max_tokens' (5)"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("'max_completion_tokens' (6)"), std::string::npos) << e->message;
}

TEST(ChoiceJoin, UsageCountsThePromptOnce) {
  ChoiceJoin join;
  join.total.n_prompt = 40;
  join.total.n_cached = 0;
  join.total.n_generated = 36;
  join.cached = {0, 32, 32};
  const Json u = join.usage();
  EXPECT_EQ(u["prompt_tokens"], 40);
  EXPECT_EQ(u["completion_tokens"], 36);
  EXPECT_EQ(u["total_tokens"], 76);
  EXPECT_EQ(u["choice_cached_tokens"], Json::array({0, 32, 32}));
}

}  // namespace
}  // namespace minfer::server
