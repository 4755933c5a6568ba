#include "quant_test_util.h"

#include <algorithm>

namespace minfer::test {

namespace {

struct GroupModel {
  int group;        // elements sharing one step
  bool range;       // step from (max - min(min, 0)) (asymmetric) or from absmax
  bool full_range;  // asymmetric with the true min (Q4_1/Q5_1), not clamped at 0
  double levels;    // step = spread / levels
};

GroupModel model_for(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ8_1:
      return {32, false, false, 127};
    case GgmlType::kQ8_K:
      return {256, false, false, 127};
    case GgmlType::kQ4_0:
      return {32, false, false, 8};
    case GgmlType::kQ5_0:
      return {32, false, false, 16};
    case GgmlType::kQ4_1:
      return {32, true, true, 15};
    case GgmlType::kQ5_1:
      return {32, true, true, 31};
    case GgmlType::kQ6_K:
      return {16, false, false, 32};
    case GgmlType::kQ3_K:
      return {16, false, false, 4};
    case GgmlType::kQ2_K:
      return {16, true, false, 3};
    case GgmlType::kQ4_K:
      return {32, true, false, 15};
    case GgmlType::kQ5_K:
      return {32, true, false, 31};
    default:
      return {0, false, false, 0};
  }
}

}  // namespace

double nominal_error_rms(GgmlType type, const std::vector<float>& x) {
  double sum_sq_step = 0.0;
  if (type == GgmlType::kF16 || type == GgmlType::kBF16) {
    const int mantissa_bits = type == GgmlType::kF16 ? 10 : 7;
    for (float v : x) {
      if (v == 0.0f) continue;
      int e = std::ilogb(v);
      if (type == GgmlType::kF16) e = std::max(e, -14);  // subnormal spacing is fixed
      const double step = std::ldexp(1.0, e - mantissa_bits);
      sum_sq_step += step * step;
    }
  } else {
    const GroupModel m = model_for(type);
    for (size_t g = 0; g + m.group <= x.size(); g += m.group) {
      const auto [lo, hi] = std::minmax_element(x.begin() + g, x.begin() + g + m.group);
      double spread;
      if (m.range) {
        const double min = m.full_range ? *lo : std::min(0.0f, *lo);
        spread = *hi - min;
      } else {
        spread = std::max(std::fabs(*lo), std::fabs(*hi));
      }
      const double step = spread / m.levels;
      sum_sq_step += step * step * m.group;
    }
  }
  return std::sqrt(sum_sq_step / 12.0 / static_cast<double>(x.size()));
}

double allowed_error_factor(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return 1.15;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return 1.25;
    default:
      return 1.10;
  }
}

}  // namespace minfer::test
