// summarize_gguf on files written here: hyperparameters, head_dim rules, absent keys, tensor
// counts, and errors for keys of the wrong type.
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_summary.h"
#include "gguf/gguf_writer.h"

namespace minfer {
namespace {

Result<GgufSummary> summarize(const GgufWriter& writer, std::unique_ptr<GgufFile>& keep,
                              std::vector<uint8_t>& image) {
  image = *writer.serialize();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::parse(image, "s.gguf");
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return file.status();
  keep = std::move(file).value();
  return summarize_gguf(*keep);
}

GgufWriter llama_like() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "tiny");
  w.set_scalar<uint32_t>("llama.embedding_length", 96);
  w.set_scalar<uint32_t>("llama.block_count", 2);
  w.set_scalar<uint32_t>("llama.attention.head_count", 6);
  w.set_scalar<uint32_t>("llama.attention.head_count_kv", 2);
  w.set_scalar<uint32_t>("llama.feed_forward_length", 256);
  w.set_scalar<uint64_t>("llama.context_length", 8192);
  w.set_scalar<float>("llama.rope.freq_base", 500000.0f);
  w.set_string("llama.rope.scaling.type", "yarn");
  w.set_scalar<float>("llama.rope.scaling.factor", 4.0f);
  w.set_scalar<uint32_t>("llama.rope.scaling.original_context_length", 2048);
  w.set_scalar<float>("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b", "c", "d", "e"}));
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "llama-bpe");
  w.set_string("tokenizer.chat_template", "{{ messages }}");
  return w;
}

TEST(GgufSummary, ReadsHyperparametersTokenizerAndTensorTotals) {
  GgufWriter w = llama_like();
  ASSERT_TRUE(
      w.add_tensor("t0", GgmlType::kF32, {96, 2}, std::vector<uint8_t>(96 * 2 * 4)).is_ok());
  ASSERT_TRUE(
      w.add_tensor("t1", GgmlType::kQ8_0, {64, 3}, std::vector<uint8_t>(2 * 34 * 3)).is_ok());
  ASSERT_TRUE(w.add_tensor("t2", GgmlType::kF32, {5}, std::vector<uint8_t>(20)).is_ok());
  ASSERT_TRUE(w.add_tensor("t3", GgmlType::kQ4_K, {256}, std::vector<uint8_t>(144)).is_ok());
  std::unique_ptr<GgufFile> file;
  std::vector<uint8_t> image;
  Result<GgufSummary> r = summarize(w, file, image);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const GgufSummary& s = *r;
  EXPECT_EQ(s.architecture, "llama");
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.n_embd, 96);
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(s.n_head, 6);
  EXPECT_EQ(s.n_head_kv, 2);
  EXPECT_EQ(s.head_dim, 16);  // n_embd / n_head: no attention.key_length
  EXPECT_FALSE(s.head_dim_from_key);
  EXPECT_EQ(s.n_ff, 256);
  EXPECT_EQ(s.n_ctx_train, 8192);
  EXPECT_EQ(s.rope_freq_base, 500000.0);
  EXPECT_EQ(s.rope_scaling.type, "yarn");
  EXPECT_EQ(s.rope_scaling.factor, 4.0);
  EXPECT_EQ(s.rope_scaling.original_context_length, 2048);
  EXPECT_FALSE(s.rope_scaling.attn_factor.has_value());
  EXPECT_EQ(s.rms_eps, static_cast<double>(1e-5f));
  EXPECT_EQ(s.n_vocab, 5);
  EXPECT_EQ(s.tokenizer_model, "gpt2");
  EXPECT_EQ(s.tokenizer_pre, "llama-bpe");
  EXPECT_TRUE(s.has_chat_template);
  EXPECT_EQ(s.chat_template_length, 14);
  EXPECT_EQ(s.n_tensors, 4u);
  EXPECT_EQ(s.n_params, 96u * 2 + 64 * 3 + 5 + 256);
  EXPECT_EQ(s.n_tensor_bytes, 96u * 2 * 4 + 2 * 34 * 3 + 20 + 144);
  ASSERT_EQ(s.by_type.size(), 3u);  // in type-id order: f32 (0), q8_0 (8), q4_K (12)
  EXPECT_EQ(s.by_type[0].type, GgmlType::kF32);
  EXPECT_EQ(s.by_type[0].n_tensors, 2u);
  EXPECT_EQ(s.by_type[0].n_elements, 96u * 2 + 5);
  EXPECT_EQ(s.by_type[1].type, GgmlType::kQ8_0);
  EXPECT_EQ(s.by_type[1].n_bytes, 2u * 34 * 3);
  EXPECT_EQ(s.by_type[2].type, GgmlType::kQ4_K);
  EXPECT_EQ(s.by_type[2].n_tensors, 1u);
  EXPECT_EQ(s.file_size, image.size());
  EXPECT_EQ(s.version, 3u);
}

