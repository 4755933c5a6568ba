// minfer make-model: loadable files with the real models' shapes and metadata, deterministic
// weights, finite and non-degenerate logits, and quantized files whose logits stay within each
// type's usual error of the f32 file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "models/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tools/model_maker.h"
#include "tools/presets.h"
#include "tools/quantize_model.h"
#include "tools_test_util.h"

namespace minfer {
namespace {

using test::TempDir;

MakeModelOptions tiny(const std::string& arch, const std::string& type, const std::string& out) {
  MakeModelOptions o;
  o.arch = arch;
  o.preset = "tiny";
  o.type = type;
  o.output = out;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  return o;
}

// A prompt of valid ids spread over the vocabulary.
std::vector<int32_t> prompt_ids(int64_t n_vocab, int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 97 + 13) % n_vocab));
  return ids;
}

class MakeModelArchTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MakeModelArchTest, TinyLoadsAndGivesFiniteSpreadLogits) {
  const std::string arch = GetParam();
  TempDir dir;
  const MakeModelOptions o = tiny(arch, "f32", dir.file("m.gguf"));
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto model = Model::load(o.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  const ModelPreset p = *find_preset(arch, "tiny");
  EXPECT_EQ(c.arch, arch);
  EXPECT_EQ(c.n_embd, p.n_embd);
  EXPECT_EQ(c.n_layer, p.n_layer);
  EXPECT_EQ(c.n_head, p.n_head);
  EXPECT_EQ(c.n_head_kv, p.n_head_kv);
  EXPECT_EQ(c.head_dim, p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head);
  EXPECT_EQ(c.n_ff, p.n_ff);
  EXPECT_EQ(c.n_vocab, report->n_vocab);
  EXPECT_FALSE(c.tied_output);

  int64_t n_vocab = 0;
  const std::vector<float> logits =
      test::model_logits(o.output, prompt_ids(c.n_vocab, 16), &n_vocab);
  ASSERT_EQ(logits.size(), static_cast<size_t>(16 * n_vocab));
  double sum = 0.0, sum_sq = 0.0;
  for (float l : logits) {
    ASSERT_TRUE(std::isfinite(l));
    sum += l;
    sum_sq += static_cast<double>(l) * l;
  }
  const double mean = sum / static_cast<double>(logits.size());
  const double stddev = std::sqrt(sum_sq / static_cast<double>(logits.size()) - mean * mean);
  // Logits ≈ embedding (std 0.02) · normed state (rms 1) summed over n_embd = 256: std ≈ 0.3.
  // Far from 0 (a dead model) and far from exploding (a residual stream out of range).
  EXPECT_GT(stddev, 0.1);
  EXPECT_LT(stddev, 3.0);
  // Different positions give different distributions (attention and RoPE do something).
  EXPECT_NE(std::memcmp(&logits[0], &logits[static_cast<size_t>(n_vocab)], sizeof(float) * 8), 0);
}

INSTANTIATE_TEST_SUITE_P(Archs, MakeModelArchTest,
                         ::testing::Values("qwen2", "qwen3", "llama", "gemma3"));

// Gemma 3 1B (google/gemma-3-1b-it config.json: 1152 / 26 layers / 4 heads / 1 KV head /
// head_dim 256 / 6912, sliding window 512 with every 6th layer global, rope bases 1e6 and 1e4,
// 262,144 tokens, tied output), checked without writing its weights; the tiny Gemma 3 reads
// back its window.
TEST(MakeModel, Gemma3PresetsHaveTheRealShapesAndWindow) {
  MakeModelOptions o;
  o.arch = "gemma3";
  o.preset = "gemma-3-1b";
  auto layout = make_model_layout(o);
  ASSERT_TRUE(layout.is_ok()) << layout.status().message();
  std::map<std::string, std::vector<uint64_t>> shapes;
  for (const auto& t : layout->tensors) shapes[t.name] = t.shape;
  // token_embd, output_norm, then 13 per layer (9 + q/k norms + 2 post norms).
  EXPECT_EQ(layout->tensors.size(), 2u + 13u * 26u);
  EXPECT_EQ(shapes.count("output.weight"), 0u);
  EXPECT_EQ(shapes["blk.25.attn_q.weight"], (std::vector<uint64_t>{1152, 1024}));
  EXPECT_EQ(shapes["blk.25.attn_k.weight"], (std::vector<uint64_t>{1152, 256}));
  EXPECT_EQ(shapes["blk.25.attn_output.weight"], (std::vector<uint64_t>{1024, 1152}));
  EXPECT_EQ(shapes["blk.25.ffn_gate.weight"], (std::vector<uint64_t>{1152, 6912}));
  EXPECT_EQ(shapes["blk.25.attn_q_norm.weight"], (std::vector<uint64_t>{256}));
  EXPECT_EQ(shapes["blk.25.post_ffw_norm.weight"], (std::vector<uint64_t>{1152}));
  const ModelPreset p = *find_preset("gemma3", "gemma-3-1b");
  EXPECT_EQ(p.n_vocab_real, 262144);
  EXPECT_EQ(p.n_ctx_train, 32768);
  const SlidingWindowPreset w = preset_sliding_window(p);
  EXPECT_EQ(w.window, 512);
  EXPECT_EQ(w.pattern, 6);
  EXPECT_EQ(w.rope_freq_base_swa, 1e4f);
  EXPECT_FALSE(find_preset("llama", "gemma-3-1b").is_ok());

  TempDir dir;
  const MakeModelOptions t = tiny("gemma3", "q8_0", dir.file("g.gguf"));
  ASSERT_TRUE(make_model(t).is_ok());
  auto model = Model::load(t.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_swa, 8);
  EXPECT_EQ(c.swa_layers, (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_EQ(c.rope_freq_base_swa, 1e4f);
}

TEST(MakeModel, SameSeedSameBytesOtherSeedOtherBytes) {
  TempDir dir;
  MakeModelOptions o = tiny("qwen2", "q8_0", dir.file("a.gguf"));
  ASSERT_TRUE(make_model(o).is_ok());
  o.output = dir.file("b.gguf");
  o.n_threads = 1;  // the bytes do not depend on the thread count either
  ASSERT_TRUE(make_model(o).is_ok());
  o.output = dir.file("c.gguf");
  o.seed = 43;
  ASSERT_TRUE(make_model(o).is_ok());
  const auto a = test::read_file_bytes(dir.file("a.gguf"));
  const auto b = test::read_file_bytes(dir.file("b.gguf"));
  const auto c = test::read_file_bytes(dir.file("c.gguf"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), c.size());  // same layout, other weights
  EXPECT_NE(a, c);
}

// The shapes and metadata of the real models, checked without writing their weights.
struct RealShape {
  const char* arch;
  const char* preset;
  int64_t n_embd, n_layer, q_width, kv_width, n_ff, head_dim;
  bool qk_norm, qkv_bias;
  bool rope_freqs = false;  // Llama 3's rope_freqs.weight [head_dim / 2]
};

class MakeModelRealShapeTest : public ::testing::TestWithParam<RealShape> {};

TEST_P(MakeModelRealShapeTest, TensorsHaveTheRealShapes) {
  const RealShape s = GetParam();
  for (const char* type : {"f32", "q8_0"}) {
    MakeModelOptions o;
    o.arch = s.arch;
    o.preset = s.preset;
    o.type = type;
    auto layout = make_model_layout(o);
    ASSERT_TRUE(layout.is_ok()) << layout.status().message();
    std::map<std::string, std::vector<uint64_t>> shapes;
    std::map<std::string, GgmlType> types;
    for (const auto& t : layout->tensors) {
      shapes[t.name] = t.shape;
      types[t.name] = t.type;
    }
    const uint64_t e = static_cast<uint64_t>(s.n_embd);
    const uint64_t v = static_cast<uint64_t>(layout->n_vocab);
    const size_t per_layer = 9 + (s.qkv_bias ? 3 : 0) + (s.qk_norm ? 2 : 0);
    const size_t n_global = 2 + (s.rope_freqs ? 1 : 0);
    EXPECT_EQ(layout->tensors.size(), n_global + per_layer * static_cast<size_t>(s.n_layer));
    EXPECT_EQ(shapes.count("rope_freqs.weight"), s.rope_freqs ? 1u : 0u);
    if (s.rope_freqs) {
      EXPECT_EQ(shapes["rope_freqs.weight"], (std::vector<uint64_t>{uint64_t(s.head_dim / 2)}));
      EXPECT_EQ(types["rope_freqs.weight"], GgmlType::kF32);  // never quantized
    }
    EXPECT_EQ(shapes.count("output.weight"), 0u) << "the real model ties its output";
    EXPECT_EQ(shapes["token_embd.weight"], (std::vector<uint64_t>{e, v}));
    const std::string last = "blk." + std::to_string(s.n_layer - 1) + ".";
    EXPECT_EQ(shapes[last + "attn_q.weight"], (std::vector<uint64_t>{e, uint64_t(s.q_width)}));
    EXPECT_EQ(shapes[last + "attn_k.weight"], (std::vector<uint64_t>{e, uint64_t(s.kv_width)}));
    EXPECT_EQ(shapes[last + "attn_v.weight"], (std::vector<uint64_t>{e, uint64_t(s.kv_width)}));
    EXPECT_EQ(shapes[last + "attn_output.weight"], (std::vector<uint64_t>{uint64_t(s.q_width), e}));
    EXPECT_EQ(shapes[last + "ffn_gate.weight"], (std::vector<uint64_t>{e, uint64_t(s.n_ff)}));
    EXPECT_EQ(shapes[last + "ffn_down.weight"], (std::vector<uint64_t>{uint64_t(s.n_ff), e}));
    EXPECT_EQ(shapes.count(last + "attn_q.bias"), s.qkv_bias ? 1u : 0u);
    if (s.qk_norm) {
      EXPECT_EQ(shapes[last + "attn_k_norm.weight"], (std::vector<uint64_t>{uint64_t(s.head_dim)}));
    }
    const GgmlType want = std::string(type) == "f32" ? GgmlType::kF32 : GgmlType::kQ8_0;
    EXPECT_EQ(types[last + "ffn_up.weight"], want);
    EXPECT_EQ(types["token_embd.weight"], want);
    EXPECT_EQ(types[last + "attn_norm.weight"], GgmlType::kF32);
  }
}

// Hugging Face config.json values: Qwen2.5-0.5B 896/24/14 heads/2 KV/4864, Qwen2.5-1.5B
// 1536/28/12/2/8960, Qwen3-0.6B 1024/28/16/8/head_dim 128/3072, Qwen3-1.7B 2048/28/16/8/128/6144,
// Llama-3.2-1B 2048/16/32/8/8192 with its llama3 rope scaling (rope_freqs.weight).
INSTANTIATE_TEST_SUITE_P(
    Presets, MakeModelRealShapeTest,
    ::testing::Values(
        RealShape{"qwen2", "qwen2.5-0.5b", 896, 24, 896, 128, 4864, 64, false, true},
        RealShape{"qwen2", "qwen2.5-1.5b", 1536, 28, 1536, 256, 8960, 128, false, true},
        RealShape{"qwen3", "qwen3-0.6b", 1024, 28, 2048, 1024, 3072, 128, true, false},
        RealShape{"qwen3", "qwen3-1.7b", 2048, 28, 2048, 1024, 6144, 128, true, false},
        RealShape{"llama", "llama-3.2-1b", 2048, 16, 2048, 512, 8192, 64, false, false, true}));

// The hyperparameters that are not shapes (config.json: max_position_embeddings, rope_theta,
// rms_norm_eps), and presets that do not belong to the architecture.
TEST(MakeModel, RealPresetHyperparameters) {
  const ModelPreset p = *find_preset("qwen2", "qwen2.5-0.5b");
  EXPECT_EQ(p.n_ctx_train, 32768);
  EXPECT_FLOAT_EQ(p.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(p.rms_eps, 1e-6f);
  EXPECT_EQ(find_preset("llama", "llama-3.2-1b")->rope_freq_base, 5e5f);
  EXPECT_FALSE(find_preset("llama", "qwen3-0.6b").is_ok());
  EXPECT_FALSE(find_preset("qwen2", "qwen9").is_ok());
}

TEST(MakeModel, TokenizerFromAnotherFile) {
  MINFER_REQUIRE_TEST_DATA();
  TempDir dir;
  MakeModelOptions o = tiny("qwen3", "q8_0", dir.file("m.gguf"));
  o.tokenizer_from = test::test_data_path("models/qwen3-vocab.gguf");
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  EXPECT_EQ(report->n_vocab, 151936);
  auto model = Model::load(o.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ((*model)->config().n_vocab, 151936);
  auto tok = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  EXPECT_EQ((*tok)->encode("Hello, world", false, false), (std::vector<int32_t>{9707, 11, 1879}));
  EXPECT_TRUE((*model)->file().has("tokenizer.chat_template"));
}

TEST(MakeModel, BuiltinTokenizerRoundTrips) {
  TempDir dir;
  const MakeModelOptions o = tiny("llama", "f32", dir.file("m.gguf"));
  ASSERT_TRUE(make_model(o).is_ok());
  auto file = GgufFile::open(o.output);
  ASSERT_TRUE(file.is_ok());
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  const std::string text = "Once upon a time, the little girl found 42 keys. Ünïcödé ✓";
  const std::vector<int32_t> ids = (*tok)->encode(text, false, false);
  // Merges learned from English make common words single tokens.
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_EQ((*tok)->decode(ids), text);
  EXPECT_TRUE((*tok)->add_bos());  // llama-bpe adds BOS
  EXPECT_EQ((*tok)->token_text((*tok)->bos_id()), "<|endoftext|>");
  EXPECT_TRUE((*tok)->is_eog((*tok)->find_token("<|im_end|>")));
}

// Each type's mean KL divergence from the f32 file on a 24-token prompt, and make-model's own
// quantized files equal `quantize` of its f32 file byte for byte.
TEST(MakeModel, QuantizedFilesAgreeWithF32) {
  TempDir dir;
  const MakeModelOptions f32 = tiny("qwen2", "f32", dir.file("f32.gguf"));
  auto report = make_model(f32);
  ASSERT_TRUE(report.is_ok());
  const std::vector<int32_t> ids = prompt_ids(report->n_vocab, 24);
  int64_t n_vocab = 0;
  const std::vector<float> ref = test::model_logits(f32.output, ids, &n_vocab);
  ASSERT_FALSE(ref.empty());
  // Bounds: about 2× the mean KL measured on this seeded model (f16 2.2e-8, bf16 1.7e-6, q8_0
  // 1.3e-5, q6_k 8.4e-5, q5_1 4.3e-4, q5_0 4.8e-4, q5_k_m 5.0e-4, q4_k_m 1.3e-3, q4_1 1.7e-3,
  // q4_0 2.2e-3; the quantized types include the q8 activation rounding the dot products do).
  // The weights are fixed by the seed and every ISA's kernels equal the reference, so the values
  // move only when the arithmetic changes. KL grows with the squared weight error, about 4× per
  // bit dropped, so 2× separates each type from the next coarser one: a wrong per-tensor type or
  // a broken quantizer lands outside its bound.
  const std::map<std::string, double> bounds = {
      {"f16", 5e-8},  {"bf16", 4e-6},   {"q8_0", 3e-5},     {"q6_k", 2e-4},   {"q5_1", 9e-4},
      {"q5_0", 1e-3}, {"q5_k_m", 1e-3}, {"q4_k_m", 2.6e-3}, {"q4_1", 3.4e-3}, {"q4_0", 4.5e-3},
  };

  for (const auto& [type, bound] : bounds) {
    QuantizeOptions q;
    q.input = f32.output;
    q.output = dir.file(type + ".gguf");
    q.type = type;
    q.n_threads = 2;
    q.progress = ProgressStyle::kQuiet;
    ASSERT_TRUE(quantize_model(q).is_ok()) << type;
    const std::vector<float> got = test::model_logits(q.output, ids);
    ASSERT_EQ(got.size(), ref.size()) << type;
    const double kl = test::mean_kl(ref, got, n_vocab);
    std::printf("%-7s mean KL %.3g\n", type.c_str(), kl);
    EXPECT_LT(kl, bound) << type;
    EXPECT_GT(kl, 0.0) << type << ": identical logits mean nothing was quantized";

    const MakeModelOptions direct = tiny("qwen2", type, dir.file("direct-" + type + ".gguf"));
    ASSERT_TRUE(make_model(direct).is_ok()) << type;
    auto a = GgufFile::open(direct.output);
    auto b = GgufFile::open(q.output);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
      const GgufTensorInfo& ta = (*a)->tensors()[i];
      const GgufTensorInfo& tb = (*b)->tensors()[i];
      EXPECT_EQ(ta.name, tb.name);
      EXPECT_EQ(ta.type, tb.type) << type << " " << ta.name;
      const auto da = (*a)->tensor_data(ta);
      const auto db = (*b)->tensor_data(tb);
      ASSERT_EQ(da.size(), db.size());
      EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size()), 0) << type << " " << ta.name;
    }
  }
}

// Llama 3.2's rope_freqs as llama.cpp's converter computes them (factor 32, low 1, high 4,
// original context 8192, base 5e5, head_dim 64): pair i's wavelength is 2π · 5e5^(i/32); under
// 8192 / 4 = 2048 (pairs 0-14) the factor is 1, over 8192 (pairs 18-31) it is 32; pair 15
// (wavelength 2948.30) has smooth = (8192 / 2948.30 - 1) / 3 = 0.59276 and factor
// 1 / ((1 - smooth) / 32 + smooth) = 1.65133; pair 16 (4442.88) 3.29226, pair 17 (6695.11) 9.66673.
// The made file (shortened to one block) loads with them, and quantize keeps them f32.
TEST(MakeModel, Llama32RopeFreqsAsTheConverterComputesThem) {
  TempDir dir;
  MakeModelOptions o = tiny("llama", "q8_0", dir.file("l32.gguf"));
  o.preset = "llama-3.2-1b";
  o.n_layer = 1;
  ASSERT_TRUE(make_model(o).is_ok());
  QuantizeOptions q;
  q.input = o.output;
  q.output = dir.file("l32-q4_0.gguf");
  q.type = "q4_0";
  q.n_threads = 2;
  q.progress = ProgressStyle::kQuiet;
  ASSERT_TRUE(quantize_model(q).is_ok());
  for (const std::string& path : {o.output, q.output}) {
    auto model = Model::load(path);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ((*model)->config().n_layer, 1);
    const auto& freqs = (*model)->weights().rope_freqs;
    ASSERT_TRUE(freqs.has_value()) << path;
    ASSERT_EQ(freqs->type, GgmlType::kF32) << path;
    ASSERT_EQ(freqs->n_cols, 32);
    const float* f = freqs->f32();
    EXPECT_EQ(f[0], 1.0f);
    EXPECT_EQ(f[14], 1.0f);
    EXPECT_NEAR(f[15], 1.65133f, 1e-5f);
    EXPECT_NEAR(f[16], 3.29226f, 1e-5f);
    EXPECT_NEAR(f[17], 9.66673f, 1e-4f);
    EXPECT_EQ(f[18], 32.0f);
    EXPECT_EQ(f[31], 32.0f);
  }
  // A preset cannot be lengthened.
  o.n_layer = 17;
  EXPECT_FALSE(make_model(o).is_ok());
}

TEST(MakeModel, CommandLineErrorsAndPlainProgress) {
  TempDir dir;
  const std::string bin = test::minfer_binary();
  auto ok = test::run_command(bin + " make-model --arch qwen3 -o " + dir.file("m.gguf") + " -t 2");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  // stderr is a pipe here: quarter lines, no bar redraws.
  EXPECT_NE(ok.err.find("make-model: 25%"), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("make-model: 100%"), std::string::npos) << ok.err;
  EXPECT_EQ(ok.err.find('\r'), std::string::npos);
  auto info = test::run_command(bin + " info --json " + dir.file("m.gguf"));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"architecture\": \"qwen3\""), std::string::npos) << info.out;

