// Progress of long work (make-model, quantize, perplexity, bench) on stderr: a redrawn bar when
// stderr is a terminal, otherwise a plain line at each quarter (25, 50, 75, 100 %) so logs and
// pipes stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/non_copyable.h"

namespace minfer {

enum class ProgressStyle {
  kAuto,   // a bar when the stream is a TTY (isatty), plain lines otherwise
  kBar,    // always the bar
  kPlain,  // always plain lines
  kQuiet,  // nothing
};

class Progress : NonCopyable {
 public:
  // `total` units of work (> 0); `label` starts every line ("quantize", …).
  Progress(std::string label, int64_t total, ProgressStyle style = ProgressStyle::kAuto,
           FILE* out = stderr);
  ~Progress();

  // Sets the units done so far (clamped to total); `detail` (e.g. a tensor name) is shown on
  // the bar only.
  void update(int64_t done, const std::string& detail = "");
  // Marks the work complete (100 %) and ends the bar's line. Called by the destructor if needed.
  void finish();

  bool is_bar() const { return style_ == ProgressStyle::kBar; }

 private:
  void draw_bar(const std::string& detail);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  ProgressStyle style_;
  FILE* out_;
  int next_quarter_ = 1;  // plain style: the next quarter (1..4) to report
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace minfer
