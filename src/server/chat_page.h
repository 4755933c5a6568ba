// The chat page served at / (web/chat.html, embedded at build time by src/server/embed_web.cmake)
// and the files it loads from /static/ (src/server/web_assets.cmake lists them).
#pragma once

#include <cstddef>
#include <string_view>

namespace minfer::server {

extern const char* const kChatPage;

// One file under /static/: its bytes are the concatenation of `pieces` (string literals the
// compiler accepts whole; fonts hold NUL bytes, so each piece carries its length).
struct WebAsset {
  const char* path;  // "/static/chat.js"
  const char* content_type;
  const std::string_view* pieces;
  size_t n_pieces;
};
extern const WebAsset kWebAssets[];
extern const size_t kWebAssetCount;

}  // namespace minfer::server
