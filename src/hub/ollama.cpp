#include "hub/ollama.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace minfer::hub {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kModelMediaType = "application/vnd.ollama.image.model";

bool valid_part(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && s.find_first_of("/\\") == std::string_view::npos;
}

// registry/namespace/name/tag of a model name.
Result<std::vector<std::string>> manifest_parts(std::string_view name) {
  std::string text(name);
  std::string tag = "latest";
  const size_t slash = text.rfind('/');
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    tag = text.substr(colon + 1);
    text.resize(colon);
  }
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string p; std::getline(in, p, '/');) parts.push_back(p);
  if (parts.size() == 1) parts.insert(parts.begin(), "library");
  if (parts.size() == 2) parts.insert(parts.begin(), "registry.ollama.ai");
  parts.push_back(tag);
  bool ok = parts.size() == 4;
  for (const std::string& p : parts) ok = ok && valid_part(p);
  if (!ok) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[ollama] '{}': expected NAME[:TAG], NAMESPACE/NAME[:TAG] or "
                      "REGISTRY/NAMESPACE/NAME[:TAG] (e.g. ollama:qwen3:0.6b)",
                      name);
  }
  return parts;
}

}  // namespace

std::string ollama_models_dir() {
  if (const char* v = std::getenv("OLLAMA_MODELS"); v != nullptr && v[0] != '\0') return v;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.ollama/models";
}

Result<std::string> resolve_ollama_model(std::string_view name, const std::string& models_dir) {
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string> parts, manifest_parts(name));
  const std::string manifest =
      fmt::format("{}/manifests/{}/{}/{}/{}", models_dir, parts[0], parts[1], parts[2], parts[3]);
  std::ifstream in(manifest);
  if (!in) {
    return make_error(ErrorCode::kNotFound,
                      "[ollama] model '{}' is not in the store: no manifest '{}' (pull it with "
                      "`ollama pull {}`, or set OLLAMA_MODELS)",
                      name, manifest, name);
  }
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array()) {
    return make_error(ErrorCode::kCorrupt,
                      "[ollama] manifest '{}': expected a JSON object with a 'layers' array",
                      manifest);
  }
  for (const nlohmann::json& layer : j["layers"]) {
    if (!layer.is_object() || layer.value("mediaType", "") != kModelMediaType) continue;
    const std::string digest = layer.value("digest", "");
    const std::string hex = digest.starts_with("sha256:") ? digest.substr(7) : "";
    if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return make_error(ErrorCode::kCorrupt,
                        "[ollama] manifest '{}': the model layer's digest is '{}', expected "
                        "sha256:<64 hex digits>",
                        manifest, digest);
    }
    const std::string blob = models_dir + "/blobs/sha256-" + hex;
    std::error_code ec;
    const uint64_t size = fs::file_size(blob, ec);
    if (ec) {
      return make_error(ErrorCode::kNotFound, "[ollama] model '{}': blob '{}' is missing", name,
                        blob);
    }
    if (layer.contains("size") && layer["size"].is_number_unsigned() &&
        layer["size"].get<uint64_t>() != size) {
      return make_error(ErrorCode::kCorrupt,
                        "[ollama] model '{}': blob '{}' has {} bytes, the manifest says {}", name,
                        blob, size, layer["size"].get<uint64_t>());
    }
    return blob;
  }
  return make_error(ErrorCode::kCorrupt, "[ollama] manifest '{}' has no layer of media type {}",
                    manifest, kModelMediaType);
}

}  // namespace minfer::hub
