#include "hub/hub_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "hub/hub_select.h"

namespace minfer::hub {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The repository of a cache folder name ("models--org--name" → "org/name").
std::optional<std::string> repo_of_folder(const std::string& folder) {
  constexpr std::string_view kPrefix = "models--";
  if (!folder.starts_with(kPrefix)) return std::nullopt;
  const std::string rest = folder.substr(kPrefix.size());
  const size_t sep = rest.find("--");
  if (sep == std::string::npos) return std::nullopt;
  return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

std::set<std::string> used_blobs(const fs::path& repo_dir) {
  std::set<std::string> used;
  std::error_code ec;
  const fs::path snapshots = repo_dir / "snapshots";
  if (!fs::exists(snapshots, ec)) return used;
  for (auto it = fs::recursive_directory_iterator(snapshots, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) used.insert(fs::read_symlink(it->path(), ec).filename().string());
  }
  return used;
}

}  // namespace

std::string hub_cache_dir() {
  if (std::string v = env_or_empty("HF_HUB_CACHE"); !v.empty()) return v;
  if (std::string v = env_or_empty("HF_HOME"); !v.empty()) return v + "/hub";
  std::string home = env_or_empty("HOME");
  if (home.empty()) home = ".";
  return home + "/.cache/huggingface/hub";
}

std::string repo_cache_dir(const std::string& cache, const std::string& repo) {
  std::string folder = "models--" + repo;
  const size_t slash = folder.find('/');
  if (slash != std::string::npos) folder.replace(slash, 1, "--");
  return cache + "/" + folder;
}

std::optional<std::string> read_ref(const std::string& repo_dir, const std::string& revision) {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(repo_dir + "/refs/" + revision);
  std::string commit;
  if (!(in >> commit) || !is_commit_hash(commit)) return std::nullopt;
  return commit;
}

Status write_ref(const std::string& repo_dir, const std::string& revision,
                 const std::string& commit) {
  if (revision == commit) return Status::ok();
  const fs::path ref = fs::path(repo_dir) / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  const fs::path tmp = ref.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << commit;
    if (!out.flush()) {
      return make_error(ErrorCode::kIo, "[hub] cannot write '{}'", tmp.string());
    }
  }
  fs::rename(tmp, ref, ec);
  if (ec)
    return make_error(ErrorCode::kIo, "[hub] cannot write '{}': {}", ref.string(), ec.message());
  return Status::ok();
}

std::string snapshot_path(const std::string& repo_dir, const std::string& commit,
                          const std::string& path) {
  return repo_dir + "/snapshots/" + commit + "/" + path;
}

std::vector<std::string> snapshot_files(const std::string& repo_dir, const std::string& commit) {
  std::vector<std::string> out;
  const fs::path root = fs::path(repo_dir) / "snapshots" / commit;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code file_ec;
    if (fs::is_regular_file(it->path(), file_ec)) {  // follows the symlink: the blob is there
      out.push_back(it->path().lexically_relative(root).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status link_snapshot(const std::string& repo_dir, const std::string& commit,
                     const std::string& path, const std::string& blob) {
  const fs::path link = snapshot_path(repo_dir, commit, path);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "[hub] cannot create '{}': {}", link.parent_path().string(),
                      ec.message());
  }
  // snapshots/<commit>/<path>: up two folders, plus one per folder inside <path>.
  std::string target = "../../";
  for (char c : path) {
    if (c == '/') target += "../";
  }
  target += "blobs/" + blob;
  const fs::path tmp = link.string() + ".tmp." + std::to_string(getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "[hub] cannot link '{}' to '{}': {}", link.string(), target,
                      ec.message());
  }
  return Status::ok();
}

std::vector<CachedFile> list_cached_gguf(const std::string& cache) {
  std::vector<CachedFile> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cache, ec)) {
    const std::optional<std::string> repo = repo_of_folder(entry.path().filename().string());
    if (!repo) continue;
    std::error_code snap_ec;
    for (const auto& snap : fs::directory_iterator(entry.path() / "snapshots", snap_ec)) {
      const std::string commit = snap.path().filename().string();
      for (const std::string& path : snapshot_files(entry.path().string(), commit)) {
        if (!path.ends_with(".gguf")) continue;
        std::error_code size_ec;
        const uint64_t size = fs::file_size(snap.path() / path, size_ec);
        out.push_back({*repo, commit, path, size_ec ? 0 : size});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const CachedFile& a, const CachedFile& b) {
    return std::tie(a.repo, a.path, a.commit) < std::tie(b.repo, b.path, b.commit);
  });
  return out;
}

Result<std::vector<std::string>> remove_cached(const std::string& cache, const std::string& repo,
                                               const std::string& quant) {
  const fs::path repo_dir = repo_cache_dir(cache, repo);
  std::error_code ec;
  if (!fs::exists(repo_dir, ec)) {
    return make_error(ErrorCode::kNotFound, "[hub] {} is not in the cache ({})", repo, cache);
  }
  std::vector<std::string> removed;
  if (quant.empty()) {
    removed.push_back(repo);
    fs::remove_all(repo_dir, ec);
    if (ec)
      return make_error(ErrorCode::kIo, "[hub] cannot remove '{}': {}", repo_dir.string(),
                        ec.message());
    return removed;
  }
  for (const auto& snap : fs::directory_iterator(repo_dir / "snapshots", ec)) {
    const std::string commit = snap.path().filename().string();
    Result<std::vector<std::string>> picked =
        pick_gguf_files(snapshot_files(repo_dir.string(), commit), quant, repo);
    if (!picked.is_ok()) continue;
    for (const std::string& path : *picked) {
      std::error_code rm_ec;
      fs::remove(snap.path() / path, rm_ec);
      removed.push_back(path);
    }
  }
  if (removed.empty()) {
    return make_error(ErrorCode::kNotFound, "[hub] {}: no cached .gguf file matches '{}'", repo,
                      quant);
  }
  const std::set<std::string> used = used_blobs(repo_dir);
  for (const auto& blob : fs::directory_iterator(repo_dir / "blobs", ec)) {
    if (!used.contains(blob.path().filename().string())) fs::remove(blob.path(), ec);
  }
  return removed;
}

}  // namespace minfer::hub
