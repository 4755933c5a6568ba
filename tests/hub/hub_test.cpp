// `-hf REPO[:QUANT]` against a local stand-in for the Hugging Face Hub (tests/hub/fake_hub.py,
// started here on a free port; HF_ENDPOINT points at it): the real libcurl client downloads into
// a temporary HF_HUB_CACHE in huggingface_hub's layout, a second request is answered from the
// cache without any request, a dropped connection resumes where it stopped, a wrong checksum is
// rejected and cleaned up, offline mode, a gated repository, a quant tag that matches nothing,
// and a split model downloaded and run. Fixture repositories are built from ../shared/models.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "hub/hub_cache.h"
#include "hub/hub_download.h"
#include "hub/hub_http.h"
#include "test_util.h"
#include "tools/gguf_split_model.h"

namespace minfer {
namespace {

namespace fs = std::filesystem;
using test::run_command;

std::string shared_model(const std::string& name) {
  return test::test_data_path("models/" + name);
}

void put_file(const fs::path& path, const std::string& from) {
  fs::create_directories(path.parent_path());
  fs::copy_file(from, path);
}

// The fixture repositories and the server, for one test program run.
class HubServer {
 public:
  HubServer() {
    const fs::path root = root_.path();
    put_file(root / "org/stories-GGUF/stories260K-Q8_0.gguf", shared_model("stories260K.gguf"));
    put_file(root / "org/stories-GGUF/stories260K-F16.gguf", shared_model("stories260K-f16.gguf"));
    put_file(root / "org/stories-GGUF/mmproj-stories-Q8_0.gguf", shared_model("stories260K.gguf"));
    std::ofstream(root / "org/stories-GGUF/README.md") << "# stories\n";
    for (const char* repo : {"gated", "flaky", "corrupt", "stalled"}) {
      put_file(root / "org" / (std::string(repo) + "-GGUF") / "model-Q8_0.gguf",
               shared_model("stories260K.gguf"));
    }
    fs::create_directories(root / "org/split-GGUF/Q8_0");
    GgufSplitOptions split;
    split.input = shared_model("stories260K.gguf");
    split.output_prefix = (root / "org/split-GGUF/Q8_0/stories-Q8_0").string();
    split.max_tensors = 20;
    EXPECT_TRUE(split_gguf(split).is_ok());
    std::ofstream(root / "config.json") << R"({"gated": ["org/gated-GGUF"], "token": "secret",
        "flaky": ["org/flaky-GGUF"], "bad_sha": ["org/corrupt-GGUF"],
        "stalled": ["org/stalled-GGUF"]})";
    start();
  }
  ~HubServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& endpoint() const { return endpoint_; }
  nlohmann::json stats() const {
    auto r = hub::HttpClient({}).get(endpoint_ + "/_stats");
    return r.is_ok() ? nlohmann::json::parse(r->body) : nlohmann::json();
  }

 private:
  void start() {
    const std::string script = std::string(MINFER_SOURCE_DIR) + "/tests/hub/fake_hub.py";
    const std::string port_file = root_.file("port");
    pid_ = fork();
    if (pid_ == 0) {
      execlp("python3", "python3", script.c_str(), root_.path().c_str(), port_file.c_str(),
             static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200 && !fs::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    std::ifstream in(port_file);
    int port = 0;
    in >> port;
    ASSERT_GT(port, 0) << "the fake Hub did not start";
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
  }

  test::TempDir root_;
  pid_t pid_ = -1;
  std::string endpoint_;
};

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MINFER_REQUIRE_TEST_DATA();
    server_ = std::make_unique<HubServer>();
    options_.endpoint = server_->endpoint();
    options_.cache = cache_.path();
    options_.progress = false;
  }

  Result<hub::HubModel> fetch(const std::string& model) {
    auto ref = hub::parse_hub_model_ref(model);
    if (!ref.is_ok()) return ref.status();
    return hub::fetch_hub_model(*ref, options_);
  }
  // The environment of a minfer command that uses this server and cache.
  std::string env() const {
    return "HF_ENDPOINT=" + server_->endpoint() + " HF_HUB_CACHE='" + cache_.path() + "' ";
  }
  std::string repo_dir(const std::string& repo) const {
    return hub::repo_cache_dir(cache_.path(), repo);
  }
  int64_t requests() const { return server_->stats().value("requests", -1); }

  std::unique_ptr<HubServer> server_;
  test::TempDir cache_;
  hub::HubOptions options_;
};

