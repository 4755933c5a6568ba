#include "server/model_registry.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <system_error>

namespace minfer::server {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<std::string> model_name_of_file(const std::string& filename) {
  const std::filesystem::path p(filename);
  if (lower(p.extension().string()) != ".gguf") return std::nullopt;
  std::string name = p.stem().string();
  if (lower(name).find("mmproj") != std::string::npos) return std::nullopt;
  // A split model's parts end in "-0000k-of-0000N": the first part loads the others.
  constexpr std::string_view kOf = "-of-";
  constexpr size_t kDigits = 5, kSuffix = 1 + kDigits + 4 + kDigits;
  auto digits = [&](size_t at) {
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at),
                       name.begin() + static_cast<std::ptrdiff_t>(at + kDigits),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  if (name.size() > kSuffix) {
    const size_t at = name.size() - kSuffix;
    if (name[at] == '-' && digits(at + 1) && name.compare(at + 1 + kDigits, 4, kOf) == 0 &&
        digits(at + 1 + kDigits + 4)) {
      if (name.compare(at + 1, kDigits, "00001") != 0) return std::nullopt;
      name.resize(at);
    }
  }
  return name;
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
      out.push_back({*name, e.path()});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

ModelRegistry::ModelRegistry(std::vector<ModelEntry> models, int max_loaded, LoadFn load,
                             std::string default_grammar)
    : entries_(std::move(models)),
      max_loaded_(std::max(1, max_loaded)),
      load_(std::move(load)),
      default_grammar_(std::move(default_grammar)) {
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

void ModelRegistry::unload_slot(Slot& slot) {
  slot.loaded.generator->stop();
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
      return ModelLease(&s->backend, [this, s](const Backend*) { release(*s); });
    }
    // Someone else loads it, or no room until a loaded model goes idle: wait and look again.
    if (s->loading || (n_loaded_or_loading() >= max_loaded_ && !evict_one_idle())) {
      cv_.wait(lock);
      continue;
    }
    s->loading = true;
    const std::filesystem::path path = entries_[s->index].path;
    lock.unlock();
    Result<LoadedModel> r = load_(path);
    lock.lock();
    s->loading = false;
    cv_.notify_all();
    if (!r.is_ok()) return r.status();
    s->loaded = std::move(r).value();
    s->backend.model = s->loaded.model.get();
    s->backend.generator = s->loaded.generator.get();
    s->backend.model_name = name;
    s->backend.default_grammar = default_grammar_;
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
