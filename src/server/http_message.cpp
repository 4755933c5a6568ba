#include "server/http_message.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace minfer::server {

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) <
           std::tolower(static_cast<unsigned char>(y));
  });
}

std::string HttpRequest::get_header_value(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

bool HttpRequest::has_header(std::string_view name) const {
  return headers.find(name) != headers.end();
}

bool HttpRequest::has_param(const std::string& name) const {
  return params.find(name) != params.end();
}

std::string HttpRequest::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

void HttpResponse::set_header(const std::string& name, const std::string& value) {
  headers.emplace(name, value);
}

void HttpResponse::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  headers.erase("Content-Type");
  headers.emplace("Content-Type", content_type);
}

void HttpResponse::set_chunked_content_provider(const std::string& content_type,
                                                StreamProducer producer,
                                                std::function<void()> ended) {
  headers.erase("Content-Type");
  headers.emplace("Content-Type", content_type);
  stream = std::move(producer);
  stream_ended = std::move(ended);
}

namespace {

// %XX escapes and '+' decoded; a malformed escape stays as written.
std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
      continue;
    }
    unsigned byte = 0;
    const char* digits = s.data() + i + 1;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(digits, digits + 2, byte, 16).ptr == digits + 2) {
      out.push_back(static_cast<char>(byte));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::multimap<std::string, std::string> parse_query(std::string_view query) {
  std::multimap<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view field = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (field.empty()) continue;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      out.emplace(percent_decode(field), "");
    } else {
      out.emplace(percent_decode(field.substr(0, eq)), percent_decode(field.substr(eq + 1)));
    }
  }
  return out;
}

}  // namespace minfer::server
