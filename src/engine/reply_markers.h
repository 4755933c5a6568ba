// Text helpers the reply parsers share (reply_parser.cpp, harmony_reply.cpp, gemma4_reply.cpp):
// finding markers in streamed text and holding back what may still become one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>

namespace minfer::engine {

inline bool is_reply_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

inline std::string_view trim_reply_text(std::string_view text) {
  while (!text.empty() && is_reply_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_reply_space(text.back())) text.remove_suffix(1);
  return text;
}

// The length of the longest suffix of `text` that is a proper prefix of `marker`: where the
// marker may yet begin.
inline size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t len = std::min(marker.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == marker.substr(0, len)) return len;
  }
  return 0;
}

// The longest partial_marker of `text` over `markers`.
inline size_t partial_any(std::string_view text, std::initializer_list<std::string_view> markers) {
  size_t held = 0;
  for (std::string_view m : markers) held = std::max(held, partial_marker(text, m));
  return held;
}

// The first whole marker of `markers` in `text`: its position and which one (npos when none).
struct MarkerAt {
  size_t at = std::string_view::npos;
  std::string_view marker;
};

inline MarkerAt first_marker(std::string_view text,
                             std::initializer_list<std::string_view> markers) {
  MarkerAt first;
  for (std::string_view m : markers) {
    const size_t at = text.find(m);
    if (at < first.at) first = {at, m};
  }
  return first;
}

// A call id as OpenAI writes them: "call_" and 24 letters or digits from `ids`.
inline std::string random_call_id(std::mt19937_64& ids) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[ids() % (sizeof(kAlnum) - 1)];
  return id;
}

}  // namespace minfer::engine
