#include "core/progress.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace minfer {

namespace {

constexpr int kBarWidth = 30;
// Redraw at most this often: a terminal write per tensor row would cost more than the work.
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

}  // namespace

Progress::Progress(std::string label, int64_t total, ProgressStyle style, FILE* out)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), style_(style), out_(out) {
  if (style_ == ProgressStyle::kAuto) {
    style_ = isatty(fileno(out_)) ? ProgressStyle::kBar : ProgressStyle::kPlain;
  }
  start_ = std::chrono::steady_clock::now();
  last_draw_ = start_ - kRedrawInterval;
}

Progress::~Progress() {
  finish();
}

void Progress::update(int64_t done, const std::string& detail) {
  if (finished_) return;
  done_ = std::clamp<int64_t>(done, 0, total_);
  if (style_ == ProgressStyle::kBar) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ >= kRedrawInterval || done_ == total_) {
      last_draw_ = now;
      draw_bar(detail);
    }
  } else if (style_ == ProgressStyle::kPlain) {
    // Integer arithmetic so that exactly one line per quarter is printed, whatever the steps.
    while (next_quarter_ <= 4 && done_ * 4 >= total_ * next_quarter_) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fputs(fmt::format("{}: {}% ({}/{}, {:.1f} s)\n", label_, next_quarter_ * 25, done_,
                             total_, seconds)
                     .c_str(),
                 out_);
      std::fflush(out_);
      ++next_quarter_;
    }
  }
}

void Progress::finish() {
  if (finished_) return;
  update(total_);
  finished_ = true;
  if (style_ == ProgressStyle::kBar) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

void Progress::draw_bar(const std::string& detail) {
  const int filled = static_cast<int>(done_ * kBarWidth / total_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  // \r returns to the line start, \x1b[K clears what a longer previous line left behind.
  std::fputs(fmt::format("\r{} [{}] {:3d}% {:.1f} s {}\x1b[K", label_, bar,
                         static_cast<int>(done_ * 100 / total_), seconds, detail)
                 .c_str(),
             out_);
  std::fflush(out_);
}

}  // namespace minfer
