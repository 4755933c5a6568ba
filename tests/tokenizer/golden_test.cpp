// Token ids against llama.cpp's: the shared corpora (corpus.<vocab>.jsonl), llama.cpp's own test
// vectors (ggml-vocab-*.gguf.inp/.out) and the prompts of the model goldens. Every mismatch is
// reported, not just the first.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer_test_util.h"

namespace minfer::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_jsonl(const std::string& path) {
  std::vector<Case> cases;
  std::istringstream lines(read_text(path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>()});
  }
  return cases;
}

// llama.cpp's test-tokenizer-0 layout: texts separated by "\n__ggml_vocab_test__\n" in .inp, one
// line of space-separated ids per text in .out.
std::vector<Case> read_vocab_test(const std::string& base) {
  const std::string raw = read_text(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(raw.substr(pos));
      break;
    }
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<Case> cases;
  std::istringstream out(read_text(base + ".out"));
  size_t i = 0;
  for (std::string line; std::getline(out, line); ++i) {
    EXPECT_LT(i, texts.size()) << base << ": more output lines than texts";
    if (i >= texts.size()) break;
    Case c{texts[i], {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << base << ": texts and output lines differ in number";
  return cases;
}

// Encodes every case and reports each mismatch; returns how many matched.
size_t check_cases(const Tokenizer& tok, const std::vector<Case>& cases, bool add_special,
                   bool parse_special, const std::string& what) {
  size_t ok = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tok.encode(cases[i].text, add_special, parse_special);
    if (got == cases[i].ids) {
      ++ok;
    } else {
      ADD_FAILURE() << what << " case " << i << " '" << printable(cases[i].text) << "'\n  expected "
                    << ids_to_string(cases[i].ids) << "\n  got      " << ids_to_string(got);
    }
  }
  return ok;
}

struct CorpusParam {
  const char* corpus;  // under golden/tokenizer/
  const char* model;   // under the shared test data
  bool parse_special;
};

class CorpusTest : public ::testing::TestWithParam<CorpusParam> {};

TEST_P(CorpusTest, MatchesLlamaCppIds) {
  MINFER_REQUIRE_TEST_DATA();
  const CorpusParam& p = GetParam();
  const Tokenizer* tok = shared_tokenizer(p.model);
  ASSERT_NE(tok, nullptr);
  const auto cases = read_jsonl(test_data_path(std::string("golden/tokenizer/") + p.corpus));
  ASSERT_GE(cases.size(), 50u);
  EXPECT_EQ(check_cases(*tok, cases, false, p.parse_special, p.corpus), cases.size());
}

INSTANTIATE_TEST_SUITE_P(
    Corpora, CorpusTest,
    ::testing::Values(
        CorpusParam{"corpus.qwen3.jsonl", "models/qwen3-vocab.gguf", false},
        CorpusParam{"corpus.qwen3.special.jsonl", "models/qwen3-vocab.gguf", true},
        CorpusParam{"corpus.stories260K.jsonl", "models/stories260K.gguf", false},
        CorpusParam{"corpus.llama-tiny.jsonl", "models/llama-tiny-f32.gguf", false},
        CorpusParam{"corpus.qwen2-tiny.jsonl", "models/qwen2-tiny-f32.gguf", false},
        CorpusParam{"corpus.llama3.jsonl", "models/llama3-llamatok-tiny-q8_0.gguf", false},
        CorpusParam{"corpus.llama3.special.jsonl", "models/llama3-llamatok-tiny-q8_0.gguf", true}),
    [](const ::testing::TestParamInfo<CorpusParam>& param_info) {
      std::string name = param_info.param.corpus;
      name = name.substr(7, name.size() - 7 - 6);  // between "corpus." and ".jsonl"
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(LlamaCppVectors, Qwen2VectorsWithQwen3Vocab) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/qwen3-vocab.gguf");
  ASSERT_NE(tok, nullptr);
  const auto cases = read_vocab_test(test_data_path("golden/tokenizer/ggml-vocab-qwen2.gguf"));
  ASSERT_GE(cases.size(), 40u);
  // test-tokenizer-0 tokenizes with add_special = false, parse_special = false.
  EXPECT_EQ(check_cases(*tok, cases, false, false, "ggml-vocab-qwen2"), cases.size());
}

TEST(LlamaCppVectors, LlamaSpmVectors) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("golden/tokenizer/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), TokenizerKind::kSpm);
  const auto cases = read_vocab_test(test_data_path("golden/tokenizer/ggml-vocab-llama-spm.gguf"));
  ASSERT_GE(cases.size(), 40u);
  // No BOS, but the SPM space prefix still applies (it is not tied to add_special).
  EXPECT_EQ(check_cases(*tok, cases, false, false, "ggml-vocab-llama-spm"), cases.size());
}

// The prompts of the golden files in folder (under golden/) whose names start with prefix:
// each one's prompt tokens; returns how many files had a prompt.
size_t check_golden_prompts(const std::string& folder, const std::string& prefix) {
  size_t n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test_data_path(folder))) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json") continue;
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    const auto j = nlohmann::json::parse(read_text(path));
    if (!j.contains("prompt") || !j.contains("prompt_tokens") || !j.contains("model")) continue;
    ++n_files;
    const Tokenizer* tok = shared_tokenizer("models/" + j.at("model").get<std::string>());
    EXPECT_NE(tok, nullptr) << path;
    if (tok == nullptr) continue;
    // Chat goldens hold rendered templates: their special tokens must be parsed.
    const bool chat = path.find(".chat.") != std::string::npos;
    const auto expected = j.at("prompt_tokens").get<std::vector<int32_t>>();
    const auto got = tok->encode(j.at("prompt").get<std::string>(), true, chat);
    EXPECT_EQ(got, expected) << path << "\n  expected " << ids_to_string(expected)
                             << "\n  got      " << ids_to_string(got);
  }
  return n_files;
}

