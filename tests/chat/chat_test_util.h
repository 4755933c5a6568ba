// Helpers for the chat template tests: render cases with minfer's interpreter and with the
// reference renderer (scripts/render_template.py under Debian's /usr/bin/python3 + jinja2),
// then compare byte for byte.
#pragma once

#include <gtest/gtest.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "test_util.h"

namespace minfer::chat::test {

using ojson = nlohmann::ordered_json;

// CPU time of this thread: what a parse or render costs, whatever else the test machine runs.
inline double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline std::string repo_root() {
  // The source tree, as CMake knows it (__FILE__ may be relative, e.g. under ccache's base_dir).
  return MINFER_SOURCE_DIR;
}

inline std::string reference_script() {
  return repo_root() + "/scripts/render_template.py";
}

// Why the Python reference cannot run here, or "" when it can.
inline std::string python_unavailable_reason() {
  static const std::string reason = [] {
    if (!std::filesystem::exists("/usr/bin/python3"))
      return std::string("/usr/bin/python3 is missing");
    auto r = minfer::test::run_command("/usr/bin/python3 -c 'import jinja2' 2>&1");
    if (r.exit_code != 0) return "python3-jinja2 is not installed: " + r.out;
    return std::string();
  }();
  return reason;
}

#define MINFER_REQUIRE_PYTHON_JINJA2()                                                            \
  do {                                                                                            \
    std::string minfer_reason_ = ::minfer::chat::test::python_unavailable_reason();               \
    if (!minfer_reason_.empty()) {                                                                \
      MINFER_SKIP_OR_FAIL("reference renderer unavailable ("                                      \
                          << minfer_reason_                                                       \
                          << "); install Debian's python3-jinja2 to compare with Python Jinja2"); \
    }                                                                                             \
  } while (0)

struct Case {
  std::string name;
  std::string template_source;
  ojson request;
  std::string bos_token;
  std::string eos_token;
  // What Jinja2 renders instead of `request` where minfer gives the template other messages
  // than the request's (null: the request).
  ojson python_request = nullptr;
};

struct Rendered {
  bool ok = false;
  std::string output;  // the prompt, or the error message
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Renders every case with Python Jinja2 in one interpreter run.
inline std::vector<Rendered> render_with_python(const std::vector<Case>& cases) {
  minfer::test::TempDir dir;
  ojson batch = ojson::array();
  for (const Case& c : cases) {
    batch.push_back({{"template", c.template_source},
                     {"request", c.python_request.is_null() ? c.request : c.python_request},
                     {"bos_token", c.bos_token},
                     {"eos_token", c.eos_token}});
  }
  std::string path = dir.file("batch.json");
  {
    std::ofstream out(path, std::ios::binary);
    out << batch.dump();
  }
  auto r = minfer::test::run_command("/usr/bin/python3 " + reference_script() + " --batch " + path);
  std::vector<Rendered> results;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return results;
  ojson parsed = ojson::parse(r.out);
  for (const auto& item : parsed) {
    Rendered x;
    x.ok = item.at("ok").get<bool>();
    x.output = x.ok ? item.at("output").get<std::string>() : item.at("error").get<std::string>();
    results.push_back(std::move(x));
  }
  EXPECT_EQ(results.size(), cases.size());
  return results;
}

inline Rendered render_with_minfer(const Case& c) {
  auto tmpl = ChatTemplate::create(c.template_source, c.bos_token, c.eos_token);
  if (!tmpl.is_ok()) return {false, tmpl.status().message()};
  auto out = tmpl->render_request(c.request);
  if (!out.is_ok()) return {false, out.status().message()};
  return {true, out.value()};
}

// Compares minfer with Python on every case; returns how many cases rendered without error.
inline int expect_same_as_python(const std::vector<Case>& cases) {
  std::vector<Rendered> expected = render_with_python(cases);
  if (expected.size() != cases.size()) return 0;
  int rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Rendered got = render_with_minfer(cases[i]);
    const Rendered& want = expected[i];
    if (want.ok) {
      ++rendered;
      EXPECT_TRUE(got.ok) << cases[i].name
                          << ": minfer failed where Jinja2 rendered: " << got.output;
      if (got.ok) {
        EXPECT_EQ(got.output, want.output) << cases[i].name;
      }
    } else {
      EXPECT_FALSE(got.ok) << cases[i].name << ": Jinja2 raised (" << want.output
                           << ") but minfer rendered:\n"
                           << got.output;
    }
  }
  return rendered;
}

}  // namespace minfer::chat::test
