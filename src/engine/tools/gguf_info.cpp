// describe_gguf and supported_architectures (minfer/tools.h): `minfer info`'s description of a
// GGUF file, read by gguf/gguf_summary.h and rendered here as text or JSON, with whether the model
// loads (everything Model::load checks) and whether its chat template is usable.
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "engine/conversation.h"
#include "engine/setup.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_summary.h"
#include "minfer/tools.h"
#include "models/architectures.h"
#include "models/model.h"

namespace minfer {

namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json json_or_null(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

ordered_json summary_json(const GgufSummary& s, const GgufFile& file, bool with_tensors) {
  ordered_json j;
  j["file"] = s.path;
  j["gguf_version"] = s.version;
  j["file_size"] = s.file_size;
  j["n_parts"] = s.n_parts;
  j["alignment"] = s.alignment;
  j["data_offset"] = s.data_offset;
  j["n_metadata"] = s.n_metadata;
  j["architecture"] = json_or_null(s.architecture);
  j["name"] = json_or_null(s.name);
  ordered_json& h = j["hparams"];
  h["n_embd"] = json_or_null(s.n_embd);
  h["n_layer"] = json_or_null(s.n_layer);
  h["n_head"] = json_or_null(s.n_head);
  h["n_head_kv"] = json_or_null(s.n_head_kv);
  h["head_dim"] = json_or_null(s.head_dim);
  h["head_dim_from_key"] = s.head_dim_from_key;
  h["n_ff"] = json_or_null(s.n_ff);
  for (const auto& [name, values] : s.per_layer) h[name + "_per_layer"] = values;
  h["n_ctx_train"] = json_or_null(s.n_ctx_train);
  h["n_rot"] = json_or_null(s.n_rot);
  h["rope_freq_base"] = json_or_null(s.rope_freq_base);
  h["rope_scaling"] = {
      {"type", json_or_null(s.rope_scaling.type)},
      {"factor", json_or_null(s.rope_scaling.factor)},
      {"original_context_length", json_or_null(s.rope_scaling.original_context_length)},
      {"attn_factor", json_or_null(s.rope_scaling.attn_factor)},
  };
  h["rms_eps"] = json_or_null(s.rms_eps);
  j["tokenizer"] = {
      {"n_vocab", json_or_null(s.n_vocab)},
      {"model", json_or_null(s.tokenizer_model)},
      {"pre", json_or_null(s.tokenizer_pre)},
      {"has_chat_template", s.has_chat_template},
      {"chat_template_length", json_or_null(s.chat_template_length)},
  };
  j["n_tensors"] = s.n_tensors;
  j["n_params"] = s.n_params;
  j["n_tensor_bytes"] = s.n_tensor_bytes;
  ordered_json by_type = ordered_json::object();
  for (const GgufTypeCount& c : s.by_type) {
    by_type[std::string(ggml_type_info(c.type).name)] = {
        {"n_tensors", c.n_tensors}, {"n_params", c.n_elements}, {"n_bytes", c.n_bytes}};
  }
  j["tensor_types"] = std::move(by_type);
  if (with_tensors) {
    ordered_json list = ordered_json::array();
    for (const GgufTensorInfo& t : file.tensors()) {
      list.push_back({{"name", t.name},
                      {"type", ggml_type_info(t.type).name},
                      {"shape", t.shape},
                      {"offset", t.offset},
                      {"n_bytes", t.n_bytes}});
    }
    j["tensors"] = std::move(list);
  }
  return j;
}

std::string or_absent(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : std::string("absent");
}

// Float keys are usually stored as float32: print the shortest form (1e-06, not 9.99…e-07).
std::string or_absent(const std::optional<double>& v) {
  return v ? fmt::format("{:g}", *v) : std::string("absent");
}

// Strings from the file are escaped so that they cannot break the layout.
std::string text_or_absent(const std::optional<std::string>& v) {
  return v ? gguf_escape(*v, 200) : std::string("absent");
}

std::string human(double value, const char* const* units, double step) {
  int unit = 0;
  while (value >= step && units[unit + 1] != nullptr) {
    value /= step;
    ++unit;
  }
  return fmt::format("{:.2f}{}", value, units[unit]);
}

// `chat_template`: whether the template parses and passes its load-time check (the file's, or
// ChatML when it has none).
std::string info_text(const GgufSummary& s, const GgufFile& file, bool with_tensors,
                      const Status& runs, const Status& chat_template,
                      const std::string& recurrent) {
  static const char* const kCountUnits[] = {"", " K", " M", " B", " T", nullptr};
  static const char* const kByteUnits[] = {" B", " KiB", " MiB", " GiB", " TiB", nullptr};
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    out += fmt::format("{:<22} {}\n", label, value);
  };
  line("file", gguf_escape(s.path, 4096));
  line("gguf", fmt::format("v{}, {} bytes, alignment {}, data at {}, {} metadata keys", s.version,
                           s.file_size, s.alignment, s.data_offset, s.n_metadata));
  if (s.n_parts > 1) line("split", fmt::format("{} parts, loaded together", s.n_parts));
  line("architecture", text_or_absent(s.architecture));
  line("runs", runs.is_ok() ? "yes" : "no: " + runs.message());
  line("name", text_or_absent(s.name));
  line("n_embd", or_absent(s.n_embd));
  line("n_layer", or_absent(s.n_layer));
  // A count given per layer: the largest, then each layer's.
  auto count = [&](const std::string& name, const std::optional<int64_t>& value) {
    auto it = s.per_layer.find(name);
    line(name,
         or_absent(value) + (it == s.per_layer.end()
                                 ? ""
                                 : fmt::format(" (per layer: {})", fmt::join(it->second, " "))));
  };
  count("n_head", s.n_head);
  count("n_head_kv", s.n_head_kv);
  std::string head_dim = or_absent(s.head_dim);
  if (s.head_dim)
    head_dim += s.head_dim_from_key ? " (attention.key_length)" : " (n_embd / n_head)";
  line("head_dim", head_dim);
  count("n_ff", s.n_ff);
  line("n_ctx_train", or_absent(s.n_ctx_train));
  line("n_rot", or_absent(s.n_rot));
  line("rope_freq_base", or_absent(s.rope_freq_base));
  line("rope_scaling.type", text_or_absent(s.rope_scaling.type));
  line("rope_scaling.factor", or_absent(s.rope_scaling.factor));
  line("rope_scaling.orig_ctx", or_absent(s.rope_scaling.original_context_length));
  line("rope_scaling.attn_fac", or_absent(s.rope_scaling.attn_factor));
  line("rms_eps", or_absent(s.rms_eps));
  out += recurrent;  // the layer pattern and state of a hybrid model
  line("n_vocab", or_absent(s.n_vocab));
  line("tokenizer.model", text_or_absent(s.tokenizer_model));
  line("tokenizer.pre", text_or_absent(s.tokenizer_pre));
  std::string template_text = s.has_chat_template
                                  ? fmt::format("present ({} bytes)", *s.chat_template_length)
                                  : std::string("absent");
  if (!chat_template.is_ok()) template_text += "; unusable: " + chat_template.message();
  line("chat_template", template_text);
  std::string types;
  for (const GgufTypeCount& c : s.by_type) {
    types +=
        fmt::format("{}{} {}", types.empty() ? "" : ", ", ggml_type_info(c.type).name, c.n_tensors);
  }
  line("tensors",
       s.by_type.empty() ? std::string("0") : fmt::format("{} ({})", s.n_tensors, types));
  line("parameters", fmt::format("{} ({})", s.n_params,
                                 human(static_cast<double>(s.n_params), kCountUnits, 1000)));
  line("tensor bytes", fmt::format("{} ({})", s.n_tensor_bytes,
                                   human(static_cast<double>(s.n_tensor_bytes), kByteUnits, 1024)));
  if (with_tensors) {
    out += fmt::format("\n{:<40} {:<8} {:<26} {}\n", "name", "type", "shape", "offset");
    for (const GgufTensorInfo& t : file.tensors()) {
      out += fmt::format("{:<40} {:<8} {:<26} {}\n", gguf_escape(t.name, 200),
                         ggml_type_info(t.type).name, shape_text(t.shape), t.offset);
    }
  }
  return out;
}

}  // namespace

