// HTTP for the Hub client, on libcurl: a GET whose body is kept, a HEAD, and a download that
// appends to a file from a byte offset (Range). Redirects are followed (except by head); a
// bearer token goes only to the host it was meant for (libcurl drops custom Authorization
// headers on a redirect to another host). Transport failures (no connection, a timeout, a
// dropped connection, a full disk) are errors; an HTTP status is not: the caller reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"

namespace minfer::hub {

struct HttpResponse {
  long status = 0;
  std::string body;            // get, and the first 4 KiB of a download's error body
  std::string repo_commit;     // the X-Repo-Commit header of any response on the way, if any
  uint64_t bytes_written = 0;  // download: bytes appended to the file
  std::string next_page;       // the URL of a Link header's rel="next" (a paginated listing)
};

struct HttpOptions {
  std::string token;            // sent as "Authorization: Bearer <token>" when not empty
  long connect_timeout_s = 30;  // to open a connection
  long stall_timeout_s = 60;    // a transfer slower than 1 byte/s for this long is a timeout
};

// Where the bytes go: called with the running total appended to the file.
using ProgressFn = std::function<void(uint64_t bytes_written)>;

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);

  Result<HttpResponse> get(const std::string& url) const;
  Result<HttpResponse> head(const std::string& url) const;
  // Appends the body to `path`, asking for bytes from `offset` on (Range) when > 0; a server
  // that answers 200 to a Range request rewrites the file from the start. The body of a
  // non-2xx answer is not written.
  Result<HttpResponse> download(const std::string& url, const std::string& path, uint64_t offset,
                                const ProgressFn& progress) const;

 private:
  HttpOptions options_;
};

}  // namespace minfer::hub
