// Text ↔ token ids for a model, built from its GGUF metadata (tokenizer.ggml.*), with llama.cpp's
// ids on every input.
//
// Two model types: byte-level BPE ("gpt2": Qwen, Llama 3, GPT-2) whose pre-tokenizer regexes are
// chosen by tokenizer.ggml.pre, and SentencePiece-style ("llama": Llama 2, TinyStories) with
// scores, <0xNN> byte fallback and the ▁ space prefix. Special tokens (CONTROL, USER_DEFINED and
// UNKNOWN types) are cut out of the text whole before either runs, longest first: CONTROL and
// UNKNOWN ones only when the caller asks (parse_special, for rendered chat prompts), USER_DEFINED
// ones (<think>, <tool_call>, …) always, as llama.cpp and Hugging Face tokenizers do.
//
// A Tokenizer is immutable after from_gguf; every method is const and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/vocab.h"

namespace minfer {

using tokenizer::TokenType;

enum class TokenizerKind {
  kBpe,  // tokenizer.ggml.model = "gpt2"
  kSpm,  // tokenizer.ggml.model = "llama"
};

inline constexpr int32_t kNoToken = -1;

class Tokenizer : NonCopyable {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& file);
  ~Tokenizer();

  // Token ids of `text`. add_special: put the model's BOS in front when it adds one
  // (add_bos()) and its EOS at the end when it adds one (add_eos()) — llama.cpp's add_special.
  // parse_special: match CONTROL/UNKNOWN token texts such as <|im_start|> as those tokens;
  // otherwise they are tokenized as plain text. Invalid UTF-8 is tokenized as llama.cpp does it
  // (each undecodable byte becomes U+FFFD for BPE; SPM falls back to byte tokens).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes one token stands for: byte-level BPE undoes the GPT-2 byte mapping, SPM turns ▁
  // into a space and <0xNN> into that byte. CONTROL and UNKNOWN tokens give their text when
  // render_special, else nothing; USER_DEFINED tokens always give their text; UNUSED and
  // UNDEFINED ones nothing. May be part of a UTF-8 character. `id` must be valid (is_valid_id).
  std::string token_to_piece(int32_t id, bool render_special = true) const;

  // The text of a sequence: the pieces joined, then llama.cpp's detokenizer rules: the space
  // the SPM prefix added is stripped from the first token, and for tokenizers whose
  // clean_up_tokenization_spaces is on (GPT-2, Llama 3) " ." " ," " !" " ?" " 's" … are closed
  // up. Ids must be valid.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // An error naming the first id outside [0, n_vocab).
  Status check_ids(std::span<const int32_t> ids) const;
  bool is_valid_id(int32_t id) const { return id >= 0 && id < n_vocab(); }

  int32_t n_vocab() const { return vocab_.size(); }
  TokenizerKind kind() const { return kind_; }
  // tokenizer.ggml.pre as given ("" when absent).
  const std::string& pre() const { return pre_; }

  int32_t bos_id() const { return bos_id_; }  // kNoToken when the model has none
  int32_t eos_id() const { return eos_id_; }
  int32_t eot_id() const { return eot_id_; }
  int32_t eom_id() const { return eom_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  // End of generation: eos, eot, eom and the tokens llama.cpp recognizes by text (<|im_end|>,
  // <|endoftext|>, <|eot_id|>, <end_of_turn>, …, and the FIM pad/repo/file-separator tokens).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  TokenType token_type(int32_t id) const { return vocab_.type[static_cast<size_t>(id)]; }
  const std::string& token_text(int32_t id) const { return vocab_.text[static_cast<size_t>(id)]; }
  // The id whose stored text is exactly `text`, or kNoToken.
  int32_t find_token(std::string_view text) const { return vocab_.find(text); }

 private:
  Tokenizer() = default;
  Status load(const GgufFile& file);
  // After the vocabulary and the ids from keys are read: the special tokens llama.cpp finds by
  // text, the end-of-generation set, special_ids_ and pieces_.
  Status finish_special_tokens(const GgufFile& file);
  // tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id, or found by text; kNoToken if none.
  using FimIds = std::array<int32_t, 6>;
  // eot, eom and the FIM tokens unset by keys, found by text.
  Result<FimIds> detect_special_ids(const GgufFile& file);
  std::vector<int32_t> end_of_generation_ids(const FimIds& fim_ids);  // sorted
  void build_pieces();
  // Splits text into raw pieces and special tokens (llama.cpp's tokenizer_st_partition).
  struct Fragment {
    int32_t token;  // kNoToken for text
    std::string_view text;
  };
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;

  tokenizer::Vocab vocab_;
  TokenizerKind kind_ = TokenizerKind::kSpm;
  std::string pre_;
  tokenizer::PreTokenizerSpec pre_spec_;
  std::unique_ptr<tokenizer::PreTokenizer> pre_tokenizer_;  // BPE only
  std::unique_ptr<tokenizer::BpeModel> bpe_;                // BPE only
  std::unique_ptr<tokenizer::SpmModel> spm_;                // SPM only

  int32_t bos_id_ = kNoToken;
  int32_t eos_id_ = kNoToken;
  int32_t eot_id_ = kNoToken;
  int32_t eom_id_ = kNoToken;
  int32_t unk_id_ = kNoToken;
  int32_t pad_id_ = kNoToken;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool clean_spaces_ = false;
  bool ignore_merges_ = false;
  // tokenizer.ggml.model gemma4: BPE on raw UTF-8 (no GPT-2 byte mapping) with spaces written
  // as ▁ (U+2581), <0xXX> byte fallback, and always a BOS (llama.cpp forces add_bos).
  bool raw_utf8_ = false;

  std::vector<int32_t> special_ids_;  // CONTROL/USER_DEFINED/UNKNOWN ids, longest text first
  std::vector<int32_t> eog_ids_;      // sorted
  std::vector<std::string> pieces_;   // [n_vocab] token_to_piece(id, render_special = true)
};

}  // namespace minfer
