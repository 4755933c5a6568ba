// `-hf REPO[:QUANT]`: the model's files from the Hugging Face Hub, through the shared cache
// (hub_cache.h). A model already in the cache is used without any network request; otherwise
// the repository's file list is read (GET {endpoint}/api/models/{repo}/tree/{revision}), the
// files are picked (hub_select.h), the revision's commit is read from X-Repo-Commit (HEAD of the
// first file's resolve URL), and each missing blob is downloaded into blobs/{sha256}.incomplete,
// resumed with Range after an interruption, checked against the listed SHA-256 (lfs.oid; the git
// blob hash for a non-LFS file) and renamed into place; then the snapshot links and
// refs/{revision} are written. A failure leaves no file under snapshots/ or blobs/{sha256}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "hub/hub_select.h"

namespace minfer::hub {

struct HubOptions {
  std::string endpoint;  // $HF_ENDPOINT, else https://huggingface.co (no trailing '/')
  std::string token;     // $HF_TOKEN: a bearer token for gated and private repositories
  std::string cache;     // hub_cache_dir()
  bool offline = false;  // $HF_HUB_OFFLINE=1 (or --offline): the cache only
  bool progress = true;  // a progress bar on stderr when it is a terminal
  int max_attempts = 5;  // per file: a dropped connection resumes where it stopped
  // A transfer that moves no byte for this long is a timeout ($HF_HUB_DOWNLOAD_TIMEOUT, seconds).
  long stall_timeout_s = 60;
};
// The options the environment gives; a malformed $HF_HUB_DOWNLOAD_TIMEOUT is an error.
Result<HubOptions> hub_options_from_env();

struct HubModel {
  std::string path;                // the snapshot path of the first file: what to load
  std::vector<std::string> files;  // repository paths (all parts of a split model)
  uint64_t bytes = 0;              // size of the files together
  bool cached = false;             // true when nothing was downloaded
};

Result<HubModel> fetch_hub_model(const HubModelRef& ref, const HubOptions& options);

}  // namespace minfer::hub
