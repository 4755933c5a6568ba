#include "server/model_registry.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

namespace minfer::server {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A split model part's stem: "NAME-0000k-of-0000N".
struct SplitStem {
  std::string name;  // NAME
  int part = 0;      // k
  int count = 0;     // N
};

std::optional<SplitStem> split_stem(const std::string& stem) {
  constexpr std::string_view kOf = "-of-";
  constexpr size_t kDigits = 5, kSuffix = 1 + kDigits + 4 + kDigits;
  if (stem.size() <= kSuffix) return std::nullopt;
  const size_t at = stem.size() - kSuffix;
  auto number = [&](size_t from) -> std::optional<int> {
    const std::string_view d(stem.data() + from, kDigits);
    if (!std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return std::stoi(std::string(d));
  };
  const std::optional<int> part = number(at + 1);
  const std::optional<int> count = number(at + 1 + kDigits + kOf.size());
  if (stem[at] != '-' || !part || !count || stem.compare(at + 1 + kDigits, kOf.size(), kOf) != 0) {
    return std::nullopt;
  }
  return SplitStem{stem.substr(0, at), *part, *count};
}

}  // namespace

std::optional<std::string> model_name_of_file(const std::string& filename) {
  const std::filesystem::path p(filename);
  if (lower(p.extension().string()) != ".gguf") return std::nullopt;
  std::string name = p.stem().string();
  if (lower(name).find("mmproj") != std::string::npos) return std::nullopt;
  // A split model's parts end in "-0000k-of-0000N": the first part loads the others.
  if (const std::optional<SplitStem> split = split_stem(name)) {
    if (split->part != 1) return std::nullopt;
    return split->name;
  }
  return name;
}

uint64_t model_file_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  const std::optional<SplitStem> split = split_stem(path.stem().string());
  if (!split || split->part != 1) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    return ec ? 0 : size;
  }
  uint64_t total = 0;
  for (int k = 1; k <= split->count; ++k) {
    const std::string part =
        fmt::format("{}-{:05}-of-{:05}{}", split->name, k, split->count, path.extension().string());
    const uintmax_t size = std::filesystem::file_size(path.parent_path() / part, ec);
    if (!ec) total += size;
  }
  return total;
}

Result<std::vector<ModelEntry>> scan_models_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    return make_error(ErrorCode::kNotFound,
                      "[serve] --models-dir '{}': expected a readable folder of .gguf files ({})",
                      dir.string(), ec.message());
  }
  std::vector<ModelEntry> out;
  for (const auto& e : it) {
    std::error_code file_ec;
    if (!e.is_regular_file(file_ec)) continue;
    if (std::optional<std::string> name = model_name_of_file(e.path().filename().string())) {
      out.push_back({*name, e.path(), model_file_bytes(e.path())});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

ModelRegistry::ModelRegistry(std::vector<ModelEntry> models, RegistryOptions options, LoadFn load)
    : entries_(std::move(models)), options_(std::move(options)), load_(std::move(load)) {
  options_.max_loaded = std::max(1, options_.max_loaded);
  for (size_t i = 0; i < entries_.size(); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->index = i;
  }
}

ModelRegistry::~ModelRegistry() {
  stop_all();
}

ModelRegistry::Slot* ModelRegistry::find(const std::string& name) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return slots_[i].get();
  }
  return nullptr;
}

const ModelRegistry::Slot* ModelRegistry::find(const std::string& name) const {
  return const_cast<ModelRegistry*>(this)->find(name);
}

bool ModelRegistry::contains(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find(name) != nullptr;
}

bool ModelRegistry::is_loaded(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot* s = find(name);
  return s != nullptr && s->loaded.model != nullptr;
}

int64_t ModelRegistry::n_loaded_or_loading() const {
  int64_t n = 0;
  for (const auto& s : slots_) n += (s->loaded.model != nullptr || s->loading) ? 1 : 0;
  return n;
}

uint64_t ModelRegistry::bytes_loaded_or_loading() const {
  uint64_t n = 0;
  for (const auto& s : slots_) n += (s->loaded.model != nullptr || s->loading) ? s->bytes : 0;
  return n;
}

