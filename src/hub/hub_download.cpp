#include "hub/hub_download.h"

#include <openssl/evp.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/progress.h"
#include "hub/hub_cache.h"
#include "hub/hub_http.h"

namespace minfer::hub {

namespace fs = std::filesystem;

namespace {

struct RemoteFile {
  std::string path;
  uint64_t size = 0;
  std::string blob;  // lfs.oid (sha256) when the file is in LFS, else the git blob hash (sha1)
  bool lfs = false;
};

std::string label(const HubModelRef& ref) {
  return ref.quant.empty() ? ref.repo : ref.repo + ":" + ref.quant;
}

Status http_status_error(long status, const std::string& url, const std::string& repo) {
  if (status == 401 || status == 403) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[hub] {}: HTTP {}: the repository is gated or private: set HF_TOKEN to a "
                      "token with access (and accept its licence on the Hub)",
                      repo, status);
  }
  if (status == 404) {
    return make_error(ErrorCode::kNotFound,
                      "[hub] {}: HTTP 404: not found (check the repository "
                      "name and revision)",
                      url);
  }
  return make_error(ErrorCode::kIo, "[hub] {}: HTTP {}", url, status);
}

// One page of the file list: appends its files, returns the next page's URL ("" at the end).
Result<std::string> list_tree_page(const HttpClient& http, const std::string& url,
                                   const HubModelRef& ref, std::vector<RemoteFile>& files) {
  MINFER_ASSIGN_OR_RETURN(const HttpResponse r, http.get(url));
  if (r.status != 200) return http_status_error(r.status, url, ref.repo);
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_array()) {
    return make_error(ErrorCode::kCorrupt, "[hub] {}: expected a JSON array of files, got: {}", url,
                      r.body.substr(0, 200));
  }
  for (const nlohmann::json& e : j) {
    if (!e.is_object() || e.value("type", "") != "file" || !e.contains("path")) continue;
    RemoteFile f;
    f.path = e.value("path", "");
    f.size = e.value("size", uint64_t{0});
    f.blob = e.value("oid", "");
    if (e.contains("lfs") && e["lfs"].is_object()) {
      f.lfs = true;
      f.blob = e["lfs"].value("oid", "");
      f.size = e["lfs"].value("size", f.size);
    }
    const bool hex =
        !f.blob.empty() && f.blob.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex || f.path.find("..") != std::string::npos || f.path.starts_with("/")) {
      return make_error(ErrorCode::kCorrupt, "[hub] {}: entry '{}' has no usable path and hash",
                        url, f.path);
    }
    files.push_back(std::move(f));
  }
  return r.next_page;
}

// The repository's files; a long listing comes in pages linked by Link: <…>; rel="next".
Result<std::vector<RemoteFile>> list_tree(const HttpClient& http, const HubOptions& o,
                                          const HubModelRef& ref) {
  constexpr int kMaxPages = 1000;
  std::string url =
      o.endpoint + "/api/models/" + ref.repo + "/tree/" + ref.revision + "?recursive=true";
  std::vector<RemoteFile> files;
  for (int page = 0; page < kMaxPages && !url.empty(); ++page) {
    MINFER_ASSIGN_OR_RETURN(url, list_tree_page(http, url, ref, files));
    if (url.starts_with("/")) url = o.endpoint + url;
  }
  return files;
}

// The hex SHA-256 of the file (lfs), or its git blob hash: SHA-1 of "blob <size>\0" + bytes.
Result<std::string> file_hash(const std::string& path, bool lfs, uint64_t size) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return make_error(ErrorCode::kIo, "[hub] cannot read '{}'", path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), lfs ? EVP_sha256() : EVP_sha1(), nullptr);
  if (!lfs) {
    const std::string header = "blob " + std::to_string(size);
    EVP_DigestUpdate(ctx.get(), header.c_str(), header.size() + 1);  // with the '\0'
  }
  std::vector<unsigned char> buffer(1 << 20);
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) {
    EVP_DigestUpdate(ctx.get(), buffer.data(), n);
  }
  std::fclose(f);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const uint64_t s = fs::file_size(path, ec);
  return ec ? 0 : s;
}

