// The routes of a server over many models (serve --models-dir, server/model_registry.h): which
// model a request names, the model list, and /models/load and /models/unload.
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "server/http_io.h"
#include "server/http_server.h"
#include "server/model_registry.h"

namespace minfer::server {

namespace {

ApiError model_not_found(const std::string& message) {
  ApiError e = api_error(404, message, "invalid_request_error", "model_not_found");
  e.param = "model";
  return e;
}

// The `model` a body names ("" when none). Error: `model` is not a string.
std::optional<ApiError> requested_model(const Json* body, std::string& name) {
  name.clear();
  if (body == nullptr) return std::nullopt;
  auto it = body->find("model");
  if (it == body->end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return bad_request("[server] 'model' must be a string", "model");
  name = it->get<std::string>();
  return std::nullopt;
}

// A registry error as the HTTP answer: unknown → 404, busy → 409, a failed load → 500.
ApiError registry_error(const Status& st) {
  if (st.code() == ErrorCode::kNotFound) return model_not_found(st.message());
  if (st.code() == ErrorCode::kResourceExhausted) {
    return api_error(409, st.message(), "invalid_request_error", "model_busy");
  }
  return api_error(500, st.message(), "server_error", "model_load_failed");
}

}  // namespace

BackendRef HttpServer::registry_backend(HttpResponse& res, const Json* body) const {
  std::string name;
  if (auto e = requested_model(body, name)) {
    send_error(res, *e);
    return nullptr;
  }
  if (name.empty()) {
    if (registry_->models().empty()) {
      send_error(res, model_not_found("[server] no models to serve (the models folder is empty)"));
      return nullptr;
    }
    name = registry_->models().front().name;
  }
  Result<ModelLease> lease = registry_->acquire(name);
  if (!lease.is_ok()) {
    send_error(res, registry_error(lease.status()));
    return nullptr;
  }
  return std::move(lease).value();
}

void HttpServer::list_registry_models(HttpResponse& res) {
  Json data = Json::array();
  const auto created = static_cast<int64_t>(std::time(nullptr));
  for (const ModelEntry& m : registry_->models()) {
    data.push_back(Json{{"id", m.name},
                        {"object", "model"},
                        {"created", created},
                        {"owned_by", "minfer"},
                        {"status", registry_->is_loaded(m.name) ? "loaded" : "unloaded"},
                        {"path", m.path.string()}});
  }
  send_json(res, Json{{"object", "list"}, {"data", data}});
}

namespace {

// The `model` of a /models/load or /models/unload body into `name`; false (and the error
// answered) without a registry, a bad body or no `model`.
bool control_target(const ModelRegistry* registry, const HttpRequest& req, HttpResponse& res,
                    Json& body, std::string& name) {
  std::optional<ApiError> e;
  if (registry == nullptr) {
    e = bad_request(fmt::format("[server] {} needs serve --models-dir", req.path));
  } else if (!(e = parse_body(req, body)) && !(e = requested_model(&body, name)) && name.empty()) {
    e = bad_request("[server] 'model' is required", "model");
  }
  if (e) send_error(res, *e);
  return !e;
}

}  // namespace

void HttpServer::handle_models_load(const HttpRequest& req, HttpResponse& res) {
  Json body;
  std::string name;
  if (!control_target(registry_, req, res, body, name)) return;
  if (registry_backend(res, &body) == nullptr) return;
  send_json(res, Json{{"model", name}, {"status", "loaded"}});
}

void HttpServer::handle_models_unload(const HttpRequest& req, HttpResponse& res) {
  Json body;
  std::string name;
  if (!control_target(registry_, req, res, body, name)) return;
  if (Status st = registry_->unload(name); !st.is_ok()) {
    return send_error(res, registry_error(st));
  }
  send_json(res, Json{{"model", name}, {"status", "unloaded"}});
}

}  // namespace minfer::server
