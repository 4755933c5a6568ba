// The models one server serves (serve --models-dir): each by name (its file's stem), loaded on
// first use, the least recently used unloaded once more than `max_loaded` would be loaded or
// their memory would pass `memory_budget`. A request holds a lease on its model's Backend; a
// model with leases is never unloaded: a load that needs room waits until some loaded model has
// none.
//
// Memory is counted as a model can grow to: its weights (the file's bytes, all parts of a split
// model) and its KV cells' budget (known once loaded; before, the file's bytes stand for it).
//
//   ModelRegistry registry(models, {.max_loaded = 1}, load_fn);
//   Result<ModelLease> lease = registry.acquire("stories260K");  // loads it if needed
//   lease.value()->generator->submit(...);                        // the lease keeps it loaded
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "minfer/minfer.h"
#include "server/http_server.h"

namespace minfer::server {

// A loaded model and its running generator, as the registry's load function makes them.
struct LoadedModel {
  std::unique_ptr<LanguageModel> model;
  std::unique_ptr<BatchGenerator> generator;  // started
  std::unique_ptr<Embedder> embedder;         // null: embeddings not enabled
  std::unique_ptr<Reranker> reranker;         // null: reranking not enabled
};

// A Backend kept loaded while the lease lives.
using ModelLease = std::shared_ptr<const Backend>;

struct ModelEntry {
  std::string name;  // what a request's `model` says
  std::filesystem::path path;
  uint64_t bytes = 0;  // the file's size (of every part of a split model)
};

// The bytes of a model file: its size, or for the first part of a split model
// (…-00001-of-0000N.gguf) the sizes of all its parts that exist. 0 when it cannot be read.
uint64_t model_file_bytes(const std::filesystem::path& path);

struct RegistryOptions {
  int max_loaded = 1;           // ≥ 1
  uint64_t memory_budget = 0;   // bytes the loaded models may hold together; 0: no limit
  std::string default_grammar;  // goes to every backend
};

// The model name of a GGUF file's name: its stem, without a split model's -00001-of-0000N suffix;
// nullopt for a later part of a split model, an mmproj file, or a file that is not .gguf.
std::optional<std::string> model_name_of_file(const std::string& filename);

// The GGUF files in `dir` (not its subfolders), named by stem; of a split model only its first
// part (…-00001-of-0000N.gguf, named without the suffix); mmproj files skipped. Sorted by name.
// Error: `dir` is not a readable folder.
Result<std::vector<ModelEntry>> scan_models_dir(const std::filesystem::path& dir);

class ModelRegistry : NonCopyable {
 public:
  using LoadFn = std::function<Result<LoadedModel>(const std::filesystem::path&)>;

  ModelRegistry(std::vector<ModelEntry> models, RegistryOptions options, LoadFn load);
  ~ModelRegistry();

  const std::vector<ModelEntry>& models() const { return entries_; }
  bool contains(const std::string& name) const;
  // Whether `name` is loaded now.
  bool is_loaded(const std::string& name) const;

  // The model's backend, loaded if it is not (after unloading least recently used idle models
  // while `max_loaded` are loaded or the memory budget would be passed, waiting for one to go
  // idle if none is). Errors: an unknown name (kNotFound), a model larger than the whole memory
  // budget (kResourceExhausted), after stop_all (kUnsupported), the load's.
  Result<ModelLease> acquire(const std::string& name);
  // Unloads `name` now. Errors: unknown (kNotFound), requests in flight on it
  // (kResourceExhausted). Unloading a model that is not loaded does nothing.
  Status unload(const std::string& name);
  // Stops every loaded generator (requests left end); acquire fails from now on. For shutdown.
  void stop_all();

 private:
  struct Slot {
    size_t index = 0;    // in entries_
    LoadedModel loaded;  // model null: not loaded
    Backend backend;
    bool loading = false;
    int64_t leases = 0;
    uint64_t last_used = 0;
    uint64_t bytes = 0;  // loaded: what it holds; loading: the estimate
  };
  // Under mu_: the slot of `name`, or nullptr.
  Slot* find(const std::string& name);
  const Slot* find(const std::string& name) const;
  // Under mu_: unloads the least recently used loaded model without leases; false when none.
  bool evict_one_idle();
  // Under mu_: whether one more model of `bytes` fits beside those loaded or loading.
  bool has_room_for(uint64_t bytes) const;
  // Under mu_: unloads idle models while the loaded ones pass the memory budget.
  void trim_to_budget();
  // Under mu_: stops the slot's generator and frees its model.
  void unload_slot(Slot& slot);
  void release(Slot& slot);
  int64_t n_loaded_or_loading() const;
  uint64_t bytes_loaded_or_loading() const;

  std::vector<ModelEntry> entries_;
  RegistryOptions options_;
  LoadFn load_;
  mutable std::mutex mu_;
  std::condition_variable cv_;                // a lease ended, or a load finished
  std::vector<std::unique_ptr<Slot>> slots_;  // [entries_.size()], same order
  uint64_t clock_ = 0;
  bool stopped_ = false;  // stop_all() was called
};

}  // namespace minfer::server