Status check_free_space(const std::string& dir, uint64_t needed) {
  struct statvfs v {};
  if (statvfs(dir.c_str(), &v) != 0) return Status::ok();
  const uint64_t free_bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  if (free_bytes >= needed) return Status::ok();
  return make_error(ErrorCode::kResourceExhausted,
                    "[hub] not enough disk space in '{}': the download needs {} bytes, {} are free",
                    dir, needed, free_bytes);
}

std::string progress_detail(uint64_t done, uint64_t total, double seconds, uint64_t start) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const double rate = seconds > 0 ? static_cast<double>(done - start) / seconds : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
  return fmt::format("{:.1f}/{:.1f} MiB {:.1f} MiB/s ETA {:.0f} s", done / kMiB, total / kMiB,
                     rate / kMiB, eta);
}

// Downloads one file into blobs/<hash>, resuming after dropped connections.
Status fetch_blob(const HttpClient& http, const HubOptions& o, const HubModelRef& ref,
                  const std::string& commit, const RemoteFile& f, const std::string& blobs) {
  const std::string blob = blobs + "/" + f.blob;
  const std::string partial = blob + ".incomplete";
  const std::string url = o.endpoint + "/" + ref.repo + "/resolve/" + commit + "/" + f.path;
  uint64_t have = size_or_zero(partial);
  if (have > f.size) {
    fs::remove(partial);
    have = 0;
  }
  MINFER_RETURN_IF_ERROR(check_free_space(blobs, f.size - have));
  const bool bar = o.progress && isatty(fileno(stderr));
  Progress progress(f.path, static_cast<int64_t>(f.size),
                    bar ? ProgressStyle::kBar : ProgressStyle::kQuiet);
  Status last = Status::ok();
  for (int attempt = 0; attempt < o.max_attempts && have < f.size; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    const uint64_t start_bytes = have;
    const ProgressFn on_bytes = [&](uint64_t done) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.update(static_cast<int64_t>(done), progress_detail(done, f.size, s, start_bytes));
    };
    Result<HttpResponse> r = http.download(url, partial, have, on_bytes);
    if (r.is_ok() && (r->status < 200 || r->status >= 300)) {
      if (r->status == 416) fs::remove(partial);  // the partial file is longer than the blob
      return http_status_error(r->status, url, ref.repo);
    }
    const uint64_t now = size_or_zero(partial);
    if (!r.is_ok()) {
      // A write error (a full disk) ends it; a dropped or stalled connection is tried again
      // from where it stopped.
      last = r.status();
      if (r.status().message().starts_with("[hub] writing")) return r.status();
    }
    have = now;
    if (r.is_ok() && have < f.size) {
      last =
          make_error(ErrorCode::kIo, "[hub] {}: the server sent {} of {} bytes", url, have, f.size);
    }
  }
  if (have != f.size)
    return last.is_ok() ? make_error(ErrorCode::kIo, "[hub] {}: incomplete", url) : last;
  progress.finish();
  MINFER_ASSIGN_OR_RETURN(const std::string hash, file_hash(partial, f.lfs, f.size));
  if (hash != f.blob) {
    fs::remove(partial);
    return make_error(ErrorCode::kCorrupt,
                      "[hub] {}: {} of the download is {}, expected {} (from the Hub's file list); "
                      "the partial file was deleted, try again",
                      f.path, f.lfs ? "SHA-256" : "git hash", hash, f.blob);
  }
  std::error_code ec;
  fs::rename(partial, blob, ec);
  if (ec) return make_error(ErrorCode::kIo, "[hub] cannot rename '{}': {}", partial, ec.message());
  return Status::ok();
}

Result<std::string> read_commit(const HttpClient& http, const HubOptions& o, const HubModelRef& ref,
                                const std::string& first) {
  const std::string url = o.endpoint + "/" + ref.repo + "/resolve/" + ref.revision + "/" + first;
  MINFER_ASSIGN_OR_RETURN(const HttpResponse r, http.head(url));
  if (r.status >= 400) return http_status_error(r.status, url, ref.repo);
  std::string commit = r.repo_commit;
  if (commit.empty()) commit = ref.revision;
  if (commit.size() != 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return make_error(ErrorCode::kCorrupt,
                      "[hub] {}: expected an X-Repo-Commit header with a 40-digit commit, got '{}'",
                      url, r.repo_commit);
  }
  return commit;
}

