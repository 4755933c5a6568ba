// The chat page served at / (web/chat.html, embedded at build time by src/server/embed_web.cmake).
#pragma once

namespace minfer::server {

extern const char* const kChatPage;

}  // namespace minfer::server
