// The pipeline viewer served by `minfer viz` (web/viz.html, embedded at build time by
// src/server/embed_web.cmake).
#pragma once

namespace minfer::server {

extern const char* const kVizPage;

}  // namespace minfer::server