TEST(GgufSummary, KeyLengthGivesHeadDim) {
  GgufWriter w = llama_like();
  w.set_scalar<uint32_t>("llama.attention.key_length", 128);
  std::unique_ptr<GgufFile> file;
  std::vector<uint8_t> image;
  Result<GgufSummary> r = summarize(w, file, image);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->head_dim, 128);
  EXPECT_TRUE(r->head_dim_from_key);
}

TEST(GgufSummary, AbsentKeysStayAbsent) {
  GgufWriter empty;
  std::unique_ptr<GgufFile> file;
  std::vector<uint8_t> image;
  Result<GgufSummary> r = summarize(empty, file, image);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FALSE(r->architecture.has_value());
  EXPECT_FALSE(r->n_embd.has_value());
  EXPECT_FALSE(r->head_dim.has_value());
  EXPECT_FALSE(r->n_vocab.has_value());
  EXPECT_FALSE(r->has_chat_template);
  EXPECT_EQ(r->n_tensors, 0u);
  EXPECT_TRUE(r->by_type.empty());

  GgufWriter no_heads;  // n_embd without n_head: head_dim cannot be derived
  no_heads.set_string("general.architecture", "x");
  no_heads.set_scalar<uint32_t>("x.embedding_length", 64);
  no_heads.set_scalar<uint32_t>("x.attention.head_count", 0);
  r = summarize(no_heads, file, image);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->n_embd, 64);
  EXPECT_FALSE(r->head_dim.has_value());
}

struct WrongKey {
  std::string key;
  GgufValue value;
  std::vector<std::string> fragments;
};

TEST(GgufSummary, WrongTypesAndNegativeCountsAreErrors) {
  const std::vector<WrongKey> cases = {
      {"llama.embedding_length",
       GgufValue::string("256"),
       {"key 'llama.embedding_length' holds string, expected an integer"}},
      {"llama.rope.freq_base",
       GgufValue::scalar<uint32_t>(10000),
       {"key 'llama.rope.freq_base' holds uint32, expected float32 or float64"}},
      {"llama.block_count",
       GgufValue::scalar<int32_t>(-3),
       {"key 'llama.block_count' is -3, expected a non-negative integer"}},
      {"tokenizer.ggml.tokens",
       GgufValue::array<int32_t>({1, 2}),
       {"key 'tokenizer.ggml.tokens' holds array of int32, expected array of string"}},
      {"tokenizer.chat_template",
       GgufValue::scalar<bool>(true),
       {"key 'tokenizer.chat_template' holds bool, expected string"}},
      {"general.architecture",
       GgufValue::scalar<uint8_t>(1),
       {"key 'general.architecture' holds uint8, expected string"}},
  };
  for (const WrongKey& c : cases) {
    SCOPED_TRACE(c.key);
    GgufWriter w = llama_like();
    w.set(c.key, c.value);
    std::unique_ptr<GgufFile> file;
    std::vector<uint8_t> image;
    Result<GgufSummary> r = summarize(w, file, image);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message().rfind("[gguf] 's.gguf': ", 0), 0u) << r.status().message();
    for (const std::string& f : c.fragments) {
      EXPECT_NE(r.status().message().find(f), std::string::npos) << r.status().message();
    }
  }
}

// Gemma 4's files give head_count_kv and feed_forward_length per layer (arrays, as llama.cpp
// reads them): the summary holds the largest and each layer's; an empty or negative array is
// named.
TEST(GgufSummary, CountsGivenPerLayerKeepTheLargestAndEachLayers) {
  GgufWriter w = llama_like();
  w.set("llama.attention.head_count_kv", GgufValue::array<int32_t>({2, 1}));
  w.set("llama.feed_forward_length", GgufValue::array<uint32_t>({128, 256}));
  std::unique_ptr<GgufFile> file;
  std::vector<uint8_t> image;
  Result<GgufSummary> r = summarize(w, file, image);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->n_head_kv, 2);
  EXPECT_EQ(r->n_ff, 256);
  EXPECT_EQ(r->n_head, 6);
  const std::map<std::string, std::vector<int64_t>> expected = {{"n_head_kv", {2, 1}},
                                                                {"n_ff", {128, 256}}};
  EXPECT_EQ(r->per_layer, expected);
  for (const GgufValue& bad : {GgufValue::array<int32_t>({}), GgufValue::array<int32_t>({2, -1})}) {
    GgufWriter b = llama_like();
    b.set("llama.attention.head_count", bad);
    std::unique_ptr<GgufFile> f;
    std::vector<uint8_t> img;
    Result<GgufSummary> e = summarize(b, f, img);
    ASSERT_FALSE(e.is_ok());
    EXPECT_NE(e.status().message().find("key 'llama.attention.head_count' holds"),
              std::string::npos)
        << e.status().message();
    EXPECT_NE(e.status().message().find("or a non-empty array of them (one per layer)"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace minfer
