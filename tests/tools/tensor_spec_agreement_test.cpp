// make-model, quantize and the loader read one tensor list per architecture
// (models/tensor_spec.h): a made model of every architecture holds exactly that list and loads;
// a file with one tensor shaped or typed against the list fails with the loader's message; and
// quantize converts exactly the list's matrices, as llama.cpp's name rule does.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "models/model.h"
#include "models/model_config.h"
#include "models/tensor_spec.h"
#include "test_util.h"
#include "tools/model_maker.h"
#include "tools/presets.h"
#include "tools/quantize_model.h"

namespace minfer {
namespace {

using test::TempDir;

// A made tiny model of `arch`, and the tensor list of the config read back from it.
struct Made {
  std::unique_ptr<GgufFile> file;
  std::vector<TensorSpec> specs;
};

Made make_tiny(const std::string& arch, const std::string& path) {
  MakeModelOptions o;
  o.arch = arch;
  o.output = path;
  o.n_threads = 2;
  o.progress = ProgressStyle::kQuiet;
  EXPECT_TRUE(make_model(o).is_ok());
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return {};
  auto config = read_model_config(**file);
  EXPECT_TRUE(config.is_ok()) << config.status().message();
  if (!config.is_ok()) return {};
  auto specs = model_tensors(*config);
  EXPECT_TRUE(specs.is_ok()) << specs.status().message();
  if (!specs.is_ok()) return {};
  return {std::move(*file), std::move(*specs)};
}

// The image of `file` with tensor `name` replaced by zeros of another type and shape.
std::vector<uint8_t> with_tensor(const GgufFile& file, const std::string& name, GgmlType type,
                                 std::vector<uint64_t> shape) {
  GgufWriter w;
  for (const GgufKeyValue& kv : file.metadata()) w.set(kv.key, kv.value);
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.name == name) {
      uint64_t n_rows = 1;
      for (size_t d = 1; d < shape.size(); ++d) n_rows *= shape[d];
      const uint64_t n_bytes = *ggml_row_bytes(type, shape[0]) * n_rows;
      EXPECT_TRUE(w.add_tensor(t.name, type, shape, std::vector<uint8_t>(n_bytes)).is_ok());
    } else {
      const auto data = file.tensor_data(t);
      EXPECT_TRUE(
          w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(data.begin(), data.end()))
              .is_ok());
    }
  }
  auto image = w.serialize();
  EXPECT_TRUE(image.is_ok()) << image.status().message();
  return image.is_ok() ? std::move(*image) : std::vector<uint8_t>{};
}

// The loader's message for an image (empty when it loads).
std::string load_error(const std::vector<uint8_t>& image) {
  auto file = GgufFile::parse(image, "bad.gguf");
  if (!file.is_ok()) return "parse: " + file.status().message();
  auto model = Model::from_file(std::move(*file));
  return model.is_ok() ? std::string() : model.status().message();
}

class TensorSpecAgreementTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TensorSpecAgreementTest, MadeModelHoldsExactlyTheListAndLoads) {
  TempDir dir;
  Made made = make_tiny(GetParam(), dir.file("m.gguf"));
  ASSERT_TRUE(made.file);
  ASSERT_EQ(made.file->tensors().size(), made.specs.size());
  for (const TensorSpec& spec : made.specs) {
    const GgufTensorInfo* t = made.file->find_tensor(spec.name);
    ASSERT_NE(t, nullptr) << spec.name;
    EXPECT_EQ(t->shape, spec.shape()) << spec.name;
    if (spec.is_vector()) {
      EXPECT_EQ(t->type, GgmlType::kF32) << spec.name;
    }
  }
  auto model = Model::from_file(std::move(made.file));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  // The graph's flags and the list agree: a flag set means its tensors were loaded.
  const ModelConfig& c = (*model)->config();
  for (const LayerWeights& l : (*model)->weights().layers) {
    EXPECT_EQ(l.bq.has_value() && l.bk.has_value() && l.bv.has_value(), c.qkv_bias);
    EXPECT_EQ(l.q_norm.has_value() && l.k_norm.has_value(), c.qk_norm);
    EXPECT_EQ(l.attn_post_norm.has_value() && l.ffn_post_norm.has_value(), c.post_norms);
    EXPECT_EQ(l.wo.n_cols, c.n_head * c.head_dim_v);
    EXPECT_EQ(l.wo.n_rows, c.n_embd);
  }
}

