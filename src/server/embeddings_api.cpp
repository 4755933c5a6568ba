#include "server/embeddings_api.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/input_limits.h"

namespace minfer::server {

namespace {

std::optional<ApiError> parse_ids(const Json& ids, const std::string& name,
                                  std::vector<int32_t>& out) {
  if (ids.empty()) return bad_request(fmt::format("[server] '{}' is empty", name), "input");
  for (size_t i = 0; i < ids.size(); ++i) {
    const Json& id = ids[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return wrong_type(fmt::format("{}[{}]", name, i), "a token id (an integer ≥ 0)", id);
    }
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

// `input`: a string, an array of strings, an array of ids, or an array of arrays of ids.
std::optional<ApiError> parse_input(const Json& input, EmbeddingRequest& out) {
  if (input.is_string()) {
    out.texts.push_back(input.get<std::string>());
    return std::nullopt;
  }
  if (!input.is_array()) {
    return wrong_type("input", "a string, an array of strings or an array of token arrays", input);
  }
  if (input.empty()) return bad_request("[server] 'input' is an empty array", "input");
  if (input[0].is_number()) {
    out.token_inputs.emplace_back();
    return parse_ids(input, "input", out.token_inputs.back());
  }
  if (input.size() > limits::kMaxEmbeddingInputs) {
    return bad_request(fmt::format("[server] 'input' holds {} inputs; the limit is {}",
                                   input.size(), limits::kMaxEmbeddingInputs),
                       "input", "invalid_value");
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string name = fmt::format("input[{}]", i);
    if (item.is_string() && out.token_inputs.empty()) {
      out.texts.push_back(item.get<std::string>());
    } else if (item.is_array() && out.texts.empty()) {
      out.token_inputs.emplace_back();
      if (auto e = parse_ids(item, name, out.token_inputs.back())) return e;
    } else {
      return wrong_type(name, input[0].is_string() ? "a string" : "an array of token ids", item);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_embedding_request(const Json& body, int64_t n_embd,
                                                EmbeddingRequest& out) {
  auto input = body.find("input");
  if (input == body.end()) return bad_request("[server] 'input' is required", "input");
  if (auto e = parse_input(*input, out)) return e;
  if (auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      return bad_request(
          fmt::format("[server] 'encoding_format' must be \"float\" or \"base64\", got {}",
                      f->dump()),
          "encoding_format");
    }
    out.base64 = *f == "base64";
  }
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1 || d->get<int64_t>() > n_embd) {
      return bad_request(fmt::format("[server] 'dimensions' must be an integer from 1 to the "
                                     "model's {} dimensions, got {}",
                                     n_embd, d->dump()),
                         "dimensions");
    }
    out.dimensions = d->get<int64_t>();
  }
  return std::nullopt;
}

void truncate_embedding(std::vector<float>& v, int64_t dimensions) {
  if (dimensions <= 0 || dimensions >= static_cast<int64_t>(v.size())) return;
  v.resize(static_cast<size_t>(dimensions));
  double sum = 0.0;
  for (const float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

std::string base64_floats(std::span<const float> v) {
  static_assert(std::endian::native == std::endian::little, "f32 bytes are written as held");
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63u] : '=';
    }
  }
  return out;
}

Json embedding_reply(const std::vector<std::vector<float>>& vectors, bool base64,
                     const std::string& model, int64_t prompt_tokens) {
  Json data = Json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    Json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = base64_floats(vectors[i]);
    } else {
      item["embedding"] = vectors[i];
    }
    data.push_back(std::move(item));
  }
  return Json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace minfer::server
