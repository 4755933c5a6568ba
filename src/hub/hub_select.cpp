#include "hub/hub_select.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "gguf/gguf_split.h"

namespace minfer::hub {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool valid_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// One model of a repo: a single file, or the parts of a split one (in part order).
struct ModelUnit {
  std::string name;  // the file's path, or the first part's
  std::vector<std::string> files;
};

std::vector<ModelUnit> model_units(const std::vector<std::string>& paths) {
  std::map<std::string, ModelUnit> units;  // by name: sorted
  std::map<std::string, std::map<int, std::string>> splits;
  for (const std::string& p : paths) {
    const std::string l = lower(p);
    if (!l.ends_with(".gguf") || l.find("mmproj") != std::string::npos) continue;
    if (const auto s = parse_split_name(p); s && s->count > 1) {
      splits[split_part_path(s->prefix, 1, s->count)][s->number] = p;
    } else {
      units[p] = ModelUnit{p, {p}};
    }
  }
  for (auto& [first, parts] : splits) {
    ModelUnit u{first, {}};
    for (auto& [number, path] : parts) u.files.push_back(path);
    units[first] = std::move(u);
  }
  std::vector<ModelUnit> out;
  for (auto& [name, u] : units) out.push_back(std::move(u));
  return out;
}

std::string list_units(const std::vector<ModelUnit>& units) {
  if (units.empty()) return "no .gguf model files";
  std::vector<std::string> names;
  for (const ModelUnit& u : units) {
    names.push_back(u.files.size() > 1 ? fmt::format("{} ({} parts)", u.name, u.files.size())
                                       : u.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<const ModelUnit*> matching(const std::vector<ModelUnit>& units, std::string_view tag) {
  std::vector<const ModelUnit*> out;
  const std::string t = lower(tag);
  for (const ModelUnit& u : units) {
    if (lower(u.name).find(t) != std::string::npos) out.push_back(&u);
  }
  return out;
}

}  // namespace

Result<HubModelRef> parse_hub_model_ref(std::string_view text) {
  HubModelRef ref{std::string(text), "", "main"};
  if (const size_t colon = ref.repo.find(':'); colon != std::string::npos) {
    ref.quant = ref.repo.substr(colon + 1);
    ref.repo.resize(colon);
  }
  if (const size_t at = ref.repo.find('@'); at != std::string::npos) {
    ref.revision = ref.repo.substr(at + 1);
    ref.repo.resize(at);
  }
  const size_t slash = ref.repo.find('/');
  if (slash == std::string::npos || !valid_name(ref.repo.substr(0, slash)) ||
      !valid_name(ref.repo.substr(slash + 1)) || ref.revision.empty() ||
      ref.revision.find("..") != std::string::npos) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[hub] '{}': expected a repository as ORG/NAME[:QUANT] (e.g. "
                      "Qwen/Qwen3-0.6B-GGUF:Q8_0)",
                      text);
  }
  return ref;
}

Result<std::vector<std::string>> pick_gguf_files(const std::vector<std::string>& paths,
                                                 std::string_view quant, std::string_view repo) {
  const std::vector<ModelUnit> units = model_units(paths);
  if (units.empty()) {
    return make_error(ErrorCode::kNotFound, "[hub] {}: the repository has no .gguf model file",
                      repo);
  }
  if (quant.empty()) {
    for (std::string_view preferred : {"Q4_K_M", "Q8_0"}) {
      std::vector<const ModelUnit*> m = matching(units, preferred);
      if (m.empty()) continue;
      // Several (e.g. "x-Q4_K_M" and "x-UD-Q4_K_M"): the shortest name, the plainest variant.
      return (*std::min_element(m.begin(), m.end(),
                                [](const ModelUnit* a, const ModelUnit* b) {
                                  return a->name.size() < b->name.size();
                                }))
          ->files;
    }
    return units.front().files;
  }
  std::vector<const ModelUnit*> m = matching(units, quant);
  if (m.size() > 1) {
    // A tag that is a whole file name (without .gguf) picks that file.
    for (const ModelUnit* u : m) {
      const std::string l = lower(u->name);
      const std::string t = lower(quant);
      if (l == t || l == t + ".gguf" || l.ends_with("/" + t + ".gguf")) return u->files;
    }
    std::vector<ModelUnit> ambiguous;
    for (const ModelUnit* u : m) ambiguous.push_back(*u);
    return make_error(ErrorCode::kInvalidArgument,
                      "[hub] {}: quant '{}' matches {} models: {}; give a longer tag", repo, quant,
                      m.size(), list_units(ambiguous));
  }
  if (m.empty()) {
    return make_error(ErrorCode::kNotFound,
                      "[hub] {}: no .gguf file matches quant '{}'; the repo has: {}", repo, quant,
                      list_units(units));
  }
  return m.front()->files;
}

}  // namespace minfer::hub
