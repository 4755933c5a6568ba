// Names of an enum's values, read from a table instead of a switch. For enums whose values run
// 0..N-1; the table lists the names in value order, and a static_assert beside it pins its
// length to the enum:
//   constexpr std::array<const char*, 3> kColorNames = {"red", "green", "blue"};
//   static_assert(kColorNames.size() == static_cast<size_t>(Color::kBlue) + 1);
//   const char* color_name(Color c) { return enum_name(kColorNames, c, "unknown"); }
#pragma once

#include <array>
#include <cstddef>

namespace minfer {

// names[value], or `unknown` for a value outside the table (an integer cast to the enum).
template <typename Enum, size_t N>
constexpr const char* enum_name(const std::array<const char*, N>& names, Enum value,
                                const char* unknown) {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : unknown;
}

}  // namespace minfer
