#include "models/model.h"

#include "kernels/dispatch.h"
#include "models/decoder.h"

namespace minfer {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const MapOptions& map) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path, map));
  return from_file(std::move(file));
}

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<GgufFile> file) {
  std::unique_ptr<Model> model(new Model());
  MINFER_ASSIGN_OR_RETURN(model->config_, read_model_config(*file));
  MINFER_ASSIGN_OR_RETURN(model->weights_, load_model_weights(*file, model->config_));
  // Repacked for the active table (a bad MINFER_FORCE_ISA is reported where the runtime starts).
  // A runtime on another table still reads them, more slowly (kernels/matmul.h).
  if (kernels::init_kernels().is_ok() && repack_enabled(kernels::active_table())) {
    MINFER_ASSIGN_OR_RETURN(model->repacked_,
                            repack_weights(model->weights_, kernels::active_table()));
  }
  model->file_ = std::move(file);
  return model;
}

Graph Model::build_graph(int64_t n_tokens, int64_t n_outputs, bool hidden) const {
  GraphBuilder g(n_tokens, n_outputs);
  const NodeId out = build_decoder(g, config_, weights_, hidden);
  return g.finish(out);
}

}  // namespace minfer
