#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace minfer::test {

namespace fs = std::filesystem;

namespace {

// The shared test data folder, or why there is none.
struct TestDataLookup {
  std::string dir;
  std::string missing;
};

TestDataLookup look_up_test_data() {
  if (const char* env = std::getenv("MINFER_TEST_DATA"); env != nullptr && *env != '\0') {
    if (fs::is_directory(env)) return {env, ""};
    return {"", "MINFER_TEST_DATA=" + std::string(env) + " is not a directory"};
  }
  const fs::path fallback(MINFER_DEFAULT_TEST_DATA);
  if (fs::is_directory(fallback / "models")) return {fs::weakly_canonical(fallback).string(), ""};
  return {"", (fallback / "models").string() +
                  " is not a directory (set MINFER_TEST_DATA or provide ../shared)"};
}

}  // namespace

std::string test_data_dir() {
  return look_up_test_data().dir;
}

std::string test_data_missing() {
  return look_up_test_data().missing;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string test_data_path(const std::string& relative) {
  return test_data_dir() + "/" + relative;
}

std::string minfer_binary() {
  if (const char* env = std::getenv("MINFER_BIN"); env != nullptr && *env != '\0') return env;
  return std::string(MINFER_BINARY_DIR) + "/minfer";
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

CommandResult run_command(const std::string& command) {
  TempDir dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  const std::string full = command + " >'" + out_path + "' 2>'" + err_path + "' </dev/null";
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

CommandResult run_minfer_run(const std::string& args) {
  return run_command(minfer_binary() + " run -t 2 " + args);
}

CommandResult run_minfer_chat(const std::string& lines, const std::string& args) {
  return run_command("(printf '%s' " + shell_quote(lines) + " | " + minfer_binary() +
                     " chat -t 2 " + args + ")");
}

size_t count_lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "minfer-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace minfer::test