TEST_F(HubTest, DownloadsIntoTheSharedCacheLayout) {
  auto m = fetch("org/stories-GGUF");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_FALSE(m->cached);
  // No tag, no Q4_K_M: Q8_0; the mmproj file is never picked.
  ASSERT_EQ(m->files, std::vector<std::string>{"stories260K-Q8_0.gguf"});
  const std::string dir = repo_dir("org/stories-GGUF");
  const std::optional<std::string> commit = hub::read_ref(dir, "main");
  ASSERT_TRUE(commit.has_value());
  EXPECT_EQ(m->path, dir + "/snapshots/" + *commit + "/stories260K-Q8_0.gguf");
  ASSERT_TRUE(fs::is_symlink(m->path));
  const std::string target = fs::read_symlink(m->path).string();
  ASSERT_TRUE(target.starts_with("../../blobs/")) << target;
  EXPECT_EQ(target.size(), std::string("../../blobs/").size() + 64) << target;
  EXPECT_EQ(test::read_file_bytes(m->path),
            test::read_file_bytes(shared_model("stories260K.gguf")));
  for (const auto& e : fs::directory_iterator(dir + "/blobs")) {
    EXPECT_FALSE(e.path().string().ends_with(".incomplete")) << e.path();
  }
}

TEST_F(HubTest, CacheHitMakesNoRequest) {
  ASSERT_TRUE(fetch("org/stories-GGUF:Q8_0").is_ok());
  const int64_t before = requests();
  auto again = fetch("org/stories-GGUF:Q8_0");
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(requests(), before);
  const auto pull = run_command(env() + test::minfer_binary() + " pull org/stories-GGUF:q8_0");
  EXPECT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_NE(pull.err.find("already in the cache"), std::string::npos) << pull.err;
  EXPECT_EQ(requests(), before);
}

TEST_F(HubTest, QuantTagPicksAndAMissingTagListsTheRepo) {
  auto f16 = fetch("org/stories-GGUF:f16");
  ASSERT_TRUE(f16.is_ok()) << f16.status().message();
  EXPECT_EQ(f16->files, std::vector<std::string>{"stories260K-F16.gguf"});
  auto none = fetch("org/stories-GGUF:Q2_K");
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no .gguf file matches quant 'Q2_K'; the repo has: "
                                         "stories260K-F16.gguf, stories260K-Q8_0.gguf"),
            std::string::npos)
      << none.status().message();
  auto missing = fetch("org/no-such-repo");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos)
      << missing.status().message();
}

TEST_F(HubTest, ResumesAfterADroppedConnection) {
  auto m = fetch("org/flaky-GGUF");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(test::read_file_bytes(m->path),
            test::read_file_bytes(shared_model("stories260K.gguf")));
  const nlohmann::json file = server_->stats()["files"]["org/flaky-GGUF/model-Q8_0.gguf"];
  EXPECT_EQ(file.value("requests", 0), 2) << file.dump();  // the dropped one, then the rest
  const uint64_t size = fs::file_size(shared_model("stories260K.gguf"));
  EXPECT_LE(file.value("bytes", uint64_t{0}), size + 64 * 1024) << file.dump();
}

TEST_F(HubTest, ResumesAPartialFileLeftByAnEarlierRun) {
  // An interrupted run left the first half in blobs/<sha256>.incomplete.
  options_.token = "secret";
  auto tree = hub::HttpClient({"secret"})
                  .get(server_->endpoint() + "/api/models/org/gated-GGUF/tree/main?recursive=true");
  ASSERT_TRUE(tree.is_ok());
  const std::string sha256 = nlohmann::json::parse(tree->body)[0]["lfs"]["oid"];
  const std::vector<uint8_t> bytes = test::read_file_bytes(shared_model("stories260K.gguf"));
  const size_t half = bytes.size() / 2;
  const std::string blobs = repo_dir("org/gated-GGUF") + "/blobs/";
  fs::create_directories(blobs);
  test::write_file_bytes(blobs + sha256 + ".incomplete",
                         std::vector<uint8_t>(bytes.begin(), bytes.begin() + half));
  auto m = fetch("org/gated-GGUF");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(test::read_file_bytes(m->path), bytes);
  const nlohmann::json file = server_->stats()["files"]["org/gated-GGUF/model-Q8_0.gguf"];
  EXPECT_EQ(file.value("bytes", uint64_t{0}), bytes.size() - half) << file.dump();
  EXPECT_FALSE(fs::exists(blobs + sha256 + ".incomplete"));
}

TEST_F(HubTest, ChecksumMismatchIsRejectedAndCleanedUp) {
  auto m = fetch("org/corrupt-GGUF");
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("SHA-256 of the download is"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("deleted"), std::string::npos);
  const std::string dir = repo_dir("org/corrupt-GGUF");
  EXPECT_TRUE(fs::is_empty(dir + "/blobs"));
  EXPECT_FALSE(fs::exists(dir + "/snapshots"));
  EXPECT_FALSE(fs::exists(dir + "/refs"));
}

