// Wall time of forward steps, for the figures `minfer run` and `minfer bench` print.
#pragma once

#include <algorithm>
#include <cstdint>

namespace minfer::engine {

// Wall time of forward steps, in milliseconds.
struct ForwardTimes {
  int64_t count = 0;
  double total_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;

  void add(double ms) {
    min_ms = count == 0 ? ms : std::min(min_ms, ms);
    max_ms = count == 0 ? ms : std::max(max_ms, ms);
    total_ms += ms;
    ++count;
  }
  double mean_ms() const { return count > 0 ? total_ms / static_cast<double>(count) : 0.0; }
};

}  // namespace minfer::engine