Result<std::string> describe_gguf(const GgufInfoOptions& options) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.path));
  MINFER_ASSIGN_OR_RETURN(GgufSummary summary, summarize_gguf(*file));
  // Whether minfer runs the file: everything Model::load checks (architecture, keys, tensors),
  // a reranker's classifier head apart.
  const Result<std::unique_ptr<Model>> model = engine::load_model_and_head(options.path);
  const Status runs = model.status();
  const Status chat_template = engine::load_chat_template(*file).status();
  const ModelConfig* config = model.is_ok() ? &(*model)->config() : nullptr;
  if (!options.json) {
    return info_text(
        summary, *file, options.tensors, runs, chat_template,
        config != nullptr ? describe_recurrent(*config) + describe_layer_kinds(*config) : "");
  }
  ordered_json j = summary_json(summary, *file, options.tensors);
  if (config != nullptr && !config->recurrent_layers.empty()) {
    ordered_json pattern = ordered_json::array();
    for (int64_t il = 0; il < config->n_layer; ++il) {
      pattern.push_back(config->is_recurrent(il) ? "gated_delta_net" : "attention");
    }
    j["layer_pattern"] = std::move(pattern);
    j["recurrent_state_bytes_per_sequence"] = config->recurrent_state_bytes();
  }
  if (config != nullptr && config->n_layer_kv > 0) {
    ordered_json sources = ordered_json::array();  // the layer whose KV cells each layer reads
    for (int64_t il = 0; il < config->n_layer; ++il) sources.push_back(config->kv_source(il));
    j["kv_source_layers"] = std::move(sources);
  }
  j["tokenizer"]["chat_template_error"] =
      chat_template.is_ok() ? ordered_json() : ordered_json(chat_template.message());
  j["runs"] = runs.is_ok();
  j["runs_error"] = runs.is_ok() ? ordered_json() : ordered_json(runs.message());
  // Strings from the file may be invalid UTF-8: replace rather than throw.
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::vector<ArchitectureInfo> supported_architectures() {
  std::vector<ArchitectureInfo> out;
  for (const ArchSpec* arch : supported_archs()) out.push_back({arch->name, arch->tested_models});
  return out;
}

}  // namespace minfer
