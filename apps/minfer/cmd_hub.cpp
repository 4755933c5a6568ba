// minfer pull / ls / rm: models from the Hugging Face Hub in the shared cache (hub_pull,
// hub_cached_models, hub_remove: minfer/tools.h).
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "minfer/tools.h"

namespace minfer::app {

namespace {

std::string human_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[unit]);
}

struct PullFlags {
  std::string model;
  bool offline = false;
};

Status pull(const PullFlags& f) {
  MINFER_ASSIGN_OR_RETURN(const HubPullReport m, hub_pull(f.model, f.offline));
  const std::string parts =
      m.files.size() > 1 ? fmt::format(" ({} parts)", m.files.size()) : std::string();
  fmt::print(stderr, "{} {}{}, {}: {}\n", m.cached ? "already in the cache:" : "downloaded",
             m.files.front(), parts, human_bytes(m.bytes), m.path);
  return Status::ok();
}

Status list() {
  const std::vector<CachedModel> files = hub_cached_models();
  if (files.empty()) {
    fmt::print(stderr, "no .gguf models in {}\n", hub_cache_dir());
    return Status::ok();
  }
  size_t repo_width = 4;
  size_t file_width = 4;
  for (const CachedModel& f : files) {
    repo_width = std::max(repo_width, f.repo.size());
    file_width = std::max(file_width, f.file.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:>10}\n", "REPO", repo_width, "FILE", file_width, "SIZE");
  for (const CachedModel& f : files) {
    fmt::print("{:<{}}  {:<{}}  {:>10}\n", f.repo, repo_width, f.file, file_width,
               human_bytes(f.size));
  }
  return Status::ok();
}

Status remove(const std::string& model) {
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string> removed, hub_remove(model));
  for (const std::string& r : removed) fmt::print(stderr, "removed {}\n", r);
  return Status::ok();
}

}  // namespace

void register_hub_commands(CLI::App& app, CommandRegistry& registry) {
  auto [pull_cmd, pull_flags] = add_command<PullFlags>(
      app, "pull",
      "Download REPO[:QUANT] from the Hugging Face Hub into the shared cache (nothing when it is "
      "there); HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE / HF_HOME are honoured");
  pull_cmd->add_option("model", pull_flags->model, "REPO[:QUANT], e.g. Qwen/Qwen3-0.6B-GGUF:Q8_0")
      ->required();
  pull_cmd->add_flag("--offline", pull_flags->offline, "only check the cache");
  registry.add_status(pull_cmd, [pull_flags = pull_flags]() { return pull(*pull_flags); });

  CLI::App* ls_cmd = app.add_subcommand("ls", "List the .gguf models in the Hugging Face cache");
  registry.add_status(ls_cmd, []() { return list(); });

  auto [rm_cmd, rm_model] = add_command<std::string>(
      app, "rm",
      "Remove REPO:QUANT's files (or, without :QUANT, the whole repository) from the cache");
  rm_cmd->add_option("model", *rm_model, "REPO[:QUANT]")->required();
  registry.add_status(rm_cmd, [rm_model = rm_model]() { return remove(*rm_model); });
}

}  // namespace minfer::app