TEST(GoldenPrompts, PromptTokensMatch) {
  MINFER_REQUIRE_TEST_DATA();
  EXPECT_GE(check_golden_prompts("golden", ""), 20u);
}

// gpt-oss's prompts (golden/arch/gptoss*): the gpt-4o pre-tokenizer.
TEST(GoldenPrompts, GptOssPromptTokensMatch) {
  MINFER_REQUIRE_TEST_DATA();
  EXPECT_EQ(check_golden_prompts("golden/arch", "gptoss"), 3u);
}

// Gemma 4's tokenizer (tokenizer.ggml.model gemma4: BPE on raw UTF-8, spaces as ▁, newline runs
// apart, a forced BOS) against llama.cpp's prompt ids in the gemma4 goldens of golden/arch, and
// back to the prompt's text.
TEST(GoldenPrompts, Gemma4PromptTokensMatch) {
  MINFER_REQUIRE_TEST_DATA();
  size_t n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test_data_path("golden/arch"))) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("gemma4") || entry.path().extension() != ".json") continue;
    ++n_files;
    const auto j = nlohmann::json::parse(read_text(entry.path().string()));
    const Tokenizer* tok = shared_tokenizer("models/" + j.at("model").get<std::string>());
    ASSERT_NE(tok, nullptr) << name;
    const auto expected = j.at("prompt_tokens").get<std::vector<int32_t>>();
    const std::string prompt = j.at("prompt").get<std::string>();
    const auto got = tok->encode(prompt, true, false);
    EXPECT_EQ(got, expected) << name << "\n  expected " << ids_to_string(expected)
                             << "\n  got      " << ids_to_string(got);
    EXPECT_EQ(tok->decode(got, false), prompt) << name;
  }
  EXPECT_EQ(n_files, 6u);
}

// A character the Gemma 4 vocabulary lacks (€, U+20AC) falls back to its UTF-8 bytes' <0xXX>
// tokens, which decode back to it; spaces are ▁ inside tokens and come back as spaces.
TEST(Gemma4Tokenizer, UnknownCharacterFallsBackToByteTokens) {
  MINFER_REQUIRE_TEST_DATA();
  const Tokenizer* tok = shared_tokenizer("models/gemma4-tiny-f32.gguf");
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> ids = tok->encode("a \xe2\x82\xac b", false, false);
  std::vector<std::string> texts;
  for (const int32_t id : ids) texts.push_back(tok->token_text(id));
  const std::vector<std::string> bytes = {"<0xE2>", "<0x82>", "<0xAC>"};
  EXPECT_NE(std::search(texts.begin(), texts.end(), bytes.begin(), bytes.end()), texts.end())
      << ids_to_string(ids);
  EXPECT_EQ(tok->decode(ids, false), "a \xe2\x82\xac b");
  // The BOS is always added (llama.cpp forces it for gemma4).
  EXPECT_EQ(tok->encode("a", true, false).front(), tok->bos_id());
}

}  // namespace
}  // namespace minfer::test
