// Helpers shared by the test programs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

// Defined in a build with AddressSanitizer (the `asan` preset): GCC says so with
// __SANITIZE_ADDRESS__, clang-14 only through __has_feature. Tests that bound time or memory
// report those costs there instead of checking them (ASan is several times slower and keeps
// shadow memory), and check everything else.
#if defined(__SANITIZE_ADDRESS__)
#define MINFER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MINFER_TEST_ASAN 1
#endif
#endif

namespace minfer::test {

// The shared test data folder: $MINFER_TEST_DATA, else ../shared beside the source tree.
// Empty when neither exists.
std::string test_data_dir();

// Why test_data_dir() is empty, naming the path it looked for; "" when the folder exists.
std::string test_data_missing();

// True in CI (CI=true, which .ci/run exports). There a missing prerequisite fails the test
// instead of skipping it: a skipped test checks nothing, and CI must not pass for it.
bool in_ci();

// Path of a file under the shared test data folder (no existence check).
std::string test_data_path(const std::string& relative);

// The built `minfer` binary ($MINFER_BIN, else <build>/minfer).
std::string minfer_binary();

// Runs a shell command, capturing stdout and stderr separately.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult run_command(const std::string& command);

// s in single quotes for the shell, its own quotes escaped.
std::string shell_quote(const std::string& s);

// `minfer run -t 2 ARGS`, and `minfer chat -t 2 ARGS` with `lines` piped to its stdin (in a
// subshell: run_command feeds the command /dev/null).
CommandResult run_minfer_run(const std::string& args);
CommandResult run_minfer_chat(const std::string& lines, const std::string& args);

// The number of '\n' in s.
size_t count_lines(const std::string& s);

// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<uint8_t> read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace minfer::test

// Skips the test with `message` (streamed, as after GTEST_SKIP()); in CI, fails it instead.
#define MINFER_SKIP_OR_FAIL(message)                                                        \
  do {                                                                                      \
    if (::minfer::test::in_ci()) {                                                          \
      GTEST_FAIL() << "CI=true: " << message                                                \
                   << " (a missing prerequisite fails in CI instead of skipping the test)"; \
    }                                                                                       \
    GTEST_SKIP() << message;                                                                \
  } while (0)

// Skips the test, visibly, when the shared test data is missing; fails it in CI.
#define MINFER_REQUIRE_TEST_DATA()                                               \
  do {                                                                           \
    if (const std::string minfer_missing_ = ::minfer::test::test_data_missing(); \
        !minfer_missing_.empty()) {                                              \
      MINFER_SKIP_OR_FAIL("shared test data not found: " << minfer_missing_);    \
    }                                                                            \
  } while (0)
