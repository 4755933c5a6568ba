// Small statistics over a block of floats that several quantizers start from (internal to
// src/quant). Each is written in the order llama.cpp's reference quantizers use, since the
// element chosen on ties decides the scale's sign and so every byte of the result.
#pragma once

#include <algorithm>
#include <cmath>

namespace minfer::quant_util {

// The element of largest magnitude, with its sign (the first one on ties), and that magnitude.
struct SignedMax {
  float value = 0.0f;
  float magnitude = 0.0f;
};

inline SignedMax signed_absmax(const float* x, int n) {
  SignedMax m;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > m.magnitude) {
      m.magnitude = ax;
      m.value = x[i];
    }
  }
  return m;
}

inline int clamp_int(int v, int lo, int hi) {
  return std::max(lo, std::min(hi, v));
}

}  // namespace minfer::quant_util
