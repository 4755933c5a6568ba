// `minfer info` run as a user would: the built binary on every shared model (exact figures,
// derived independently of minfer with a small Python GGUF parser), --json, --tensors, and broken
// files (exit 1, exactly one stderr line).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_writer.h"
#include "gguf/raw_gguf.h"
#include "test_util.h"

namespace minfer {
namespace {

using nlohmann::json;
using test::count_lines;
using test::minfer_binary;
using test::run_command;

test::CommandResult info(const std::string& path, const std::string& flags = "") {
  return run_command(minfer_binary() + " info '" + path + "' " + flags);
}

json info_json(const std::string& model) {
  const test::CommandResult r = info(test::test_data_path("models/" + model), "--json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

// The value printed on the text line that starts with `label`.
std::string text_field(const std::string& out, const std::string& label) {
  size_t at = 0;
  while (at < out.size()) {
    const size_t end = out.find('\n', at);
    const std::string line = out.substr(at, end - at);
    if (line.rfind(label + " ", 0) == 0) {
      const size_t value = line.find_first_not_of(' ', label.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "<missing>";
}

TEST(InfoCommand, SucceedsOnEverySharedModel) {
  MINFER_REQUIRE_TEST_DATA();
  int n_models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::test_data_path("models"))) {
    if (entry.path().extension() != ".gguf") continue;
    ++n_models;
    SCOPED_TRACE(entry.path().string());
    const test::CommandResult text = info(entry.path().string());
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.err, "");
    EXPECT_NE(text_field(text.out, "architecture"), "<missing>");
    const test::CommandResult listed = info(entry.path().string(), "--tensors --json");
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    const json j = json::parse(listed.out);
    EXPECT_EQ(j["tensors"].size(), j["n_tensors"].get<size_t>());
  }
  EXPECT_GE(n_models, 20);
}

TEST(InfoCommand, Qwen3TinyF32Figures) {
  MINFER_REQUIRE_TEST_DATA();
  const test::CommandResult r = info(test::test_data_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text_field(r.out, "architecture"), "qwen3");
  EXPECT_EQ(text_field(r.out, "n_embd"), "256");
  EXPECT_EQ(text_field(r.out, "n_head"), "4");
  EXPECT_EQ(text_field(r.out, "n_head_kv"), "2");
  EXPECT_EQ(text_field(r.out, "head_dim"), "128 (attention.key_length)");  // != 256 / 4
  EXPECT_EQ(text_field(r.out, "tensors"), "36 (f32 36)");

  const json j = info_json("qwen3-tiny-f32.gguf");
  EXPECT_EQ(j["hparams"]["n_embd"], 256);
  EXPECT_EQ(j["hparams"]["n_head"], 4);
  EXPECT_EQ(j["hparams"]["head_dim"], 128);
  EXPECT_EQ(j["hparams"]["n_layer"], 3);
  EXPECT_EQ(j["hparams"]["n_ff"], 512);
  EXPECT_EQ(j["hparams"]["n_ctx_train"], 4096);
  EXPECT_EQ(j["hparams"]["rope_freq_base"], 1000000.0);
  EXPECT_EQ(j["n_params"], 2873856);
  EXPECT_EQ(j["n_tensor_bytes"], 11495424);
}

TEST(InfoCommand, Stories260KFigures) {
  MINFER_REQUIRE_TEST_DATA();
  const test::CommandResult r = info(test::test_data_path("models/stories260K.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text_field(r.out, "n_layer"), "5");
  EXPECT_EQ(text_field(r.out, "n_head"), "8");
  EXPECT_EQ(text_field(r.out, "n_head_kv"), "4");
  EXPECT_EQ(text_field(r.out, "n_vocab"), "512");
  EXPECT_EQ(text_field(r.out, "tensors"), "48 (f32 48)");
  EXPECT_EQ(text_field(r.out, "tokenizer.pre"), "absent");
  EXPECT_EQ(text_field(r.out, "chat_template"), "absent");

  const json j = info_json("stories260K.gguf");
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["hparams"]["n_layer"], 5);
  EXPECT_EQ(j["hparams"]["n_head"], 8);
  EXPECT_EQ(j["hparams"]["n_head_kv"], 4);
  EXPECT_EQ(j["hparams"]["n_embd"], 64);
  EXPECT_EQ(j["hparams"]["head_dim"], 8);
  EXPECT_EQ(j["hparams"]["n_ff"], 172);
  EXPECT_TRUE(j["hparams"]["rope_freq_base"].is_null());  // absent, not an error
  EXPECT_EQ(j["tokenizer"]["n_vocab"], 512);
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  EXPECT_TRUE(j["tokenizer"]["pre"].is_null());
  EXPECT_EQ(j["tokenizer"]["has_chat_template"], false);
  ASSERT_EQ(j["tensor_types"].size(), 1u);  // all tensors F32
  EXPECT_EQ(j["tensor_types"]["f32"]["n_tensors"], 48);
  EXPECT_EQ(j["n_params"], 292800);
  EXPECT_EQ(j["n_tensor_bytes"], 1171200);
}

// A hybrid model's layer kinds and per-sequence recurrent state, from the files' keys as
// ../shared/docs/models/qwen35.md derives them: layer i is gated delta-net iff
// (i + 1) % full_attention_interval != 0; per such layer a conv state of
// (conv_kernel - 1)(inner_size + 2 group_count state_size) floats and a delta state of
// state_size inner_size floats. Both tiny files: conv_kernel 4, inner_size 64, state_size 16,
// group_count 2, so 3 · 128 · 4 B = 1.5 KiB and 16 · 64 · 4 B = 4 KiB, 5,632 B a layer.
TEST(InfoCommand, HybridModelsLayerKindsAndStatePerSequence) {
  MINFER_REQUIRE_TEST_DATA();
  // qwen35-tiny: 6 layers, interval 3.
  const test::CommandResult r = info(test::test_data_path("models/qwen35-tiny-f32.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text_field(r.out, "layers:"), "4 gated delta-net (0 1 3 4), 2 attention (2 5)");
  EXPECT_EQ(text_field(r.out, "state:").rfind("22.0 KiB per sequence", 0), 0u) << r.out;
  const json dense = info_json("qwen35-tiny-f32.gguf");
  EXPECT_EQ(dense["layer_pattern"], json({"gated_delta_net", "gated_delta_net", "attention",
                                          "gated_delta_net", "gated_delta_net", "attention"}));
  EXPECT_EQ(dense["recurrent_state_bytes_per_sequence"], 4 * 5632);
  // qwen35moe-tiny: 4 layers, interval 2.
  const json moe = info_json("qwen35moe-tiny-f32.gguf");
  EXPECT_EQ(moe["layer_pattern"],
            json({"gated_delta_net", "attention", "gated_delta_net", "attention"}));
  EXPECT_EQ(moe["recurrent_state_bytes_per_sequence"], 2 * 5632);
  // A model without recurrent layers says nothing of either.
  const json plain = info_json("qwen3-tiny-f32.gguf");
  EXPECT_FALSE(plain.contains("recurrent_state_bytes_per_sequence")) << plain.dump();
}

TEST(InfoCommand, Qwen2TinyQ4KMTensorCountsPerType) {
  MINFER_REQUIRE_TEST_DATA();
  // Counted by an independent Python parser of the file: 16 f32 (norms, biases), 20 q4_K,
  // 3 q6_K (the K-quant mix).
  const test::CommandResult r = info(test::test_data_path("models/qwen2-tiny-q4_k_m.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text_field(r.out, "tensors"), "39 (f32 16, q4_K 20, q6_K 3)");
  EXPECT_EQ(text_field(r.out, "parameters"), "2284800 (2.28 M)");

  const json j = info_json("qwen2-tiny-q4_k_m.gguf");
  const std::map<std::string, int> expected = {{"f32", 16}, {"q4_K", 20}, {"q6_K", 3}};
  ASSERT_EQ(j["tensor_types"].size(), expected.size());
  for (const auto& [type, count] : expected) {
    EXPECT_EQ(j["tensor_types"][type]["n_tensors"], count) << type;
  }
  EXPECT_EQ(j["n_tensors"], 39);
  EXPECT_EQ(j["n_params"], 2284800);
  EXPECT_EQ(j["n_tensor_bytes"], 1404880);
  EXPECT_EQ(j["hparams"]["n_embd"], 256);
  EXPECT_EQ(j["hparams"]["n_layer"], 3);
  EXPECT_EQ(j["hparams"]["n_head_kv"], 2);
  EXPECT_EQ(j["hparams"]["head_dim"], 64);
  EXPECT_EQ(j["hparams"]["head_dim_from_key"], false);
  EXPECT_EQ(j["tokenizer"]["n_vocab"], 1000);
  EXPECT_EQ(j["tokenizer"]["pre"], "qwen2");
  EXPECT_EQ(j["tokenizer"]["has_chat_template"], true);
}

TEST(InfoCommand, VocabOnlyFileHasNoTensors) {
  MINFER_REQUIRE_TEST_DATA();
  const json j = info_json("qwen3-vocab.gguf");
  EXPECT_EQ(j["n_tensors"], 0);
  EXPECT_EQ(j["n_params"], 0);
  EXPECT_TRUE(j["tensor_types"].empty());
  EXPECT_EQ(j["tokenizer"]["n_vocab"], 151936);
  EXPECT_EQ(j["tokenizer"]["has_chat_template"], true);
}

TEST(InfoCommand, SaysWhetherMinferRunsTheFile) {
  MINFER_REQUIRE_TEST_DATA();
  EXPECT_EQ(info_json("gemma3-tiny-f32.gguf")["runs"], true);
  EXPECT_TRUE(info_json("gemma3-tiny-f32.gguf")["runs_error"].is_null());
  // A vocabulary without weights does not run, and the reason names the missing tensor.
  const json vocab = info_json("qwen3-vocab.gguf");
  EXPECT_EQ(vocab["runs"], false);
  EXPECT_NE(vocab["runs_error"].get<std::string>().find("token_embd.weight"), std::string::npos)
      << vocab["runs_error"];
  const test::CommandResult r = info(test::test_data_path("models/qwen3-vocab.gguf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text_field(r.out, "runs").rfind("no: ", 0), 0u) << r.out;
}

TEST(InfoCommand, ArchitecturesListsWhatRunsAndWhatWasTested) {
  const test::CommandResult r = run_command(minfer_binary() + " info --architectures --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const json& a : json::parse(r.out)) {
    names.push_back(a["architecture"].get<std::string>());
    EXPECT_FALSE(a["tested_models"].get<std::string>().empty()) << a;
  }
  for (const char* arch : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "gpt-oss"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), arch), names.end()) << arch;
  }
  const test::CommandResult text = run_command(minfer_binary() + " info --architectures");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(count_lines(text.out), names.size());
  const test::CommandResult none = run_command(minfer_binary() + " info");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(count_lines(none.err), 1u) << none.err;
}

TEST(InfoCommand, TensorsListsNameTypeShapeOffset) {
  MINFER_REQUIRE_TEST_DATA();
  const test::CommandResult r = info(test::test_data_path("models/stories260K.gguf"), "--tensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The first tensor of the file is token_embd.weight, f32 [64, 512] at offset 0.
  EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos);
  const size_t at = r.out.find("\ntoken_embd.weight");
  ASSERT_NE(at, std::string::npos);
  const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(" f32 "), std::string::npos) << line;
  EXPECT_NE(line.find("[64, 512]"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '0') << line;
  const json j = info_json("stories260K.gguf");
  EXPECT_FALSE(j.contains("tensors"));  // only with --tensors
}

// Broken files: exit 1, nothing on stdout, exactly one line on stderr naming the component.
void expect_one_line_failure(const std::string& path, const std::string& fragment,
                             const std::string& flags = "") {
  SCOPED_TRACE(path);
  const test::CommandResult r = info(path, flags);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err[0], '[') << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST(InfoCommand, BrokenFilesExitOneWithOneLine) {
  test::TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_scalar<uint32_t>("llama.block_count", 2);
  ASSERT_TRUE(w.add_tensor("w", GgmlType::kF32, {8}, std::vector<uint8_t>(32)).is_ok());
  const std::vector<uint8_t> valid = *w.serialize();
  test::write_file_bytes(dir.file("valid.gguf"), valid);
  EXPECT_EQ(info(dir.file("valid.gguf")).exit_code, 0);

  expect_one_line_failure(dir.file("missing.gguf"), "[file] cannot open");
  expect_one_line_failure(dir.path(), "[file]");  // a directory

  std::vector<uint8_t> magic = valid;
  magic[0] = 'X';
  test::write_file_bytes(dir.file("magic.gguf"), magic);
  expect_one_line_failure(dir.file("magic.gguf"), "[gguf]", "--json");

  test::write_file_bytes(dir.file("truncated.gguf"),
                         std::vector<uint8_t>(valid.begin(), valid.begin() + 70));
  expect_one_line_failure(dir.file("truncated.gguf"), "[gguf]");

  std::vector<uint8_t> version = valid;
  version[4] = 4;
  test::write_file_bytes(dir.file("version.gguf"), version);
  expect_one_line_failure(dir.file("version.gguf"), "version 4", "--tensors");

  test::write_file_bytes(dir.file("empty.gguf"), {});
  expect_one_line_failure(dir.file("empty.gguf"), "[gguf]");

  test::RawGguf dup;  // a duplicate key whose name holds a newline still gives one line
  dup.header(3, 0, 2).kv_u32("bad\nkey", 1).kv_u32("bad\nkey", 2);
  test::write_file_bytes(dir.file("dup.gguf"), dup.bytes);
  expect_one_line_failure(dir.file("dup.gguf"), "duplicate metadata key 'bad\\x0akey'");

  test::RawGguf overlap;
  overlap.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad_to(32).zeros(128);
  test::write_file_bytes(dir.file("overlap.gguf"), overlap.bytes);
  expect_one_line_failure(dir.file("overlap.gguf"), "overlaps tensor 'b'");

  GgufWriter wrong = w;  // a hyperparameter of the wrong type
  wrong.set_string("llama.block_count", "two");
  test::write_file_bytes(dir.file("wrong.gguf"), *wrong.serialize());
  expect_one_line_failure(dir.file("wrong.gguf"),
                          "key 'llama.block_count' holds string, expected an integer", "--json");
}

}  // namespace
}  // namespace minfer
