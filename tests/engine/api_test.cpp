// The public API (include/minfer/minfer.h) and the example program built on it: llama.cpp's
// greedy story from stories260K through LanguageModel::generate, the batch generator and the
// example binary; tokenize/detokenize; chat rendering; errors as Status.
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minfer/minfer.h"
#include "test_util.h"

namespace minfer {
namespace {

// llama.cpp's prompt, its ids and its greedy continuation from a golden file.
struct Story {
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> greedy_tokens;
};

Story load_story(const std::string& name) {
  std::ifstream in(test::test_data_path("golden/" + name + ".json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  return {j.at("prompt").get<std::string>(), j.at("prompt_tokens").get<std::vector<int32_t>>(),
          j.at("greedy_tokens").get<std::vector<int32_t>>()};
}

std::unique_ptr<LanguageModel> load_stories() {
  LoadOptions f32;
  f32.cache_type = "f32";  // the goldens are llama.cpp's with an f32 KV cache
  auto model = LanguageModel::load(test::test_data_path("models/stories260K.gguf"), f32);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

GenerateParams greedy(int64_t max_tokens) {
  GenerateParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  return p;
}

TEST(Api, ToolChoiceStringsAreOpenAIs) {
  EXPECT_EQ(tool_choice_from_string("none"), ToolChoice::kNone);
  EXPECT_EQ(tool_choice_from_string("auto"), ToolChoice::kAuto);
  EXPECT_EQ(tool_choice_from_string("required"), ToolChoice::kRequired);
  // A function is named by an object, never by a bare string; case matters as in OpenAI's API.
  EXPECT_EQ(tool_choice_from_string("function"), std::nullopt);
  EXPECT_EQ(tool_choice_from_string("Auto"), std::nullopt);
  EXPECT_EQ(tool_choice_from_string(""), std::nullopt);
}

TEST(Api, GenerateTellsTheGoldenStoryThroughTheCallback) {
  MINFER_REQUIRE_TEST_DATA();
  const Story g = load_story("stories260K.once");
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->architecture(), "llama");
  EXPECT_EQ(model->n_vocab(), 512);
  const std::vector<int32_t> prompt = model->tokenize(g.prompt);
  EXPECT_EQ(prompt, g.prompt_tokens);
  std::string streamed;
  auto reply = model->generate(prompt, greedy(static_cast<int64_t>(g.greedy_tokens.size())),
                               [&](std::string_view text) {
                                 streamed += text;
                                 return true;
                               });
  ASSERT_TRUE(reply.is_ok()) << reply.status().message();
  // The golden's last token may be the end of the story: generation stops there.
  std::vector<int32_t> expected = g.greedy_tokens;
  EXPECT_EQ(reply->tokens,
            std::vector<int32_t>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(
                                                                          reply->tokens.size())));
  EXPECT_EQ(streamed, reply->text);
  auto text = model->detokenize(reply->tokens);
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(*text, reply->text);
  EXPECT_EQ(reply->n_prompt, static_cast<int64_t>(prompt.size()));

  // A second call with the same prompt reuses the cached prefix and gives the same story.
  auto again = model->generate(prompt, greedy(static_cast<int64_t>(g.greedy_tokens.size())));
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->tokens, reply->tokens);
  EXPECT_EQ(again->n_cached, static_cast<int64_t>(prompt.size()) - 1);
}

TEST(Api, CallbackReturningFalseCancels) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  int calls = 0;
  auto reply = model->generate(model->tokenize("Once upon a time"), greedy(40),
                               [&](std::string_view) { return ++calls < 3; });
  ASSERT_TRUE(reply.is_ok());
  EXPECT_EQ(reply->finish_reason, "cancelled");
  EXPECT_EQ(calls, 3);
}

