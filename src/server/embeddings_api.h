// OpenAI's embeddings wire format (POST /v1/embeddings): the request's inputs and options checked,
// the reply built. https://platform.openai.com/docs/api-reference/embeddings
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/openai_api.h"

namespace minfer::server {

// A checked /v1/embeddings body.
struct EmbeddingRequest {
  // `input`: texts (a string or an array of strings), else token arrays (an array of ids or an
  // array of arrays of ids).
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_inputs;
  bool base64 = false;     // encoding_format "base64": little-endian f32 bytes
  int64_t dimensions = 0;  // > 0: the first `dimensions` values, normalized again
};

// Checks `input`, `encoding_format` and `dimensions` (1..n_embd).
std::optional<ApiError> parse_embedding_request(const Json& body, int64_t n_embd,
                                                EmbeddingRequest& out);

// The first `dimensions` values of v, L2-normalized again (Matryoshka truncation).
void truncate_embedding(std::vector<float>& v, int64_t dimensions);

// The floats as base64 of their little-endian bytes (OpenAI's encoding_format "base64").
std::string base64_floats(std::span<const float> v);

// {object: "list", data: [{object: "embedding", index, embedding}], model, usage}.
Json embedding_reply(const std::vector<std::vector<float>>& vectors, bool base64,
                     const std::string& model, int64_t prompt_tokens);

}  // namespace minfer::server
