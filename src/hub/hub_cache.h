// The Hugging Face cache on disk, shared with huggingface_hub and llama.cpp:
//   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
//     models--{org}--{name}/
//       blobs/{sha256}                 the bytes (blobs/{sha256}.incomplete while downloading)
//       snapshots/{commit}/{path}      a relative symlink to ../../blobs/{sha256} (one more ../
//                                      per folder in {path})
//       refs/{revision}                the commit the revision pointed to
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace minfer::hub {

std::string hub_cache_dir();
// The cache folder of a repository ("org/name" → <cache>/models--org--name).
std::string repo_cache_dir(const std::string& cache, const std::string& repo);

// The commit `revision` names: itself when it is a 40-digit hash, else refs/<revision>'s content.
std::optional<std::string> read_ref(const std::string& repo_dir, const std::string& revision);
Status write_ref(const std::string& repo_dir, const std::string& revision,
                 const std::string& commit);

// The files of a snapshot whose blob is present (relative paths, sorted).
std::vector<std::string> snapshot_files(const std::string& repo_dir, const std::string& commit);
std::string snapshot_path(const std::string& repo_dir, const std::string& commit,
                          const std::string& path);
// Points snapshots/<commit>/<path> at blobs/<blob> (replacing what was there, atomically).
Status link_snapshot(const std::string& repo_dir, const std::string& commit,
                     const std::string& path, const std::string& blob);

struct CachedFile {
  std::string repo;    // "org/name"
  std::string commit;  // the snapshot
  std::string path;    // inside the repository
  uint64_t size = 0;
};
// Every .gguf file in the cache, by repository then path.
std::vector<CachedFile> list_cached_gguf(const std::string& cache);

// Removes the files of `repo` that `quant` picks (hub_select.h) from every snapshot, and blobs
// no snapshot uses any more; without `quant`, the whole repository. Returns what was removed
// (repository paths); an error when nothing matched.
Result<std::vector<std::string>> remove_cached(const std::string& cache, const std::string& repo,
                                               const std::string& quant);

}  // namespace minfer::hub
