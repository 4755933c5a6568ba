#include "server/http_io.h"

#include <fmt/format.h>

#include "core/json_nesting.h"

namespace minfer::server {

ApiError api_error(int status, std::string message, std::string type, std::string code) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.code = std::move(code);
  return e;
}

ApiError model_loading() {
  return api_error(503, "[server] the model is still loading", "unavailable_error",
                   "model_loading");
}

std::optional<ApiError> parse_body(const HttpRequest& req, Json& body) {
  if (const auto excess = json_shape_excess(req.body)) {
    return bad_request("[server] the body " + *json_shape_error(req.body), "",
                       excess->too_deep ? "json_too_deep" : "json_too_many_keys");
  }
  try {
    body = Json::parse(req.body);
  } catch (const Json::parse_error& e) {
    return bad_request(fmt::format("[server] the body is not valid JSON: {}", e.what()), "",
                       "invalid_json");
  }
  if (!body.is_object()) {
    return bad_request(
        fmt::format("[server] the body must be a JSON object, got {}", body.type_name()), "",
        "invalid_json");
  }
  return std::nullopt;
}

void send_json(HttpResponse& res, const Json& j) {
  res.set_content(dump(j), kJsonType);
}

void send_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(e.to_json()), kJsonType);
}

}  // namespace minfer::server
