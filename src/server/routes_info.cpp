// The routes that do not generate: the chat page and its static files, health, metrics, the
// model list, the tokenizer (llama.cpp's /tokenize and /detokenize), and llama-server's /props
// and /apply-template.
#include <cstdint>
#include <ctime>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "server/chat_page.h"
#include "server/http_io.h"
#include "server/http_server.h"

namespace minfer::server {

namespace {

// The page may load nothing but this server's files (no CDN, no images from model output);
// inline styles stay allowed for KaTeX's layout. fetch() may reach other http(s) servers: the MCP
// servers the user adds in the page's settings (web/tools.js), each of which must allow the page's
// origin by CORS; scripts still come from here only, so model output cannot call out.
constexpr const char* kChatPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; font-src 'self'; connect-src 'self' http: https:; object-src 'none'; base-uri "
    "'none'; frame-ancestors 'none'";

struct StaticFile {
  const char* content_type;
  std::string body;
  std::string etag;  // "\"<FNV-1a of the body>\"": a browser revalidates and gets 304
};

// kWebAssets by path, their pieces joined.
std::unordered_map<std::string_view, StaticFile> join_static_files() {
  std::unordered_map<std::string_view, StaticFile> files;
  for (size_t i = 0; i < kWebAssetCount; ++i) {
    const WebAsset& a = kWebAssets[i];
    StaticFile f{a.content_type, {}, {}};
    for (size_t p = 0; p < a.n_pieces; ++p) f.body += a.pieces[p];
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char c : f.body) h = (h ^ c) * 1099511628211ull;
    f.etag = fmt::format("\"{:016x}\"", h);
    files.emplace(a.path, std::move(f));
  }
  return files;
}

}  // namespace

