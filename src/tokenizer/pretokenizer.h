// The pre-tokenizer of byte-level BPE: splits text into words with the regular expressions that
// llama.cpp (llama-vocab.cpp, llm_tokenizer_bpe) uses for each tokenizer.ggml.pre value, run on
// PCRE2 (UTF + UCP, JIT).
//
// Where llama.cpp's own matcher differs from PCRE2's defaults we follow llama.cpp, since its ids
// are the reference: its whitespace set (unicode_set_whitespace: the Unicode White_Space
// property) includes U+0085 NEXT LINE, which PCRE2's \s (separators plus \t\n\v\f\r) does not,
// so every \s below is written [\s\x{85}]. Several regexes run in turn, each splitting the pieces
// the previous one produced, and text between matches becomes a piece of its own
// (unicode_regex_split).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"

namespace minfer::tokenizer {

// What a tokenizer.ggml.pre value means to llama.cpp: its split regexes and the flags it sets.
struct PreTokenizerSpec {
  std::string canonical;              // the family name ("qwen2", "llama3", "gpt2", "default", …)
  std::vector<std::string> patterns;  // PCRE2 patterns, applied in order
  bool ignore_merges = false;         // a word that is a whole token skips the merges (llama3)
  bool add_bos = false;               // default of tokenizer.ggml.add_bos_token
  bool clean_spaces = true;           // clean_up_tokenization_spaces when detokenizing
};

// The spec for a tokenizer.ggml.pre value; an empty value means "default" as in llama.cpp. An
// unknown value is an error naming it.
Result<PreTokenizerSpec> pre_tokenizer_spec(std::string_view pre);

class PreTokenizer : NonCopyable {
 public:
  static Result<std::unique_ptr<PreTokenizer>> create(const PreTokenizerSpec& spec);
  ~PreTokenizer();

  // Appends the words of `text` to `words`; together they tile `text` in order. `text` must be
  // valid UTF-8 (the regexes run without UTF checks). Thread-safe.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

 private:
  PreTokenizer() = default;
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace minfer::tokenizer
