// Milliseconds between two steady-clock readings.
#pragma once

#include <chrono>

namespace minfer {

inline double ms_between(std::chrono::steady_clock::time_point a,
                         std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace minfer