TEST(Api, BatchGeneratorMatchesGenerate) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Ben"};
  std::vector<std::string> alone;
  for (const std::string& p : prompts) {
    auto r = model->generate(model->tokenize(p), greedy(24));
    ASSERT_TRUE(r.is_ok());
    alone.push_back(r->text);
  }
  BatchOptions options;
  options.n_parallel = 2;
  options.n_ctx = 128;
  auto batch = model->batch_generator(options);
  ASSERT_TRUE(batch.is_ok()) << batch.status().message();
  std::vector<std::string> texts(prompts.size());
  std::vector<std::string> finish(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto id =
        (*batch)->submit(model->tokenize(prompts[i]), greedy(24), [&, i](const BatchEvent& e) {
          texts[i] += e.text;
          if (e.done) finish[i] = e.finish_reason;
        });
    ASSERT_TRUE(id.is_ok()) << id.status().message();
  }
  ASSERT_TRUE((*batch)->run_until_idle().is_ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(texts[i], alone[i]) << prompts[i];
    EXPECT_FALSE(finish[i].empty());
  }
  EXPECT_FALSE((*batch)->submit({}, greedy(4), nullptr).is_ok());
}

TEST(Api, ErrorsAreStatuses) {
  MINFER_REQUIRE_TEST_DATA();
  auto missing = LanguageModel::load("/nonexistent/model.gguf");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);
  LoadOptions bad;
  bad.cache_type = "q4_0";
  auto bad_cache = LanguageModel::load(test::test_data_path("models/stories260K.gguf"), bad);
  ASSERT_FALSE(bad_cache.is_ok());
  EXPECT_NE(bad_cache.status().message().find("q4_0"), std::string::npos);
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> out_of_range = {1, 512};
  EXPECT_FALSE(model->detokenize(out_of_range).is_ok());
  EXPECT_FALSE(model->generate(out_of_range, greedy(4)).is_ok());
}

// A forced tool call reads the prompt's end (did it open <think>?) before the request is
// checked: an id outside the vocabulary is still the request's error, not an abort.
TEST(Api, ForcedToolCallWithABadIdIsAnError) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = LanguageModel::load(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  GenerateParams params = greedy(4);
  params.parse_tool_calls = true;
  params.extract_reasoning = true;
  params.tools = R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])";
  params.tool_choice = ToolChoice::kRequired;
  const std::vector<int32_t> bad = {1, static_cast<int32_t>((*model)->n_vocab() + 5)};
  const auto reply = (*model)->generate(bad, params);
  ASSERT_FALSE(reply.is_ok());
  EXPECT_NE(reply.status().message().find("vocab"), std::string::npos) << reply.status().message();
}

TEST(Api, RendersTheModelsChatTemplate) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = LanguageModel::load(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi"}};
  auto text = (*model)->render_chat(messages);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto tokens = (*model)->tokenize_chat(messages);
  ASSERT_TRUE(tokens.is_ok());
  EXPECT_EQ(*tokens, (*model)->tokenize(*text, /*add_special=*/true, /*parse_special=*/true));
}

TEST(Api, CancelFlagAndLogitBiasReachTheLoop) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompt = model->tokenize("Once upon a time");
  // A raised flag ends before the first token.
  std::atomic<bool> cancel{true};
  GenerateParams params = greedy(8);
  params.cancel = &cancel;
  auto cancelled = model->generate(prompt, params);
  ASSERT_TRUE(cancelled.is_ok());
  EXPECT_EQ(cancelled->finish_reason, "cancelled");
  EXPECT_TRUE(cancelled->tokens.empty());
  // Banning the greedy first token makes greedy pick another.
  auto plain = model->generate(prompt, greedy(1));
  ASSERT_TRUE(plain.is_ok());
  ASSERT_EQ(plain->tokens.size(), 1u);
  EXPECT_EQ(plain->finish_reason, "length");
  EXPECT_EQ(plain->finish_text, "token limit (-n) reached");
  EXPECT_NE(plain->metrics.find("generated tokens:    1"), std::string::npos) << plain->metrics;
  GenerateParams banned = greedy(1);
  banned.logit_bias.emplace_back(plain->tokens[0], -INFINITY);
  auto other = model->generate(prompt, banned);
  ASSERT_TRUE(other.is_ok());
  ASSERT_EQ(other->tokens.size(), 1u);
  EXPECT_NE(other->tokens[0], plain->tokens[0]);
  // A stop string is reported.
  GenerateParams stopping = greedy(40);
  stopping.stop = {"Lily"};
  auto stopped = model->generate(prompt, stopping);
  ASSERT_TRUE(stopped.is_ok());
  EXPECT_EQ(stopped->finish_reason, "stop");
  EXPECT_EQ(stopped->stop, "Lily");
  EXPECT_EQ(stopped->text.find("Lily"), std::string::npos);
}

