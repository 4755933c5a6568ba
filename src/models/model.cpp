#include "models/model.h"

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
  model->file_ = std::move(file);
  return model;
}

Graph Model::build_graph(int64_t n_tokens, int64_t n_outputs, bool hidden) const {
  GraphBuilder g(n_tokens, n_outputs);
  const NodeId out = build_decoder(g, config_, weights_, hidden);
  return g.finish(out);
}

}  // namespace minfer
