#include "hub/hub_http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

namespace minfer::hub {

namespace {

constexpr size_t kMaxErrorBody = 4096;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// What the callbacks of one transfer share.
struct Transfer {
  CURL* curl = nullptr;
  HttpResponse response;
  FILE* file = nullptr;  // download target, else the body goes to response.body
  uint64_t offset = 0;   // download: bytes already in the file
  bool checked_status = false;
  bool to_file = false;
  int write_errno = 0;
  const ProgressFn* progress = nullptr;
};

// The URL of rel="next" in a Link header value: `<URL>; rel="next"[, …]`.
std::string next_link(std::string_view value) {
  size_t at = 0;
  while ((at = value.find('<', at)) != std::string_view::npos) {
    const size_t end = value.find('>', at);
    if (end == std::string_view::npos) break;
    const size_t comma = value.find(',', end);
    const std::string_view params =
        value.substr(end, comma == std::string_view::npos ? value.npos : comma - end);
    if (params.find("rel=\"next\"") != std::string_view::npos) {
      return std::string(value.substr(at + 1, end - at - 1));
    }
    at = end;
  }
  return "";
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * n);
  constexpr std::string_view kLink = "link:";
  if (line.size() > kLink.size() && strncasecmp(line.data(), kLink.data(), kLink.size()) == 0) {
    t->response.next_page = next_link(line.substr(kLink.size()));
  }
  constexpr std::string_view kCommit = "x-repo-commit:";
  if (line.size() > kCommit.size() &&
      strncasecmp(line.data(), kCommit.data(), kCommit.size()) == 0) {
    std::string v(line.substr(kCommit.size()));
    const size_t b = v.find_first_not_of(" \t");
    const size_t e = v.find_last_not_of(" \t\r\n");
    t->response.repo_commit = b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return size * n;
}

// On the first body bytes: the final status decides where the body goes.
void decide_target(Transfer& t) {
  t.checked_status = true;
  curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.response.status);
  t.to_file = t.file != nullptr && t.response.status >= 200 && t.response.status < 300;
  if (t.to_file && t.offset > 0 && t.response.status == 200) {
    // The server ignored Range: start over.
    if (ftruncate(fileno(t.file), 0) != 0) t.write_errno = errno;
    std::fseek(t.file, 0, SEEK_SET);
    t.offset = 0;
  }
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (!t->checked_status) decide_target(*t);
  if (!t->to_file) {
    if (t->response.body.size() < kMaxErrorBody || t->file == nullptr) {
      t->response.body.append(data, bytes);
    }
    return bytes;
  }
  if (t->write_errno != 0 || std::fwrite(data, 1, bytes, t->file) != bytes) {
    if (t->write_errno == 0) t->write_errno = errno != 0 ? errno : EIO;
    return 0;  // CURLE_WRITE_ERROR
  }
  t->response.bytes_written += bytes;
  if (t->progress != nullptr && *t->progress) (*t->progress)(t->offset + t->response.bytes_written);
  return bytes;
}

Status transport_error(CURLcode code, const std::string& url, const char* detail) {
  const char* what = detail[0] != '\0' ? detail : curl_easy_strerror(code);
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return make_error(ErrorCode::kIo, "[hub] {}: timed out ({})", url, what);
  }
  return make_error(ErrorCode::kIo, "[hub] {}: {}", url, what);
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  global_init();
}

namespace {

Result<HttpResponse> perform(const HttpOptions& o, const std::string& url, Transfer& t, bool head) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return make_error(ErrorCode::kInternal, "[hub] curl_easy_init failed");
  t.curl = curl.get();
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  curl_slist* list = curl_slist_append(nullptr, "User-Agent: minfer/0.1");
  if (!o.token.empty()) {
    list = curl_slist_append(list, ("Authorization: Bearer " + o.token).c_str());
  }
  const std::string range = t.offset > 0 ? "Range: bytes=" + std::to_string(t.offset) + "-" : "";
  if (!range.empty()) list = curl_slist_append(list, range.c_str());
  headers.reset(list);
  char error[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, head ? 0L : 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  const CURLcode code = curl_easy_perform(c);
  if (t.write_errno != 0) {
    return make_error(ErrorCode::kIo, "[hub] writing the download failed: {}",
                      std::strerror(t.write_errno));
  }
  if (code != CURLE_OK) return transport_error(code, url, error);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  return std::move(t.response);
}

}  // namespace

Result<HttpResponse> HttpClient::get(const std::string& url) const {
  Transfer t;
  return perform(options_, url, t, false);
}

Result<HttpResponse> HttpClient::head(const std::string& url) const {
  Transfer t;
  return perform(options_, url, t, true);
}

Result<HttpResponse> HttpClient::download(const std::string& url, const std::string& path,
                                          uint64_t offset, const ProgressFn& progress) const {
  FILE* file = std::fopen(path.c_str(), offset > 0 ? "ab" : "wb");
  if (file == nullptr) {
    return make_error(ErrorCode::kIo, "[hub] cannot open '{}' for writing: {}", path,
                      std::strerror(errno));
  }
  Transfer t;
  t.file = file;
  t.offset = offset;
  t.progress = &progress;
  Result<HttpResponse> r = perform(options_, url, t, false);
  const bool closed = std::fclose(file) == 0;
  if (r.is_ok() && !closed) {
    return make_error(ErrorCode::kIo, "[hub] writing '{}' failed: {}", path, std::strerror(errno));
  }
  return r;
}

}  // namespace minfer::hub