TEST_F(HubTest, AFailedWriteIsOneLineAndLeavesNoModel) {
  // A file size limit (ulimit -f, SIGXFSZ ignored) fails the write as a full disk would.
  const auto r = run_command("(trap '' XFSZ; ulimit -f 256; " + env() + test::minfer_binary() +
                             " pull org/stories-GGUF:F16)");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("[hub] writing the download failed: File too large"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::string dir = repo_dir("org/stories-GGUF");
  EXPECT_FALSE(fs::exists(dir + "/snapshots"));
  for (const auto& e : fs::directory_iterator(dir + "/blobs")) {
    EXPECT_TRUE(e.path().string().ends_with(".incomplete")) << e.path();
  }
}

TEST_F(HubTest, AStalledDownloadTimesOutInOneLineAndLeavesNoModel) {
  // The server sends half of the file, then nothing: each attempt ends after the stall limit
  // (HF_HUB_DOWNLOAD_TIMEOUT seconds), resumed from where it stopped, then the pull gives up.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command("HF_HUB_DOWNLOAD_TIMEOUT=1 " + env() + test::minfer_binary() +
                             " pull org/stalled-GGUF");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_LT(seconds, 30.0) << "5 attempts of a 1 s stall limit, not the server's 60 s hold";
  const std::string dir = repo_dir("org/stalled-GGUF");
  EXPECT_FALSE(fs::exists(dir + "/snapshots"));
  EXPECT_FALSE(fs::exists(dir + "/refs"));
  for (const auto& e : fs::directory_iterator(dir + "/blobs")) {
    EXPECT_TRUE(e.path().string().ends_with(".incomplete")) << e.path();
  }
  const auto ls = run_command(env() + test::minfer_binary() + " ls");
  EXPECT_EQ(ls.out.find("stalled"), std::string::npos) << ls.out;

  const auto bad = run_command("HF_HUB_DOWNLOAD_TIMEOUT=soon " + env() + test::minfer_binary() +
                               " pull org/stories-GGUF");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("HF_HUB_DOWNLOAD_TIMEOUT='soon': expected a whole number of seconds"),
            std::string::npos)
      << bad.err;
}

TEST_F(HubTest, GatedRepositoryNeedsAToken) {
  const auto r = run_command(env() + test::minfer_binary() + " pull org/gated-GGUF");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("HTTP 401: the repository is gated or private: set HF_TOKEN"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
  options_.token = "secret";
  auto m = fetch("org/gated-GGUF");
  EXPECT_TRUE(m.is_ok()) << m.status().message();
}

TEST_F(HubTest, OfflineUsesOnlyTheCache) {
  options_.offline = true;
  auto cold = fetch("org/stories-GGUF");
  ASSERT_FALSE(cold.is_ok());
  EXPECT_NE(cold.status().message().find("offline mode is on"), std::string::npos)
      << cold.status().message();
  EXPECT_EQ(requests(), 0);
  options_.offline = false;
  ASSERT_TRUE(fetch("org/stories-GGUF").is_ok());
  const int64_t before = requests();
  const auto info =
      run_command("HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 HF_HUB_CACHE='" + cache_.path() +
                  "' " + test::minfer_binary() + " info -hf org/stories-GGUF");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("runs                   yes"), std::string::npos) << info.out;
  EXPECT_EQ(requests(), before);
}

TEST_F(HubTest, SplitModelIsDownloadedAndRuns) {
  const std::string args = " -t 2 -p 'Once upon a time' -n 12 --temp 0";
  const auto split =
      run_command(env() + test::minfer_binary() + " run -hf org/split-GGUF:Q8_0" + args);
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const auto whole = run_command(test::minfer_binary() + " run -m '" +
                                 shared_model("stories260K.gguf") + "'" + args);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(split.out, whole.out);
  EXPECT_FALSE(split.out.empty());
  const std::string dir = repo_dir("org/split-GGUF");
  const auto files = hub::snapshot_files(dir, *hub::read_ref(dir, "main"));
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], "Q8_0/stories-Q8_0-00001-of-00003.gguf");
  const auto ls = run_command(env() + test::minfer_binary() + " ls");
  EXPECT_NE(ls.out.find("Q8_0/stories-Q8_0-00003-of-00003.gguf"), std::string::npos) << ls.out;
}

TEST_F(HubTest, RemoveDeletesTheFilesAndUnusedBlobs) {
  ASSERT_TRUE(fetch("org/stories-GGUF:Q8_0").is_ok());
  ASSERT_TRUE(fetch("org/stories-GGUF:F16").is_ok());
  const std::string dir = repo_dir("org/stories-GGUF");
  auto n_blobs = [&] {
    return std::distance(fs::directory_iterator(dir + "/blobs"), fs::directory_iterator());
  };
  EXPECT_EQ(n_blobs(), 2);
  const auto rm = run_command(env() + test::minfer_binary() + " rm org/stories-GGUF:F16");
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(n_blobs(), 1);
  const auto ls = run_command(env() + test::minfer_binary() + " ls");
  EXPECT_EQ(ls.out.find("F16"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("stories260K-Q8_0.gguf"), std::string::npos) << ls.out;
  EXPECT_EQ(run_command(env() + test::minfer_binary() + " rm org/stories-GGUF").exit_code, 0);
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace minfer
