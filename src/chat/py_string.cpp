#include "chat/py_string.h"

#include <algorithm>

#include <fmt/format.h>

#include "chat/budget.h"

namespace minfer::chat {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b0 = static_cast<unsigned char>(s[i]);
    int extra = 0;
    char32_t cp = 0;
    if (b0 < 0x80) {
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      extra = 1;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      extra = 2;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      extra = 3;
      cp = b0 & 0x07;
    } else {
      out.push_back(b0);
      ++i;
      continue;
    }
    if (i + static_cast<size_t>(extra) >= s.size()) {
      out.push_back(b0);
      ++i;
      continue;
    }
    bool ok = true;
    for (int k = 1; k <= extra; ++k) {
      auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    if (!ok) {
      out.push_back(b0);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

std::string utf8_encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) utf8::append(out, cp);
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

bool py_is_space(char32_t cp) {
  // CPython's _PyUnicode_IsWhitespace: bidirectional types WS, B, S and category Zs.
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

char32_t py_upper(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0x80) return cp;
  if (cp == 0xB5) return 0x39C;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 &&
      cp != 0x17F) {
    // Latin Extended-A pairs: even upper, odd lower, except the block 0x139..0x148 and
    // 0x179..0x17E which are odd upper, even lower.
    bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_upper) return (cp % 2 == 0) ? cp - 1 : cp;
    return (cp % 2 == 1) ? cp - 1 : cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

char32_t py_lower(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 &&
      cp != 0x17F) {
    bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_upper) return (cp % 2 == 1) ? cp + 1 : cp;
    return (cp % 2 == 0) ? cp + 1 : cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool py_is_alpha(char32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return true;
  if (cp < 0x80) return false;
  if (py_upper(cp) != cp || py_lower(cp) != cp) return true;
  // Caseless letters (CJK, kana, Hangul, ...) count as alphabetic in Python too.
  return (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x3400 && cp <= 0x9FFF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || cp == 0xAA || cp == 0xBA || cp == 0xDF;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.push_back(quote);
  for (char32_t cp : utf8_decode(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD) {
      out += fmt::format("\\x{:02x}", static_cast<uint32_t>(cp));
    } else if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
               (cp >= 0x205F && cp <= 0x206F) || cp == 0x1680 || cp == 0x3000 || cp == 0xFEFF ||
               (cp >= 0xD800 && cp <= 0xDFFF)) {
      // Not printable for Python (separators, format characters): escaped.
      out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
    } else {
      utf8::append(out, cp);
    }
  }
  out.push_back(quote);
  return out;
}

std::string py_upper_str(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : utf8_decode(s)) {
    if (cp == 0xDF) {
      out += "SS";  // German sharp s upper-cases to two letters in Python
    } else {
      utf8::append(out, py_upper(cp));
    }
  }
  return out;
}

std::string py_lower_str(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : utf8_decode(s)) utf8::append(out, py_lower(cp));
  return out;
}

std::string py_title(std::string_view s) {
  // str.title(): a cased letter after an uncased character starts a word.
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : utf8_decode(s)) {
    bool cased = py_upper(cp) != cp || py_lower(cp) != cp;
    if (cased) {
      utf8::append(out, previous_cased ? py_lower(cp) : py_upper(cp));
    } else {
      utf8::append(out, cp);
    }
    previous_cased = cased;
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::u32string cps = utf8_decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i)
    utf8::append(out, i == 0 ? py_upper(cps[i]) : py_lower(cps[i]));
  return out;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::u32string cps = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : py_is_space(cp);
  };
  size_t begin = 0;
  size_t end = cps.size();
  if (left) {
    while (begin < end && strip_it(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip_it(cps[end - 1])) --end;
  }
  return utf8_encode(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      check_list_items(parts.size() + 1, 0);
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    check_list_items(parts.size() + 1, 0);
    parts.emplace_back(s.substr(start));
    return parts;
  }
  std::u32string cps = utf8_decode(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && py_is_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      // The rest, with its leading whitespace removed but its trailing whitespace kept.
      check_list_items(parts.size() + 1, 0);
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(i)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !py_is_space(cps[j])) ++j;
    check_list_items(parts.size() + 1, 0);
    parts.push_back(utf8_encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      check_list_items(parts.size() + 1, 0);
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    check_list_items(parts.size() + 1, 0);
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  std::u32string cps = utf8_decode(s);
  size_t j = cps.size();
  while (true) {
    while (j > 0 && py_is_space(cps[j - 1])) --j;
    if (j == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      check_list_items(parts.size() + 1, 0);
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(0, j)));
      break;
    }
    size_t i = j;
    while (i > 0 && !py_is_space(cps[i - 1])) --i;
    check_list_items(parts.size() + 1, 0);
    parts.push_back(utf8_encode(std::u32string_view(cps).substr(i, j - i)));
    j = i;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  std::u32string cps = utf8_decode(s);
  std::u32string current;
  size_t i = 0;
  while (i < cps.size()) {
    char32_t cp = cps[i];
    bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                    cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (is_break) {
      check_list_items(lines.size() + 1, 0);
      lines.push_back(utf8_encode(current));
      current.clear();
      if (cp == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    } else {
      current.push_back(cp);
    }
    ++i;
  }
  if (!current.empty()) lines.push_back(utf8_encode(current));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                       int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::u32string cps = utf8_decode(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        append_checked(out, new_text, 0);
        ++done;
      }
      utf8::append(out, cp);
    }
    if (count < 0 || done < count) append_checked(out, new_text, 0);
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old_text, start);
    if (at == std::string_view::npos) break;
    append_checked(out, s.substr(start, at - start), 0);
    append_checked(out, new_text, 0);
    start = at + old_text.size();
    ++done;
  }
  append_checked(out, s.substr(start), 0);
  return out;
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sub, start);
    if (at == std::string_view::npos) return n;
    ++n;
    start = at + sub.size();
  }
}

int64_t py_find(std::string_view s, std::string_view sub, bool reverse) {
  size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8_length(s.substr(0, at)));
}

}  // namespace minfer::chat
