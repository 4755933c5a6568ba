// Models by name (minfer/tools.h): ollama:NAME[:TAG] from Ollama's store, REPO[:QUANT] from the
// Hugging Face Hub through its shared cache, and that cache listed, filled and emptied — over the
// hub layer (src/hub/), in the public API's plain types.
#include <string>
#include <vector>

#include "hub/hub_cache.h"
#include "hub/hub_download.h"
#include "hub/hub_select.h"
#include "hub/ollama.h"
#include "minfer/tools.h"

namespace minfer {

Result<std::string> resolve_model_source(const ModelSource& source) {
  if (source.model.starts_with(hub::kOllamaPrefix)) {
    return hub::resolve_ollama_model(
        std::string_view(source.model).substr(hub::kOllamaPrefix.size()), hub::ollama_models_dir());
  }
  if (!source.model.empty()) return source.model;
  MINFER_ASSIGN_OR_RETURN(const HubPullReport pulled, hub_pull(source.hf_repo, source.offline));
  return pulled.path;
}

std::string hub_cache_dir() {
  return hub::hub_cache_dir();
}

std::vector<CachedModel> hub_cached_models() {
  const std::string cache = hub::hub_cache_dir();
  std::vector<CachedModel> out;
  for (const hub::CachedFile& c : hub::list_cached_gguf(cache)) {
    out.push_back({c.repo, c.path, c.size,
                   hub::snapshot_path(hub::repo_cache_dir(cache, c.repo), c.commit, c.path)});
  }
  return out;
}

Result<HubPullReport> hub_pull(const std::string& model, bool offline) {
  MINFER_ASSIGN_OR_RETURN(const hub::HubModelRef ref, hub::parse_hub_model_ref(model));
  MINFER_ASSIGN_OR_RETURN(hub::HubOptions options, hub::hub_options_from_env());
  options.offline = options.offline || offline;
  MINFER_ASSIGN_OR_RETURN(hub::HubModel m, hub::fetch_hub_model(ref, options));
  return HubPullReport{m.cached, std::move(m.files), m.bytes, std::move(m.path)};
}

Result<std::vector<std::string>> hub_remove(const std::string& model) {
  MINFER_ASSIGN_OR_RETURN(const hub::HubModelRef ref, hub::parse_hub_model_ref(model));
  return hub::remove_cached(hub::hub_cache_dir(), ref.repo, ref.quant);
}

}  // namespace minfer