// Every tensor of the list, in turn made one row short (a vector: one element short), gives the
// loader's shape error naming it and the list's shape.
TEST_P(TensorSpecAgreementTest, WronglyShapedTensorGivesTheListsShapeError) {
  TempDir dir;
  const Made made = make_tiny(GetParam(), dir.file("m.gguf"));
  ASSERT_TRUE(made.file);
  for (const TensorSpec& spec : made.specs) {
    if (spec.il > 0) continue;  // the other blocks are the same list
    std::vector<uint64_t> wrong = spec.shape();
    wrong.back() -= 1;
    const std::string error = load_error(with_tensor(*made.file, spec.name, GgmlType::kF32, wrong));
    EXPECT_EQ(error, fmt::format("[model] 'bad.gguf': tensor '{}' has shape [{}], expected [{}]",
                                 spec.name, fmt::join(wrong, ", "), fmt::join(spec.shape(), ", ")));
  }
}

// A vector of the list in f16 is refused (vectors are f32); a matrix in f16 loads.
TEST_P(TensorSpecAgreementTest, VectorsMustBeF32MatricesNeedNot) {
  TempDir dir;
  const Made made = make_tiny(GetParam(), dir.file("m.gguf"));
  ASSERT_TRUE(made.file);
  for (const TensorSpec& spec : made.specs) {
    if (spec.il > 0) continue;
    const std::string error =
        load_error(with_tensor(*made.file, spec.name, GgmlType::kF16, spec.shape()));
    if (spec.is_vector()) {
      EXPECT_EQ(error, fmt::format("[model] 'bad.gguf': tensor '{}' has type f16, which minfer "
                                   "cannot compute with here (expected f32)",
                                   spec.name));
    } else {
      EXPECT_EQ(error, "") << spec.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, TensorSpecAgreementTest,
                         ::testing::Values("qwen2", "qwen3", "llama", "gemma3"));
// Every expert tensor (gate, up, down; gpt-oss's with their per-expert biases and the attention
// sinks) one row short is refused with its name.
INSTANTIATE_TEST_SUITE_P(MoeArchs, TensorSpecAgreementTest,
                         ::testing::Values("qwen3moe", "gpt-oss"));

// Gemma 4's MoE (moe_geglu: one double-wide gate_up per expert, a down scale per expert) in the
// shared 26B-A4B-style file: each expert tensor of the first block, one expert short or one row
// short, is refused with its name and the list's shape (make-model has no tiny Gemma 4 MoE, so
// the generic test above cannot make one).
TEST(TensorSpecAgreement, Gemma4MoeExpertsOfTheWrongShapeAreRefusedWithTheirNames) {
  MINFER_REQUIRE_TEST_DATA();
  auto file = GgufFile::open(test::test_data_path("models/gemma4-moe-tiny-f32.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  int checked = 0;
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    if (!t.name.starts_with("blk.0.ffn_") || t.name.find("_exps.") == std::string::npos) continue;
    // A matrix per expert: its rows, then the expert count; the scales: their count.
    for (size_t dim = t.shape.size() == 1 ? 0 : 1; dim < t.shape.size(); ++dim) {
      std::vector<uint64_t> wrong = t.shape;
      wrong[dim] -= 1;
      EXPECT_EQ(load_error(with_tensor(**file, t.name, GgmlType::kF32, wrong)),
                fmt::format("[model] 'bad.gguf': tensor '{}' has shape [{}], expected [{}]", t.name,
                            fmt::join(wrong, ", "), fmt::join(t.shape, ", ")));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5);  // gate_up and down: rows and experts; the down scales
}

// quantize converts the list's matrices and copies its vectors; for every architecture and mix
// that is the same plan as llama.cpp's name rule gives (so files stay those of llama-quantize).
TEST(TensorSpecAgreement, QuantizePlanFromRolesEqualsLlamaNameRule) {
  for (const char* arch : {"qwen2", "qwen3", "llama", "gemma3"}) {
    const ModelPreset tiny = *find_preset(arch, "tiny");
    MakeModelOptions o;
    o.arch = arch;
    auto layout = make_model_layout(o);
    ASSERT_TRUE(layout.is_ok()) << layout.status().message();
    std::vector<TensorDesc> by_name;
    for (const auto& t : layout->tensors) by_name.push_back({t.name, GgmlType::kF32, t.shape});
    for (const char* mix_name : {"f16", "q8_0", "q4_0", "q4_k_m", "q6_k"}) {
      const QuantMix mix = *find_quant_mix(mix_name);
      // make_model_layout's types come from the list's roles.
      const TypePlan plan =
          plan_tensor_types(mix, by_name, arch, tiny.n_layer, tiny.n_head, tiny.n_head_kv);
      o.type = mix_name;
      auto made = make_model_layout(o);
      ASSERT_TRUE(made.is_ok());
      ASSERT_EQ(made->tensors.size(), plan.types.size());
      for (size_t k = 0; k < plan.types.size(); ++k) {
        EXPECT_EQ(made->tensors[k].type, plan.types[k])
            << arch << " " << mix_name << " " << by_name[k].name;
      }
    }
  }
}

}  // namespace
}  // namespace minfer
