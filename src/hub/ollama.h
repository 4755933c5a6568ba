// Models in Ollama's local store, by name, read in place (no copy, no network):
//   $OLLAMA_MODELS, else ~/.ollama/models
//     manifests/<registry>/<namespace>/<name>/<tag>   JSON: layers [{mediaType, digest, size}]
//     blobs/sha256-<hex>
// "qwen3:0.6b" is registry.ollama.ai/library/qwen3:0.6b; "ns/name" and "registry/ns/name" name
// the others; the tag defaults to "latest". The layer of media type
// application/vnd.ollama.image.model is the GGUF file.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace minfer::hub {

inline constexpr std::string_view kOllamaPrefix = "ollama:";

std::string ollama_models_dir();

// The GGUF blob of `name` ("NAME[:TAG]", "NS/NAME[:TAG]" or "REGISTRY/NS/NAME[:TAG]") in the
// store at `models_dir`.
Result<std::string> resolve_ollama_model(std::string_view name, const std::string& models_dir);

}  // namespace minfer::hub
