#include "models/model.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/hash.h"
#include "kernels/dispatch.h"
#include "models/architectures.h"
#include "models/decoder.h"

namespace minfer {
namespace {

constexpr size_t kSampleBytes = 1024;  // per sample of a tensor's data (Model::tensor_hash)

template <typename T>
void append(std::vector<uint8_t>& out, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));  // little-endian hosts only (as the GGUF reader)
}

uint64_t tensor_sample_hash(const GgufFile& file) {
  std::vector<uint8_t> bytes;
  for (const GgufTensorInfo& t : file.tensors()) {
    bytes.insert(bytes.end(), t.name.begin(), t.name.end());
    append(bytes, static_cast<uint32_t>(t.type));
    for (const uint64_t d : t.shape) append(bytes, d);
    append(bytes, t.n_bytes);
    const std::span<const uint8_t> data = file.tensor_data(t);
    const size_t n = std::min(kSampleBytes, data.size());
    for (const size_t at : {size_t{0}, (data.size() - n) / 2, data.size() - n}) {
      bytes.insert(bytes.end(), data.begin() + static_cast<std::ptrdiff_t>(at),
                   data.begin() + static_cast<std::ptrdiff_t>(at + n));
    }
  }
  return hash64(bytes);
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const MapOptions& map) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path, map));
  return from_file(std::move(file));
}

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<GgufFile> file) {
  std::unique_ptr<Model> model(new Model());
  MINFER_ASSIGN_OR_RETURN(model->config_, read_model_config(*file));
  MINFER_ASSIGN_OR_RETURN(model->weights_, load_model_weights(*file, model->config_));
  model->tensor_hash_ = tensor_sample_hash(*file);  // before repacking releases the file's pages
  // Repacked for the active table (a bad MINFER_FORCE_ISA is reported where the runtime starts).
  // A runtime on another table still reads them, more slowly (kernels/matmul.h).
  if (kernels::init_kernels().is_ok() && repack_enabled(kernels::active_table())) {
    MINFER_ASSIGN_OR_RETURN(model->repacked_,
                            repack_weights(model->weights_, kernels::active_table()));
  }
  model->file_ = std::move(file);
  return model;
}

void Model::drop_vocabulary() {
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges",
                          "tokenizer.ggml.token_type", "tokenizer.ggml.scores"}) {
    file_->drop(key);
  }
}

Graph Model::build_graph(int64_t n_tokens, int64_t n_outputs, bool hidden) const {
  GraphBuilder g(n_tokens, n_outputs);
  const Result<ArchSpec> arch = find_arch(config_.arch);  // found when the model loaded
  MINFER_CHECK(arch.is_ok(), "a loaded model's architecture is unknown");
  const auto build = arch->build != nullptr ? arch->build : build_decoder;
  const NodeId out = build(g, config_, weights_, hidden);
  return g.finish(out);
}

}  // namespace minfer
