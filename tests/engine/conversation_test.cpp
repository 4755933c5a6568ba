// The chat conversation: the model's template renders the turns, the oldest turn goes first
// (the system message stays), and a chat prompt gets one BOS.
#include "engine/conversation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/setup.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

TEST(Conversation, RendersTheModelTemplateAndDropsTheOldestTurnKeepingTheSystem) {
  MINFER_REQUIRE_TEST_DATA();
  ModelOptions options;
  options.path = test::test_data_path("models/qwen2.5-qwentok-tiny-q8_0.gguf");
  options.n_ctx = 256;
  options.n_threads = 1;
  auto loaded = load_for_generation(options);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  auto tmpl = load_chat_template(loaded->model->file());
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  Conversation c(*tmpl, *loaded->tokenizer, "Be brief.");
  c.add_user("one");
  c.add_assistant("first");
  c.add_user("two");
  auto text = c.render(true);
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\none<|im_end|>\n"
            "<|im_start|>assistant\nfirst<|im_end|>\n<|im_start|>user\ntwo<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto ids = c.tokens(true);
  ASSERT_TRUE(ids.is_ok());
  EXPECT_EQ(ids->front(), loaded->tokenizer->find_token("<|im_start|>"));
  EXPECT_EQ(c.n_turns(), 2);
  ASSERT_TRUE(c.drop_oldest_turn());
  EXPECT_EQ(c.n_turns(), 1);
  EXPECT_EQ(c.messages().size(), 2u);
  EXPECT_EQ(c.messages()[0]["role"], "system");
  EXPECT_EQ(c.messages()[1]["content"], "two");
  EXPECT_FALSE(c.drop_oldest_turn());  // the latest message always stays
  EXPECT_FALSE(c.pop_last("assistant"));
  EXPECT_TRUE(c.pop_last("user"));
  EXPECT_FALSE(c.pop_last("system"));  // the system message is not a turn
}

TEST(Conversation, ChatPromptsGetOneBosWhenTheModelAddsIt) {
  MINFER_REQUIRE_TEST_DATA();
  ModelOptions options;
  options.path = test::test_data_path("models/stories260K.gguf");
  options.n_ctx = 64;
  auto loaded = load_for_generation(options);
  ASSERT_TRUE(loaded.is_ok());
  const Tokenizer& tok = *loaded->tokenizer;
  ASSERT_TRUE(tok.add_bos());
  const std::vector<int32_t> plain = tokenize_chat_prompt(tok, "Hello");
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.front(), tok.bos_id());
  const std::vector<int32_t> with_bos =
      tokenize_chat_prompt(tok, tok.token_text(tok.bos_id()) + "Hello");
  EXPECT_EQ(with_bos, plain);
}

}  // namespace
}  // namespace minfer::engine
