// POST /slots/{id}?action=save|restore|erase (llama-server's slot API): a slot's KV state to a
// file under --slot-save-path, back from one, or forgotten. A slot is where one request of the
// batch generator runs (BatchOptions::keep_slots); a request pins one with "id_slot".
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "server/http_io.h"
#include "server/http_server.h"

namespace minfer::server {

namespace {

// Ok when `name` is a plain file name: a path built from it stays in the save folder.
std::optional<ApiError> check_filename(const std::string& name) {
  bool plain = !name.empty() && name.size() <= 255 && name != "." && name != "..";
  for (const char c : name) {
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) plain = false;
  }
  if (plain) return std::nullopt;
  return bad_request(
      fmt::format("[server] invalid filename '{}': expected a plain file name in the "
                  "slot save folder (no '/', '\\\\', '..' or control characters)",
                  name),
      "filename", "invalid_filename");
}

// A slot action's error as the HTTP answer.
ApiError slot_error(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kNotFound:
      return api_error(404, st.message(), "not_found_error", "file_not_found");
    case ErrorCode::kResourceExhausted:
      return api_error(503, st.message(), "unavailable_error", "no_kv_blocks");
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      return api_error(500, st.message(), "server_error", "");
    default:
      return bad_request(st.message());
  }
}

// llama-server's reply: save names its counts n_saved / n_written / save_ms, restore
// n_restored / n_read / restore_ms, erase only n_erased.
Json slot_reply_json(SlotAction action, const SlotReply& r, const std::string& filename) {
  if (action == SlotAction::kErase) return Json{{"id_slot", r.id_slot}, {"n_erased", r.n_tokens}};
  const bool save = action == SlotAction::kSave;
  return Json{{"id_slot", r.id_slot},
              {"filename", filename},
              {save ? "n_saved" : "n_restored", r.n_tokens},
              {save ? "n_written" : "n_read", r.n_bytes},
              {"timings", {{save ? "save_ms" : "restore_ms", r.ms}}}};
}

}  // namespace

void HttpServer::handle_slots_list(const HttpRequest&, HttpResponse& res) {
  if (!options_.slots_endpoint) {
    return send_error(res, api_error(501,
                                     "[server] the slots endpoint is off: start the server with "
                                     "--slots to serve GET /slots",
                                     "not_supported_error", "slots_disabled"));
  }
  BackendRef b = ready_backend(res);
  if (b == nullptr) return;
  const int64_t n_ctx = b->generator->n_ctx();
  Json out = Json::array();
  for (const SlotState& s : b->generator->slots()) {
    out.push_back(Json{{"id", s.id},
                       {"id_task", s.request_id},
                       {"n_ctx", n_ctx},
                       {"is_processing", s.busy},
                       {"n_cached", s.n_cached},
                       {"n_prompt_tokens", s.n_prompt},
                       {"n_decoded", s.n_generated}});
  }
  send_json(res, out);
}

void HttpServer::handle_slots(const HttpRequest& req, HttpResponse& res) {
  if (options_.slot_save_path.empty()) {
    return send_error(res, api_error(501,
                                     "[server] slot actions are not supported: start the server "
                                     "with --slot-save-path DIR",
                                     "not_supported_error", "not_supported"));
  }
  const std::string action_name = req.get_param_value("action");
  SlotAction action = SlotAction::kErase;
  if (action_name == "save") {
    action = SlotAction::kSave;
  } else if (action_name == "restore") {
    action = SlotAction::kRestore;
  } else if (action_name != "erase") {
    return send_error(res, bad_request(fmt::format("[server] invalid action '{}': expected save, "
                                                   "restore or erase",
                                                   action_name),
                                       "action"));
  }
  Json body = Json::object();
  if (!req.body.empty()) {
    if (auto e = parse_body(req, body)) return send_error(res, *e);
  }
  std::string filename;
  if (action != SlotAction::kErase) {
    auto it = body.find("filename");
    if (it == body.end() || !it->is_string()) {
      return send_error(res, bad_request("[server] 'filename' (a string) is required", "filename"));
    }
    filename = it->get<std::string>();
    if (auto e = check_filename(filename)) return send_error(res, *e);
  }
  BackendRef b = ready_backend(res, &body);
  if (b == nullptr) return;
  // Digits only (the route's pattern); too many for an int32 name no slot either.
  const std::string digits = req.matches[1];
  const int32_t slot = digits.size() > 9 ? INT32_MAX : std::stoi(digits);
  const std::string path = options_.slot_save_path + "/" + filename;
  Result<SlotReply> reply = b->generator->slot_action(action, slot, path).get();
  if (!reply.is_ok()) return send_error(res, slot_error(reply.status()));
  send_json(res, slot_reply_json(action, *reply, filename));
}

}  // namespace minfer::server
