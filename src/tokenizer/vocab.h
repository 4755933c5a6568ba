// The token table read from GGUF metadata (tokenizer.ggml.tokens / .scores / .token_type),
// shared by the BPE and SentencePiece encoders.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace minfer::tokenizer {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type; GGUF spec, "Tokenizer").
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Hash for string keys that also accepts string_view, so lookups never build a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> text;  // [n_vocab] token text as stored in the file
  std::vector<float> score;       // [n_vocab] SentencePiece log-probabilities (0 when absent)
  std::vector<TokenType> type;    // [n_vocab]
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> id_of_text;

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  // The id whose text is exactly `s`, or -1.
  int32_t find(std::string_view s) const {
    auto it = id_of_text.find(s);
    return it == id_of_text.end() ? -1 : it->second;
  }
};

}  // namespace minfer::tokenizer