void HttpServer::handle_page(const HttpRequest&, HttpResponse& res) {
  res.set_header("Content-Security-Policy", kChatPagePolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(kChatPage, "text/html; charset=utf-8");
}

void HttpServer::handle_static(const HttpRequest& req, HttpResponse& res) {
  static const std::unordered_map<std::string_view, StaticFile> files = join_static_files();
  const auto it = files.find(req.path);
  if (it == files.end()) {
    res.status = 404;
    return;
  }
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", it->second.etag);
  if (req.get_header_value("If-None-Match") == it->second.etag) {
    res.status = 304;
    return;
  }
  res.set_content(it->second.body, it->second.content_type);
}

void HttpServer::handle_health(const HttpRequest&, HttpResponse& res) {
  // Draining after SIGTERM: a load balancer's health check sees the replica leave while its
  // requests in flight finish.
  if (draining_.load()) {
    return send_error(
        res, api_error(503, "[server] shutting down", "unavailable_error", "shutting_down"));
  }
  // With a registry the server is ready at once: models load on request.
  if (registry_ == nullptr && ready_backend(res) == nullptr) return;
  res.set_content(R"({"status":"ok"})", kJsonType);
}

void HttpServer::handle_metrics(const HttpRequest&, HttpResponse& res) {
  if (registry_ != nullptr) {  // the HTTP and request counters; the scheduler's are per model
    return res.set_content(metrics_.format(BatchStats{}),
                           "text/plain; version=0.0.4; charset=utf-8");
  }
  BackendRef b = ready_backend(res);
  if (b == nullptr) return;
  res.set_content(metrics_.format(b->generator->stats()),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::handle_models(const HttpRequest&, HttpResponse& res) {
  if (registry_ != nullptr) return list_registry_models(res);
  BackendRef b = ready_backend(res);
  if (b == nullptr) return;
  Json model{{"id", b->model_name},
             {"object", "model"},
             {"created", static_cast<int64_t>(std::time(nullptr))},
             {"owned_by", "minfer"},
             {"meta",
              {{"n_ctx", b->generator->n_ctx()},
               {"n_vocab", b->model->n_vocab()},
               {"n_parallel", b->generator->n_parallel()}}}};
  send_json(res, Json{{"object", "list"}, {"data", Json::array({model})}});
}

void HttpServer::handle_props(const HttpRequest& req, HttpResponse& res) {
  Json query = Json::object();
  if (req.has_param("model")) query["model"] = req.get_param_value("model");
  BackendRef b = ready_backend(res, &query);
  if (b == nullptr) return;
  const Result<std::string> tmpl = b->model->chat_template();
  Json props{
      {"model_path", b->model->path()},
      {"model_alias", b->model_name},
      {"n_ctx", b->generator->n_ctx()},
      {"total_slots", b->generator->n_parallel()},
      {"default_generation_settings",
       {{"n_ctx", b->generator->n_ctx()}, {"params", sampling_json(b->model->default_params())}}},
      {"chat_template", tmpl.is_ok() ? *tmpl : std::string()},
      {"modalities", {{"vision", false}, {"audio", false}}},
      {"build_info", "minfer " MINFER_VERSION_STRING}};
  if (!tmpl.is_ok()) props["chat_template_error"] = tmpl.status().message();
  send_json(res, props);
}

void HttpServer::handle_apply_template(const HttpRequest& req, HttpResponse& res) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array()) {
    return send_error(res, bad_request("[server] 'messages' must be an array", "messages"));
  }
  Result<std::string> prompt = b->model->render_chat_request(dump(body));
  if (!prompt.is_ok()) {
    return send_error(res,
                      bad_request("[server] the chat template failed: " + prompt.status().message(),
                                  "messages", "template_error"));
  }
  send_json(res, Json{{"prompt", std::move(prompt).value()}});
}

namespace {

// /tokenize's options, each an optional boolean.
struct TokenizeOptions {
  bool add_special = false;
  bool parse_special = true;
  bool with_pieces = false;
};

std::optional<ApiError> parse_tokenize_options(const Json& body, TokenizeOptions& out) {
  for (auto [field, value] :
       {std::pair{"add_special", &out.add_special}, std::pair{"parse_special", &out.parse_special},
        std::pair{"with_pieces", &out.with_pieces}}) {
    if (auto it = body.find(field); it != body.end()) {
      if (!it->is_boolean()) {
        return bad_request(fmt::format("[server] '{}' must be a boolean", field), field);
      }
      *value = it->get<bool>();
    }
  }
  return std::nullopt;
}

}  // namespace

void HttpServer::handle_tokenize(const HttpRequest& req, HttpResponse& res) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  auto content = body.find("content");
  if (content == body.end() || !content->is_string()) {
    return send_error(res, bad_request("[server] 'content' must be a string", "content"));
  }
  TokenizeOptions options;
  if (auto e = parse_tokenize_options(body, options)) return send_error(res, *e);
  const std::vector<int32_t> ids =
      b->model->tokenize(content->get<std::string>(), options.add_special, options.parse_special);
  Json tokens = Json::array();
  for (const int32_t id : ids) {
    if (options.with_pieces) {
      // Ids from tokenize() are in the vocabulary: token_piece cannot fail.
      Result<std::string> piece = b->model->token_piece(id);
      tokens.push_back(Json{{"id", id}, {"piece", piece.is_ok() ? *piece : std::string()}});
    } else {
      tokens.push_back(id);
    }
  }
  send_json(res, Json{{"tokens", tokens}});
}

void HttpServer::handle_detokenize(const HttpRequest& req, HttpResponse& res) {
  Json body;
  BackendRef b = ready_backend_with_body(req, res, body);
  if (b == nullptr) return;
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) {
    return send_error(res,
                      bad_request("[server] 'tokens' must be an array of token ids", "tokens"));
  }
  std::vector<int32_t> ids;
  for (const Json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= b->model->n_vocab()) {
      return send_error(res, bad_request(fmt::format("[server] 'tokens' must hold token ids in "
                                                     "0..{}",
                                                     b->model->n_vocab() - 1),
                                         "tokens", "invalid_value"));
    }
    ids.push_back(t.get<int32_t>());
  }
  Result<std::string> text = b->model->detokenize(ids);
  if (!text.is_ok()) return send_error(res, bad_request(text.status().message(), "tokens"));
  send_json(res, Json{{"content", text.value()}});
}

}  // namespace minfer::server
