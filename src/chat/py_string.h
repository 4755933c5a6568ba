// Python str operations over UTF-8 std::string: Jinja2 templates call Python's str methods
// (split, strip, title, ...), whose results depend on code points and on Python's notion of
// whitespace and case, not on bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace minfer::chat {

// UTF-8 -> code points. Invalid bytes decode as themselves (U+0080..U+00FF) so nothing is lost.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view cps);
// Number of code points (Python's len(str)).
size_t utf8_length(std::string_view s);

// str.isspace() for one code point (Unicode White_Space as CPython defines it).
bool py_is_space(char32_t cp);
// str.upper() / str.lower() for one code point: ASCII, Latin-1, Greek and Cyrillic letters
// (the one-to-one mappings; characters that expand, like German sharp s, are left as they are).
char32_t py_upper(char32_t cp);
char32_t py_lower(char32_t cp);
bool py_is_alpha(char32_t cp);

std::string py_str_repr(std::string_view s);

std::string py_upper_str(std::string_view s);
std::string py_lower_str(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()

// str.strip/lstrip/rstrip(chars): chars == nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split(sep, maxsplit) / str.rsplit: sep == nullopt splits on runs of whitespace.
// Precondition: sep, when given, is not empty (the caller raises ValueError).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit);
// str.splitlines() (without keepends).
std::vector<std::string> py_splitlines(std::string_view s);
std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                       int64_t count);
// str.count(sub) (non-overlapping; an empty sub counts len+1).
int64_t py_count(std::string_view s, std::string_view sub);
// str.find(sub) as a code point index, -1 when absent.
int64_t py_find(std::string_view s, std::string_view sub, bool reverse);

}  // namespace minfer::chat
