// Which files of a Hugging Face repository `-hf REPO[:QUANT]` means: the `.gguf` whose name
// contains QUANT (case-insensitive), every part of a split model, never an `mmproj` file; without
// QUANT, Q4_K_M, then Q8_0, then the first model in name order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace minfer::hub {

struct HubModelRef {
  std::string repo;      // "org/name"
  std::string quant;     // the tag after ':' ("" when none)
  std::string revision;  // "main" unless given as REPO@REV
};

// Parses "org/name[:QUANT]" (also "org/name@REVISION[:QUANT]"); the repo must be two
// non-empty names without "..".
Result<HubModelRef> parse_hub_model_ref(std::string_view text);

// Picks the model's files among `paths` (repository paths, any files): a single `.gguf`, or all
// parts of a split one (first part first). Errors name the tag and list the repo's models.
Result<std::vector<std::string>> pick_gguf_files(const std::vector<std::string>& paths,
                                                 std::string_view quant, std::string_view repo);

}  // namespace minfer::hub
