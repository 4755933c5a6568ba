// ModelRegistry without real models: which files of a folder are models and by what names,
// and the errors of an unknown name, a failed load and a stopped registry. Loading, LRU
// unloading and the HTTP side run against real models in tests/server/node/models.test.js.
#include "server/model_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace minfer::server {
namespace {

namespace fs = std::filesystem;

class ModelRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("minfer_registry_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name) { std::ofstream(dir_ / name) << "x"; }

  fs::path dir_;
};

std::vector<std::string> names(const std::vector<ModelEntry>& models) {
  std::vector<std::string> out;
  for (const ModelEntry& m : models) out.push_back(m.name);
  return out;
}

TEST_F(ModelRegistryTest, ScanNamesGgufFilesByStem) {
  for (const char* f : {"b.gguf", "a.GGUF", "notes.txt", "mmproj-a.gguf", "big-00001-of-00002.gguf",
                        "big-00002-of-00002.gguf", "sub/inner.gguf"}) {
    touch(f);
  }
  Result<std::vector<ModelEntry>> models = scan_models_dir(dir_);
  ASSERT_TRUE(models.is_ok()) << models.status().message();
  EXPECT_EQ(names(*models), (std::vector<std::string>{"a", "b", "big"}));
  EXPECT_EQ(models->at(2).path, dir_ / "big-00001-of-00002.gguf");
}

TEST_F(ModelRegistryTest, ASplitModelsBytesAreAllItsParts) {
  std::ofstream(dir_ / "one.gguf") << std::string(100, 'x');
  std::ofstream(dir_ / "big-00001-of-00003.gguf") << std::string(10, 'x');
  std::ofstream(dir_ / "big-00002-of-00003.gguf") << std::string(20, 'x');
  std::ofstream(dir_ / "big-00003-of-00003.gguf") << std::string(40, 'x');
  EXPECT_EQ(model_file_bytes(dir_ / "one.gguf"), 100u);
  EXPECT_EQ(model_file_bytes(dir_ / "big-00001-of-00003.gguf"), 70u);
  EXPECT_EQ(model_file_bytes(dir_ / "big-00002-of-00003.gguf"), 20u);  // a part alone
  EXPECT_EQ(model_file_bytes(dir_ / "absent.gguf"), 0u);
  Result<std::vector<ModelEntry>> models = scan_models_dir(dir_);
  ASSERT_TRUE(models.is_ok()) << models.status().message();
  ASSERT_EQ(names(*models), (std::vector<std::string>{"big", "one"}));
  EXPECT_EQ(models->at(0).bytes, 70u);
  EXPECT_EQ(models->at(1).bytes, 100u);
}

TEST_F(ModelRegistryTest, AModelLargerThanTheMemoryBudgetIsRefusedUnloaded) {
  std::ofstream(dir_ / "m.gguf") << std::string(4096, 'x');
  int loads = 0;
  ModelRegistry registry({{"m", dir_ / "m.gguf", model_file_bytes(dir_ / "m.gguf")}},
                         {.max_loaded = 2, .memory_budget = 4095, .default_grammar = ""},
                         [&loads](const fs::path&) -> Result<LoadedModel> {
                           ++loads;
                           return make_error(ErrorCode::kInternal, "not reached");
                         });
  const Status st = registry.acquire("m").status();
  EXPECT_EQ(st.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(st.message().find("more than the memory budget"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--models-memory"), std::string::npos) << st.message();
  EXPECT_EQ(loads, 0);
}

TEST_F(ModelRegistryTest, ScanOfMissingFolderIsAnError) {
  Result<std::vector<ModelEntry>> models = scan_models_dir(dir_ / "absent");
  ASSERT_FALSE(models.is_ok());
  EXPECT_EQ(models.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(models.status().message().find("absent"), std::string::npos);
}

TEST_F(ModelRegistryTest, UnknownNameFailedLoadAndStop) {
  int loads = 0;
  ModelRegistry registry({{"m", dir_ / "m.gguf"}},
                         {.max_loaded = 1, .memory_budget = 0, .default_grammar = ""},
                         [&loads](const fs::path& path) -> Result<LoadedModel> {
                           ++loads;
                           return make_error(ErrorCode::kCorrupt, "bad file {}", path.string());
                         });
  EXPECT_TRUE(registry.contains("m"));
  EXPECT_FALSE(registry.contains("x"));
  EXPECT_EQ(registry.acquire("x").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(registry.unload("x").code(), ErrorCode::kNotFound);
  EXPECT_EQ(registry.acquire("m").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(registry.acquire("m").status().code(), ErrorCode::kCorrupt);  // tried again
  EXPECT_EQ(loads, 2);
  EXPECT_FALSE(registry.is_loaded("m"));
  EXPECT_TRUE(registry.unload("m").is_ok());  // not loaded: nothing to do
  registry.stop_all();
  EXPECT_EQ(registry.acquire("m").status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(loads, 2);
}

}  // namespace
}  // namespace minfer::server
