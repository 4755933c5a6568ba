// The request fuzzer's input format (fuzz/request_fuzz.cpp), shared with its seed writer
// (fuzz/make_request_seeds.cpp): one or more requests separated by NUL bytes, each three header
// bytes and the body. Byte 0 picks the route (kRoutes[byte % kRouteCount]), byte 1 the model
// (kModels[byte % kModelCount]), byte 2 the server's options (byte % kVariantCount: 0 serve's
// defaults, 1 context shift, prompt-lookup speculation, a reasoning budget and a default grammar).
#pragma once

#include <cstddef>

namespace minfer::fuzz {

struct RouteCase {
  const char* method;
  const char* target;  // path and query
};

inline constexpr RouteCase kRoutes[] = {
    {"POST", "/v1/chat/completions"},
    {"POST", "/v1/completions"},
    {"POST", "/v1/messages"},
    {"POST", "/v1/messages/count_tokens"},
    {"POST", "/v1/responses"},
    {"POST", "/v1/embeddings"},
    {"POST", "/tokenize"},
    {"POST", "/detokenize"},
    {"POST", "/apply-template"},
    {"POST", "/slots/0?action=save"},
    {"POST", "/slots/1?action=restore"},
    {"POST", "/slots/0?action=erase"},
    {"POST", "/slots/7?action=save"},  // no such slot
    {"GET", "/slots"},
    {"GET", "/props"},
    {"GET", "/metrics"},
};
inline constexpr size_t kRouteCount = sizeof(kRoutes) / sizeof(kRoutes[0]);

// stories260K: SentencePiece, no template (ChatML); the qwentok models: byte-level BPE over the
// real Qwen vocabulary (151,936 tokens) with Qwen3's template (tools, thinking) and Qwen2.5's
// (tools).
inline constexpr const char* kModels[] = {"stories260K.gguf", "qwen3-qwentok-tiny-q8_0.gguf",
                                          "qwen2.5-qwentok-tiny-q8_0.gguf"};
inline constexpr size_t kModelCount = sizeof(kModels) / sizeof(kModels[0]);

inline constexpr size_t kVariantCount = 2;
inline constexpr size_t kMaxRequests = 4;  // requests of one input; the rest is ignored

}  // namespace minfer::fuzz