  auto bad_arch = test::run_command(bin + " make-model --arch gpt9 -o " + dir.file("x.gguf"));
  EXPECT_EQ(bad_arch.exit_code, 1);
  EXPECT_NE(bad_arch.err.find("unknown architecture 'gpt9'"), std::string::npos) << bad_arch.err;
  auto mismatch = test::run_command(bin + " make-model --arch llama --preset qwen3-0.6b -o " +
                                    dir.file("x.gguf"));
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_NE(mismatch.err.find("is a qwen3 model"), std::string::npos) << mismatch.err;
  auto bad_type =
      test::run_command(bin + " make-model --arch llama --type q3_k_xl -o " + dir.file("x.gguf"));
  EXPECT_EQ(bad_type.exit_code, 1);
  EXPECT_NE(bad_type.err.find("q3_k_xl"), std::string::npos) << bad_type.err;
}

}  // namespace
}  // namespace minfer

namespace minfer {
namespace {

// Writes the real-shape Qwen2.5-0.5B at q8_0 (358 M parameters with the built-in tokenizer,
// ~380 MB, tens of seconds on two cores), loads it and runs a forward. Too slow for every run:
// set MINFER_SLOW_TESTS=1.
TEST(MakeModelSlow, Qwen25HalfBillionQ8LoadsAndRuns) {
  if (std::getenv("MINFER_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "set MINFER_SLOW_TESTS=1 to write and load the real-shape 0.5B model";
  }
  TempDir dir;
  MakeModelOptions o;
  o.arch = "qwen2";
  o.preset = "qwen2.5-0.5b";
  o.type = "q8_0";
  o.output = dir.file("q05.gguf");
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  auto report = make_model(o);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto model = Model::load(o.output);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ((*model)->config().n_embd, 896);
  EXPECT_EQ((*model)->config().n_layer, 24);
  EXPECT_TRUE((*model)->config().tied_output);
  int64_t n_vocab = 0;
  const std::vector<float> logits = test::model_logits(o.output, {1, 2, 3, 100}, &n_vocab);
  ASSERT_EQ(logits.size(), static_cast<size_t>(4 * n_vocab));
  for (float l : logits) ASSERT_TRUE(std::isfinite(l));
}

}  // namespace
}  // namespace minfer