TEST(Api, ChatTurnsShareTheCacheThroughPrefill) {
  MINFER_REQUIRE_TEST_DATA();
  // Qwen2.5's template renders a past turn the same whatever follows it (Qwen3's drops the
  // thinking of earlier turns, so its closed turn is not a prefix of the next prompt).
  auto model = LanguageModel::load(test::test_data_path("models/qwen2.5-qwentok-tiny-q8_0.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_NE((*model)->describe().find("kernels:"), std::string::npos);
  auto chat = (*model)->start_chat("Be brief.");
  ASSERT_TRUE(chat.is_ok()) << chat.status().message();
  (*chat)->add_user("Hi");
  EXPECT_EQ((*chat)->n_turns(), 1);
  auto first = (*chat)->tokens();
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(*first, *(*model)->tokenize_chat({{"system", "Be brief."}, {"user", "Hi"}}));
  auto reply = (*model)->generate(*first, greedy(4));
  ASSERT_TRUE(reply.is_ok()) << reply.status().message();
  (*chat)->add_assistant(reply->text);
  // The finished turn as the template renders it goes into the cache; the next turn's prompt
  // starts with it, so only the new message is computed.
  auto closed = (*chat)->tokens(/*add_generation_prompt=*/false);
  ASSERT_TRUE(closed.is_ok());
  auto prefilled = (*model)->prefill(*closed);
  ASSERT_TRUE(prefilled.is_ok()) << prefilled.status().message();
  EXPECT_EQ(prefilled->n_reused + prefilled->n_prefilled, static_cast<int64_t>(closed->size()));
  (*chat)->add_user("And then?");
  auto second = (*chat)->tokens();
  ASSERT_TRUE(second.is_ok());
  auto next = (*model)->generate(*second, greedy(2));
  ASSERT_TRUE(next.is_ok());
  EXPECT_GE(next->n_cached, static_cast<int64_t>(closed->size()) - 1);
  EXPECT_EQ(next->n_cached + next->n_prefilled, next->n_prompt);
  // Forgetting the sequence: nothing is reused.
  (*model)->clear();
  auto fresh = (*model)->generate(*second, greedy(1));
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_EQ(fresh->n_cached, 0);
  EXPECT_TRUE((*chat)->drop_oldest_turn() || (*chat)->n_turns() == 1);
  EXPECT_TRUE((*chat)->pop_last("user"));
  EXPECT_FALSE((*chat)->pop_last("user"));
}

TEST(Api, BatchRequestsCarryLogprobsJsonAndAHandle) {
  MINFER_REQUIRE_TEST_DATA();
  LoadOptions load;
  load.single_sequence = false;
  auto model =
      LanguageModel::load(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"), load);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  // Without a sequence of its own the model only batches, and says so.
  auto refused = (*model)->generate((*model)->tokenize("Hi"), greedy(2));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("batch generator"), std::string::npos);
  BatchOptions options;
  options.n_parallel = 2;
  options.n_ctx = 256;
  auto batch = (*model)->batch_generator(options);
  ASSERT_TRUE(batch.is_ok()) << batch.status().message();
  EXPECT_EQ((*batch)->n_ctx(), 256);
  EXPECT_EQ((*batch)->n_parallel(), 2);
  EXPECT_GE((*batch)->kv_positions(), 512);

  auto prompt = (*model)->tokenize_chat_request(
      R"({"messages": [{"role": "user", "content": "Give me a JSON object"}]})");
  ASSERT_TRUE(prompt.is_ok()) << prompt.status().message();
  EXPECT_EQ(*prompt, *(*model)->tokenize_chat({{"user", "Give me a JSON object"}}));
  EXPECT_FALSE((*model)->tokenize_chat_request("[1, 2]").is_ok());

  // JSON-constrained with logprobs: the text is one JSON object, every token carries its
  // log-probability and 3 alternatives, and the pieces are the vocabulary's.
  GenerateParams json = greedy(64);
  json.json_object = true;
  json.top_logprobs = 3;
  std::string text;
  std::vector<SampledToken> tokens;
  BatchEvent last;
  auto handle = (*batch)->submit(*prompt, json, [&](const BatchEvent& e) {
    text += e.text;
    tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
    if (e.done) last = e;
  });
  ASSERT_TRUE(handle.is_ok()) << handle.status().message();
  // A second request, cancelled through its handle before it runs.
  auto cancelled = (*batch)->submit(*prompt, greedy(64), [&](const BatchEvent&) {});
  ASSERT_TRUE(cancelled.is_ok());
  (*cancelled)->cancel();
  EXPECT_NE((*cancelled)->id(), (*handle)->id());
  ASSERT_TRUE((*batch)->run_until_idle().is_ok());
  EXPECT_TRUE(last.done);
  EXPECT_TRUE(last.error.empty()) << last.error;
  if (last.finish == FinishReason::kEog) {
    EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  }
  EXPECT_EQ(last.stats.n_prompt, static_cast<int64_t>(prompt->size()));
  ASSERT_FALSE(tokens.empty());
  std::string pieces;
  for (const SampledToken& t : tokens) {
    EXPECT_LE(t.logprob, 0.0f);
    ASSERT_EQ(t.top.size(), 3u);
    // The alternatives are the model's before the constraint: most likely first, and none less
    // likely than what the constraint let through unless it is the sampled one itself.
    EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
    EXPECT_GE(t.top[1].logprob, t.top[2].logprob);
    EXPECT_GE(t.top[0].logprob, t.logprob);
    auto piece = (*model)->token_piece(t.token);
    ASSERT_TRUE(piece.is_ok());
    pieces += *piece;
  }
  EXPECT_EQ(pieces.substr(0, text.size()), text);
  EXPECT_FALSE((*model)->token_piece(static_cast<int32_t>((*model)->n_vocab())).is_ok());
  EXPECT_EQ((*batch)->stats().n_running, 0);
}

TEST(Api, ExampleProgramPrintsTheStory) {
  MINFER_REQUIRE_TEST_DATA();
  const Story g = load_story("stories260K.once");
  auto model = load_stories();
  ASSERT_NE(model, nullptr);
  auto reply = model->generate(model->tokenize(g.prompt), greedy(32));
  ASSERT_TRUE(reply.is_ok());
  const std::string example =
      (std::filesystem::path(test::minfer_binary()).parent_path() / "examples" / "minfer-simple")
          .string();
  const test::CommandResult r =
      test::run_command(example + " -m " + test::test_data_path("models/stories260K.gguf") +
                        " -n 32 'Once upon a time'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, g.prompt + reply->text + "\n");
  const test::CommandResult usage = test::run_command(example);
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_NE(usage.err.find("usage:"), std::string::npos);
}

// examples/step_times.cpp times every chunk of a generation: one gap per token after the first
// (stories260K's pieces are whole characters), summarized, with the slowest steps' positions.
TEST(Api, StepTimesExampleTimesEveryToken) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string example = (std::filesystem::path(test::minfer_binary()).parent_path() /
                               "examples" / "minfer-step-times")
                                  .string();
  const test::CommandResult r = test::run_command(
      example + " -m " + test::test_data_path("models/stories260K.gguf") + " -n 24");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("24 tokens, 23 gaps between chunks: median ", 0), 0u) << r.out;
  const size_t slowest = r.out.find("\nslowest: ");
  ASSERT_NE(slowest, std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin() + static_cast<std::ptrdiff_t>(slowest), r.out.end(), ','), 7)
      << r.out;  // the 8 slowest steps
  const test::CommandResult usage = test::run_command(example + " -m x.gguf");  // no -n
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_NE(usage.err.find("usage:"), std::string::npos);
}

}  // namespace
}  // namespace minfer
