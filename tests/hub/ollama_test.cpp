// `-m ollama:NAME[:TAG]`: a fake Ollama store built here (a manifest and its blob) loads by name,
// read in place; a broken manifest, one without a model layer and a missing blob are clear
// errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hub/ollama.h"
#include "test_util.h"

namespace minfer {
namespace {

namespace fs = std::filesystem;
using test::run_command;

constexpr const char* kDigest = "1111111111111111111111111111111111111111111111111111111111111111";

class OllamaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MINFER_REQUIRE_TEST_DATA();
    fs::create_directories(store_.file("blobs"));
    fs::copy_file(test::test_data_path("models/stories260K.gguf"), blob());
    write_manifest("registry.ollama.ai/library/stories/latest",
                   R"({"schemaVersion": 2,
      "layers": [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:)" +
                       std::string(64, '2') + R"(", "size": 10},
                 {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:)" +
                       kDigest + R"(", "size": )" + std::to_string(fs::file_size(blob())) + "}]}");
  }
  std::string blob() const { return store_.file("blobs/sha256-") + kDigest; }
  void write_manifest(const std::string& name, const std::string& text) {
    const fs::path path = fs::path(store_.file("manifests")) / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string env() const { return "OLLAMA_MODELS='" + store_.path() + "' "; }

  test::TempDir store_;
};

TEST_F(OllamaTest, LoadsByNameInPlace) {
  auto path = hub::resolve_ollama_model("stories", store_.path());
  ASSERT_TRUE(path.is_ok()) << path.status().message();
  EXPECT_EQ(*path, blob());
  auto full = hub::resolve_ollama_model("registry.ollama.ai/library/stories:latest", store_.path());
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(*full, blob());

  const std::string args = " -t 2 -p 'Once upon a time' -n 8 --temp 0";
  const auto by_name = run_command(env() + test::minfer_binary() + " run -m ollama:stories" + args);
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  const auto by_path = run_command(test::minfer_binary() + " run -m '" + blob() + "'" + args);
  EXPECT_EQ(by_name.out, by_path.out);
}

TEST_F(OllamaTest, BrokenStoresAreClearErrors) {
  auto missing = hub::resolve_ollama_model("qwen3:0.6b", store_.path());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("is not in the store: no manifest"), std::string::npos)
      << missing.status().message();

  write_manifest("registry.ollama.ai/library/broken/latest", "{not json");
  auto broken = hub::resolve_ollama_model("broken", store_.path());
  ASSERT_FALSE(broken.is_ok());
  EXPECT_NE(broken.status().message().find("expected a JSON object with a 'layers' array"),
            std::string::npos)
      << broken.status().message();
  const auto cli = run_command(env() + test::minfer_binary() + " run -m ollama:broken -p x");
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_NE(cli.err.find("[ollama] manifest"), std::string::npos) << cli.err;

  write_manifest("registry.ollama.ai/library/nomodel/latest",
                 R"({"layers": [{"mediaType": "application/vnd.ollama.image.license"}]})");
  auto no_model = hub::resolve_ollama_model("nomodel", store_.path());
  ASSERT_FALSE(no_model.is_ok());
  EXPECT_NE(no_model.status().message().find("has no layer of media type"), std::string::npos);

  write_manifest(
      "registry.ollama.ai/library/noblob/latest",
      R"({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:)" +
          std::string(64, 'a') + R"("}]})");
  auto no_blob = hub::resolve_ollama_model("noblob", store_.path());
  ASSERT_FALSE(no_blob.is_ok());
  EXPECT_NE(no_blob.status().message().find("is missing"), std::string::npos)
      << no_blob.status().message();

  auto bad_name = hub::resolve_ollama_model("a/../b", store_.path());
  EXPECT_FALSE(bad_name.is_ok());
}

}  // namespace
}  // namespace minfer