// The model from the cache alone, when every file is there.
std::optional<HubModel> cached_model(const HubModelRef& ref, const std::string& repo_dir) {
  const std::optional<std::string> commit = read_ref(repo_dir, ref.revision);
  if (!commit) return std::nullopt;
  Result<std::vector<std::string>> picked =
      pick_gguf_files(snapshot_files(repo_dir, *commit), ref.quant, ref.repo);
  if (!picked.is_ok()) return std::nullopt;
  HubModel m{snapshot_path(repo_dir, *commit, picked->front()), *picked, 0, true};
  for (const std::string& p : *picked) m.bytes += size_or_zero(snapshot_path(repo_dir, *commit, p));
  return m;
}

}  // namespace

Result<HubOptions> hub_options_from_env() {
  HubOptions o;
  const char* endpoint = std::getenv("HF_ENDPOINT");
  o.endpoint = endpoint != nullptr && endpoint[0] != '\0' ? endpoint : "https://huggingface.co";
  while (o.endpoint.ends_with("/")) o.endpoint.pop_back();
  const char* token = std::getenv("HF_TOKEN");
  o.token = token != nullptr ? token : "";
  o.cache = hub_cache_dir();
  const char* offline = std::getenv("HF_HUB_OFFLINE");
  o.offline = offline != nullptr && (std::string(offline) == "1" || std::string(offline) == "true");
  const char* timeout = std::getenv("HF_HUB_DOWNLOAD_TIMEOUT");
  if (timeout != nullptr && timeout[0] != '\0') {
    long seconds = 0;
    const char* end = timeout + std::strlen(timeout);
    const auto [ptr, ec] = std::from_chars(timeout, end, seconds);
    if (ec != std::errc() || ptr != end || seconds < 1) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "[hub] HF_HUB_DOWNLOAD_TIMEOUT='{}': expected a whole number of seconds >= 1", timeout);
    }
    o.stall_timeout_s = seconds;
  }
  return o;
}

Result<HubModel> fetch_hub_model(const HubModelRef& ref, const HubOptions& o) {
  const std::string repo_dir = repo_cache_dir(o.cache, ref.repo);
  if (std::optional<HubModel> hit = cached_model(ref, repo_dir)) return *hit;
  if (o.offline) {
    return make_error(ErrorCode::kNotFound,
                      "[hub] {} is not in the cache ({}) and offline mode is on (--offline or "
                      "HF_HUB_OFFLINE=1)",
                      label(ref), o.cache);
  }
  const HttpClient http(HttpOptions{.token = o.token, .stall_timeout_s = o.stall_timeout_s});
  MINFER_ASSIGN_OR_RETURN(const std::vector<RemoteFile> remote, list_tree(http, o, ref));
  std::vector<std::string> paths;
  std::map<std::string, const RemoteFile*> by_path;
  for (const RemoteFile& f : remote) {
    paths.push_back(f.path);
    by_path[f.path] = &f;
  }
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string> picked,
                          pick_gguf_files(paths, ref.quant, ref.repo));
  MINFER_ASSIGN_OR_RETURN(const std::string commit, read_commit(http, o, ref, picked.front()));
  const std::string blobs = repo_dir + "/blobs";
  std::error_code ec;
  fs::create_directories(blobs, ec);
  if (ec) return make_error(ErrorCode::kIo, "[hub] cannot create '{}': {}", blobs, ec.message());
  HubModel m{snapshot_path(repo_dir, commit, picked.front()), picked, 0, true};
  for (const std::string& p : picked) {
    const RemoteFile& f = *by_path.at(p);
    m.bytes += f.size;
    if (size_or_zero(blobs + "/" + f.blob) != f.size || !fs::exists(blobs + "/" + f.blob)) {
      m.cached = false;
      MINFER_RETURN_IF_ERROR(fetch_blob(http, o, ref, commit, f, blobs));
    }
  }
  // Links only once every blob is in place: a failure leaves no partial model in snapshots/.
  for (const std::string& p : picked) {
    MINFER_RETURN_IF_ERROR(link_snapshot(repo_dir, commit, p, by_path.at(p)->blob));
  }
  MINFER_RETURN_IF_ERROR(write_ref(repo_dir, ref.revision, commit));
  return m;
}

}  // namespace minfer::hub