bool ModelRegistry::has_room_for(uint64_t bytes) const {
  if (n_loaded_or_loading() >= options_.max_loaded) return false;
  return options_.memory_budget == 0 || bytes_loaded_or_loading() + bytes <= options_.memory_budget;
}

void ModelRegistry::trim_to_budget() {
  while (options_.memory_budget != 0 && bytes_loaded_or_loading() > options_.memory_budget &&
         evict_one_idle()) {
  }
}

void ModelRegistry::unload_slot(Slot& slot) {
  slot.loaded.generator->stop();
  slot.loaded.embedder.reset();  // before the model it runs
  slot.loaded.reranker.reset();
  slot.loaded = LoadedModel{};
  slot.backend = Backend{};
}

bool ModelRegistry::evict_one_idle() {
  Slot* lru = nullptr;
  for (const auto& s : slots_) {
    if (s->loaded.model != nullptr && s->leases == 0 &&
        (lru == nullptr || s->last_used < lru->last_used)) {
      lru = s.get();
    }
  }
  if (lru == nullptr) return false;
  unload_slot(*lru);
  return true;
}

Result<ModelLease> ModelRegistry::acquire(const std::string& name) {
  std::unique_lock<std::mutex> lock(mu_);
  Slot* s = find(name);
  if (s == nullptr) {
    return make_error(ErrorCode::kNotFound, "[server] no model named '{}' (see GET /v1/models)",
                      name);
  }
  while (true) {
    if (stopped_) {
      return make_error(ErrorCode::kUnsupported, "[server] stopping: model '{}' not loaded", name);
    }
    if (s->loaded.model != nullptr) {
      ++s->leases;
      s->last_used = ++clock_;
      trim_to_budget();  // its KV budget, known now, may leave less room for the others
      return ModelLease(&s->backend, [this, s](const Backend*) { release(*s); });
    }
    const uint64_t estimate = entries_[s->index].bytes;
    if (options_.memory_budget != 0 && estimate > options_.memory_budget) {
      return make_error(ErrorCode::kResourceExhausted,
                        "[server] model '{}' needs at least {} MiB (its file), more than the "
                        "memory budget of {} MiB for all models (--models-memory)",
                        name, estimate >> 20, options_.memory_budget >> 20);
    }
    if (s->loading) {  // someone else loads it
      cv_.wait(lock);
      continue;
    }
    while (!has_room_for(estimate) && evict_one_idle()) {
    }
    if (!has_room_for(estimate) && n_loaded_or_loading() > 0) {  // wait for a model to go idle
      cv_.wait(lock);
      continue;
    }
    s->loading = true;
    s->bytes = estimate;
    const std::filesystem::path path = entries_[s->index].path;
    lock.unlock();
    Result<LoadedModel> r = load_(path);
    lock.lock();
    s->loading = false;
    cv_.notify_all();
    if (!r.is_ok()) return r.status();
    s->loaded = std::move(r).value();
    // Loaded, it holds its file and may grow its KV cells to their budget.
    s->bytes = estimate + static_cast<uint64_t>(s->loaded.generator->stats().kv_bytes_total);
    s->backend.model = s->loaded.model.get();
    s->backend.generator = s->loaded.generator.get();
    s->backend.embedder = s->loaded.embedder.get();
    s->backend.reranker = s->loaded.reranker.get();
    s->backend.model_name = name;
    s->backend.default_grammar = options_.default_grammar;
  }
}

void ModelRegistry::release(Slot& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  --slot.leases;
  slot.last_used = ++clock_;
  cv_.notify_all();
}

Status ModelRegistry::unload(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot* s = find(name);
  if (s == nullptr) {
    return make_error(ErrorCode::kNotFound, "[server] no model named '{}' (see GET /v1/models)",
                      name);
  }
  if (s->loaded.model == nullptr) return Status::ok();
  if (s->leases > 0) {
    return make_error(ErrorCode::kResourceExhausted,
                      "[server] model '{}' has {} requests in flight: expected none to unload it",
                      name, s->leases);
  }
  unload_slot(*s);
  return Status::ok();
}

void ModelRegistry::stop_all() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;  // requests waiting for a load give up
  cv_.notify_all();
  for (const auto& s : slots_) {
    if (s->loaded.generator) s->loaded.generator->stop();
  }
}

}  // namespace minfer::server
