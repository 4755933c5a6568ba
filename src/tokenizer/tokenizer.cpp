#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace minfer {

using tokenizer::BpeModel;
using tokenizer::PreTokenizer;
using tokenizer::SpmModel;

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 ▁, SentencePiece's space

bool is_special_type(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

// Reads an optional integer key as a token id; nullopt when absent or outside the vocabulary
// (llama.cpp then keeps its default; files write 0xFFFFFFFF for "none").
Result<std::optional<int32_t>> optional_id(const GgufFile& file, std::string_view key,
                                           int32_t n_vocab) {
  if (!file.has(key)) return std::optional<int32_t>();
  MINFER_ASSIGN_OR_RETURN(int64_t id, file.get_integer(key));
  if (id < 0 || id >= n_vocab) return std::optional<int32_t>();
  return std::optional<int32_t>(static_cast<int32_t>(id));
}

Result<std::optional<bool>> optional_bool(const GgufFile& file, std::string_view key) {
  if (!file.has(key)) return std::optional<bool>();
  MINFER_ASSIGN_OR_RETURN(bool value, file.get<bool>(key));
  return std::optional<bool>(value);
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
       pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// clean_up_tokenization_spaces as llama.cpp's detokenizer applies it, in its three passes.
std::string clean_up_spaces(std::string text) {
  if (text.size() < 2) return text;
  // 1: " ?", " !", " .", " ," lose the space.
  std::string a;
  a.reserve(text.size());
  a.push_back(text[0]);
  for (size_t i = 1; i < text.size(); ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // 2: " ' " becomes "'".
  std::string b;
  b.reserve(a.size());
  if (!a.empty()) b.push_back(a[0]);
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      a[++i] = '\0';  // the next space is dropped and no longer counts as a preceding space
    }
    b.push_back(x);
  }
  // 3: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
  std::string c;
  c.reserve(b.size());
  if (!b.empty()) c.push_back(b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') {
        c.pop_back();
      } else if (x1 != 't' && x1 != 'd' && i + 2 < b.size()) {
        const char x2 = b[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
      }
    }
    c.push_back(x);
  }
  return c;
}

}  // namespace

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& file) {
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  MINFER_RETURN_IF_ERROR(tok->load(file));
  return tok;
}

namespace {

// tokenizer.ggml.scores (float32 or int32, one per token; 0 where the key is absent).
Result<std::vector<float>> read_scores(const GgufFile& file, size_t n_vocab) {
  std::vector<float> scores(n_vocab, 0.0f);
  if (file.has("tokenizer.ggml.scores")) {
    const GgufValue* v = file.find("tokenizer.ggml.scores");
    std::vector<float> values;
    if (auto f = v->array_as<float>()) {
      values = std::move(*f);
    } else if (auto i = v->array_as<int32_t>()) {
      for (int32_t s : *i) values.push_back(static_cast<float>(s));
    } else {
      return make_error(ErrorCode::kCorrupt,
                        "[tokenizer] tokenizer.ggml.scores: expected an array of float32 or "
                        "int32, got {}",
                        v->describe());
    }
    if (values.size() < n_vocab) {
      return make_error(ErrorCode::kCorrupt,
                        "[tokenizer] tokenizer.ggml.scores has {} entries: expected {} (one per "
                        "token)",
                        values.size(), n_vocab);
    }
    std::copy_n(values.begin(), n_vocab, scores.begin());
  }
  return scores;
}

// tokenizer.ggml.token_type (one per token; normal where the key is absent, undefined for a value
// outside 1..6).
Result<std::vector<TokenType>> read_token_types(const GgufFile& file, size_t n_vocab) {
  std::vector<TokenType> types(n_vocab, TokenType::kNormal);
  if (file.has("tokenizer.ggml.token_type")) {
    MINFER_ASSIGN_OR_RETURN(const std::vector<int32_t> values,
                            file.get_array<int32_t>("tokenizer.ggml.token_type"));
    if (values.size() < n_vocab) {
      return make_error(ErrorCode::kCorrupt,
                        "[tokenizer] tokenizer.ggml.token_type has {} entries: expected {} (one "
                        "per token)",
                        values.size(), n_vocab);
    }
    for (size_t i = 0; i < n_vocab; ++i) {
      const int32_t t = values[i];
      types[i] = (t >= 1 && t <= 6) ? static_cast<TokenType>(t) : TokenType::kUndefined;
    }
  }
  return types;
}

}  // namespace

Status Tokenizer::load(const GgufFile& file) {
  MINFER_ASSIGN_OR_RETURN(const std::string model, file.get_string("tokenizer.ggml.model"));
  if (model == "gpt2" || model == "gemma4") {
    kind_ = TokenizerKind::kBpe;
    raw_utf8_ = model == "gemma4";
  } else if (model == "llama") {
    kind_ = TokenizerKind::kSpm;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "[tokenizer] tokenizer.ggml.model = '{}' is not supported: expected 'gpt2' "
                      "(byte-level BPE), 'gemma4' (BPE on UTF-8) or 'llama' (SentencePiece)",
                      gguf_escape(model));
  }

  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                          file.get_string_array("tokenizer.ggml.tokens"));
  const size_t n_vocab = tokens->size();
  if (n_vocab == 0) {
    return make_error(ErrorCode::kCorrupt, "[tokenizer] tokenizer.ggml.tokens is empty");
  }

  MINFER_ASSIGN_OR_RETURN(std::vector<float> scores, read_scores(file, n_vocab));
  MINFER_ASSIGN_OR_RETURN(std::vector<TokenType> types, read_token_types(file, n_vocab));

  vocab_.text.reserve(n_vocab);
  vocab_.id_of_text.reserve(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) {
    // An empty token could never be matched; llama.cpp renames it so it stays unique.
    std::string text = (*tokens)[i].empty() ? fmt::format("[EMPTY_{}]", i) : (*tokens)[i];
    auto [it, inserted] = vocab_.id_of_text.emplace(text, static_cast<int32_t>(i));
    if (!inserted) {
      return make_error(ErrorCode::kCorrupt,
                        "[tokenizer] duplicate token '{}' in tokenizer.ggml.tokens: ids {} and {}",
                        gguf_escape(text), it->second, i);
    }
    vocab_.text.push_back(std::move(text));
  }
  vocab_.score = std::move(scores);
  vocab_.type = std::move(types);
  const auto n = static_cast<int32_t>(n_vocab);

  if (file.has("tokenizer.ggml.pre")) {
    MINFER_ASSIGN_OR_RETURN(pre_, file.get_string("tokenizer.ggml.pre"));
  }
  if (raw_utf8_) {
    if (!pre_.empty() && pre_ != "gemma4") {
      return make_error(ErrorCode::kUnsupported,
                        "[tokenizer] tokenizer.ggml.pre = '{}' with tokenizer.ggml.model gemma4: "
                        "expected none or 'gemma4'",
                        gguf_escape(pre_));
    }
    pre_ = "gemma4";
  }

  // llama.cpp's defaults per model type (llama_vocab::impl::load), before the keys override them.
  if (kind_ == TokenizerKind::kBpe) {
    MINFER_ASSIGN_OR_RETURN(pre_spec_, tokenizer::pre_tokenizer_spec(pre_));
    bos_id_ = 11;
    eos_id_ = 11;
    add_bos_ = pre_spec_.add_bos;
    clean_spaces_ = pre_spec_.clean_spaces;
    ignore_merges_ = pre_spec_.ignore_merges;
    add_space_prefix_ = false;
    MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* merges,
                            file.get_string_array("tokenizer.ggml.merges"));
    MINFER_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::build(vocab_, *merges, !raw_utf8_));
    bpe_ = std::make_unique<BpeModel>(std::move(bpe));
    MINFER_ASSIGN_OR_RETURN(pre_tokenizer_, PreTokenizer::create(pre_spec_));
  } else {
    bos_id_ = 1;
    eos_id_ = 2;
    unk_id_ = 0;
    add_bos_ = true;
    add_space_prefix_ = true;
    clean_spaces_ = false;
  }
  for (int32_t* id : {&bos_id_, &eos_id_, &unk_id_}) {
    if (*id >= n) *id = kNoToken;
  }

  MINFER_ASSIGN_OR_RETURN(auto space_prefix,
                          optional_bool(file, "tokenizer.ggml.add_space_prefix"));
  if (space_prefix) add_space_prefix_ = *space_prefix;

  const std::pair<std::string_view, int32_t*> id_keys[] = {
      {"tokenizer.ggml.bos_token_id", &bos_id_},     {"tokenizer.ggml.eos_token_id", &eos_id_},
      {"tokenizer.ggml.eot_token_id", &eot_id_},     {"tokenizer.ggml.eom_token_id", &eom_id_},
      {"tokenizer.ggml.unknown_token_id", &unk_id_}, {"tokenizer.ggml.padding_token_id", &pad_id_},
  };
  for (const auto& [key, id] : id_keys) {
    MINFER_ASSIGN_OR_RETURN(auto value, optional_id(file, key, n));
    if (value) *id = *value;
  }

  MINFER_ASSIGN_OR_RETURN(auto add_bos, optional_bool(file, "tokenizer.ggml.add_bos_token"));
  if (add_bos) add_bos_ = *add_bos;
  if (raw_utf8_) add_bos_ = true;  // llama.cpp forces it for gemma4, whatever the key says
  MINFER_ASSIGN_OR_RETURN(auto add_eos, optional_bool(file, "tokenizer.ggml.add_eos_token"));
  if (add_eos) add_eos_ = *add_eos;
  if (add_bos_ && bos_id_ == kNoToken) {
    return make_error(ErrorCode::kCorrupt,
                      "[tokenizer] tokenizer.ggml.add_bos_token is true but the model has no BOS "
                      "token (tokenizer.ggml.bos_token_id)");
  }
  if (add_eos_ && eos_id_ == kNoToken) {
    return make_error(ErrorCode::kCorrupt,
                      "[tokenizer] tokenizer.ggml.add_eos_token is true but the model has no EOS "
                      "token (tokenizer.ggml.eos_token_id)");
  }

  if (kind_ == TokenizerKind::kSpm) spm_ = std::make_unique<SpmModel>(vocab_, unk_id_);

  MINFER_RETURN_IF_ERROR(finish_special_tokens(file));
  return Status::ok();
}

namespace {

// llama.cpp recognizes these tokens by their text when no key names them, and makes each one a
// CONTROL token (so it is only matched with parse_special and only rendered on request).
void mark_control(tokenizer::Vocab& vocab, int32_t id) {
  if (vocab.type[id] != TokenType::kControl) vocab.type[id] = TokenType::kControl;
}

// When `id` is unset, the first of `texts` in the vocabulary becomes it (and a CONTROL token).
void detect_by_text(tokenizer::Vocab& vocab, int32_t& id,
                    std::initializer_list<std::string_view> texts) {
  if (id != kNoToken) return;
  for (std::string_view text : texts) {
    const int32_t found = vocab.find(text);
    if (found < 0) continue;
    id = found;
    mark_control(vocab, found);
    return;
  }
}

// Texts that end a turn in some model family: each one in the vocabulary is an end of
// generation (llama.cpp's special_eog_ids).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "[e~["};

// The texts llama.cpp recognizes the FIM tokens by when no key names them, each with its FimIds
// slot (0 prefix, 1 suffix, 2 middle, 3 pad, 4 repo, 5 file separator); for each slot the first
// one in the vocabulary wins.
constexpr std::pair<int, std::string_view> kFimTexts[] = {
    {0, "<|fim_prefix|>"},  {0, "<fim-prefix>"},
    {0, "<fim_prefix>"},    {0, "<\uFF5Cfim\u2581begin\uFF5C>"},
    {0, "<PRE>"},           {0, "\u2581<PRE>"},
    {0, "<|code_prefix|>"}, {0, "<|prefix|>"},
    {1, "<|fim_suffix|>"},  {1, "<fim-suffix>"},
    {1, "<fim_suffix>"},    {1, "<\uFF5Cfim\u2581hole\uFF5C>"},
    {1, "<SUF>"},           {1, "\u2581<SUF>"},
    {1, "<|code_suffix|>"}, {1, "<|suffix|>"},
    {2, "<|fim_middle|>"},  {2, "<fim-middle>"},
    {2, "<fim_middle>"},    {2, "<\uFF5Cfim\u2581end\uFF5C>"},
    {2, "<MID>"},           {2, "\u2581<MID>"},
    {2, "<|code_middle|>"}, {2, "<|middle|>"},
    {3, "<|fim_pad|>"},     {3, "<fim-pad>"},
    {3, "<fim_pad>"},       {3, "<PAD>"},
    {3, "[PAD]"},           {4, "<|fim_repo|>"},
    {4, "<|repo_name|>"},   {4, "<fim-repo>"},
    {4, "<REPO>"},          {4, "<reponame>"},
    {5, "<|file_sep|>"},
};

// The bytes of a byte-level BPE token: the GPT-2 byte mapping undone; a character outside the
// table is kept as it is.
std::string gpt2_token_bytes(std::string_view text) {
  std::string piece;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8::valid_sequence_length(text.substr(i));
    if (len == 0) {
      piece.push_back(text[i++]);
      continue;
    }
    uint32_t cp = static_cast<uint8_t>(text[i]);
    if (len > 1) {
      cp &= 0xFFu >> (len + 1);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    }
    const int byte = tokenizer::gpt2_codepoint_to_byte(cp);
    if (byte >= 0) {
      piece.push_back(static_cast<char>(byte));
    } else {
      piece.append(text.substr(i, len));
    }
    i += len;
  }
  return piece;
}

}  // namespace

Status Tokenizer::finish_special_tokens(const GgufFile& file) {
  MINFER_ASSIGN_OR_RETURN(const FimIds fim_ids, detect_special_ids(file));
  eog_ids_ = end_of_generation_ids(fim_ids);
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (is_special_type(vocab_.type[id])) special_ids_.push_back(id);
  }
  // Longest first, so a special token that contains another is matched whole.
  std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int32_t a, int32_t b) {
    return vocab_.text[a].size() > vocab_.text[b].size();
  });
  build_pieces();
  return Status::ok();
}

Result<Tokenizer::FimIds> Tokenizer::detect_special_ids(const GgufFile& file) {
  detect_by_text(vocab_, eot_id_,
                 {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                  "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                  "<\xEF\xBD\x9C"
                  "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                  "<end_of_utterance>"});
  detect_by_text(vocab_, eom_id_, {"<|eom_id|>"});

  FimIds fim_ids = {kNoToken, kNoToken, kNoToken, kNoToken, kNoToken, kNoToken};
  const std::string_view fim_keys[6] = {
      "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id",
      "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
      "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"};
  for (int i = 0; i < 6; ++i) {
    MINFER_ASSIGN_OR_RETURN(auto value, optional_id(file, fim_keys[i], n_vocab()));
    if (value) fim_ids[i] = *value;
  }
  for (const auto& [slot, text] : kFimTexts) detect_by_text(vocab_, fim_ids[slot], {text});
  return fim_ids;
}

std::vector<int32_t> Tokenizer::end_of_generation_ids(const FimIds& fim_ids) {
  // The FIM pad/repo/separator tokens, every token with an end-of-turn text, and eos/eot/eom.
  std::vector<int32_t> eog;
  for (int i = 3; i < 6; ++i) {
    if (fim_ids[i] != kNoToken) eog.push_back(fim_ids[i]);
  }
  for (std::string_view text : kEndOfGenerationTexts) {
    const int32_t id = vocab_.find(text);
    if (id < 0) continue;
    eog.push_back(id);
    mark_control(vocab_, id);
  }
  for (int32_t id : {eos_id_, eot_id_, eom_id_}) {
    if (id != kNoToken) eog.push_back(id);
  }
  // gpt-oss always renders its channel markers (llama.cpp makes them USER_DEFINED).
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const int32_t id = vocab_.find(text);
    if (id >= 0) vocab_.type[id] = TokenType::kUserDefined;
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto eog_has = [&](std::string_view text) {
    const int32_t id = vocab_.find(text);
    return id >= 0 && std::binary_search(eog.begin(), eog.end(), id);
  };
  // Takes the token with `text` out of the set and gives it `type`.
  auto drop = [&](std::string_view text, TokenType type) {
    const int32_t id = vocab_.find(text);
    eog.erase(std::find(eog.begin(), eog.end(), id));
    vocab_.type[id] = type;
  };
  // Harmony (gpt-oss) and solar-open end turns with <|return|>/<|call|>, so <|end|> is not an end
  // of generation there; Gemma 4 does not stop at </s>.
  if (eog_has("<|end|>") && ((eog_has("<|return|>") && eog_has("<|call|>")) ||
                             (eog_has("<|calls|>") && eog_has("<|flush|>")))) {
    drop("<|end|>", TokenType::kUserDefined);
  }
  if (eog_has("<|tool_response>") && eog_has("</s>")) drop("</s>", TokenType::kNormal);
  return eog;
}

void Tokenizer::build_pieces() {
  pieces_.resize(static_cast<size_t>(n_vocab()));
  for (int32_t id = 0; id < n_vocab(); ++id) {
    const std::string& text = vocab_.text[id];
    std::string& piece = pieces_[id];
    switch (vocab_.type[id]) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined:
        piece = text;
        break;
      case TokenType::kNormal:
        piece = kind_ == TokenizerKind::kSpm || raw_utf8_ ? replace_all(text, kSpaceMarker, " ")
                                                          : gpt2_token_bytes(text);
        break;
      case TokenType::kByte:
        if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
            hex_value(text[3]) >= 0 && hex_value(text[4]) >= 0) {
          piece.push_back(static_cast<char>(hex_value(text[3]) * 16 + hex_value(text[4])));
        } else {
          piece = text;
        }
        break;
      case TokenType::kUnused:
      case TokenType::kUndefined:
        break;
    }
  }
}

std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text,
                                                      bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, text});
  std::vector<Fragment> split;
  for (int32_t id : special_ids_) {
    const TokenType type = vocab_.type[id];
    if (!parse_special && type != TokenType::kUserDefined) continue;
    const std::string& special = vocab_.text[id];
    bool found = false;
    for (const Fragment& f : fragments) {
      if (f.token == kNoToken && f.text.find(special) != std::string_view::npos) {
        found = true;
        break;
      }
    }
    if (!found) continue;
    split.clear();
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        split.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t hit; (hit = rest.find(special)) != std::string_view::npos;) {
        if (hit > 0) split.push_back({kNoToken, rest.substr(0, hit)});
        split.push_back({id, {}});
        rest.remove_prefix(hit + special.size());
      }
      if (!rest.empty()) split.push_back({kNoToken, rest});
    }
    fragments.swap(split);
  }
  return fragments;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) out.push_back(bos_id_);
  const std::vector<Fragment> fragments = partition(text, parse_special);
  if (kind_ == TokenizerKind::kSpm) {
    // The space prefix goes before the first piece of text and before text that follows a
    // special token (llama.cpp's is_prev_special).
    bool prev_special = true;
    std::string escaped;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      escaped.clear();
      if (add_space_prefix_ && prev_special) escaped.append(kSpaceMarker);
      escaped.append(replace_all(f.text, " ", kSpaceMarker));
      spm_->encode(escaped, out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
      } else {
        encode_bpe(f.text, out);
      }
    }
  }
  if (add_special && add_eos_) out.push_back(eos_id_);
  return out;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::string escaped;
  if (raw_utf8_) {
    escaped = replace_all(text, " ", kSpaceMarker);
    text = escaped;
  }
  // Invalid UTF-8 is rewritten the way llama.cpp decodes it; valid text is used in place.
  std::string bpe_text;
  std::string match_text;
  std::string_view bpe_view = text;
  std::string_view match_view = text;
  if (!utf8::is_valid(text)) {
    utf8::normalize_like_llama(text, bpe_text, match_text);
    bpe_view = bpe_text;
    match_view = match_text;
  }
  std::vector<std::string_view> words;
  words.reserve(match_view.size() / 4 + 1);
  pre_tokenizer_->split(match_view, words);

  // Words repeat a lot in real text: remember each distinct word's ids for this call. Keys view
  // the text, values index `cached_ids`.
  struct Span {
    uint32_t offset;
    uint32_t count;
  };
  std::unordered_map<std::string_view, Span> cache;
  cache.reserve(words.size() / 4 + 16);
  std::vector<int32_t> cached_ids;  // [total ids of distinct words]
  std::vector<int32_t> word_ids;    // [ids of the current word]
  tokenizer::BpeScratch scratch;
  for (std::string_view match_word : words) {
    const std::string_view word = bpe_view.substr(
        static_cast<size_t>(match_word.data() - match_view.data()), match_word.size());
    if (word.size() == 1) {
      bpe_->encode_word(word, out, scratch);
      continue;
    }
    auto [it, inserted] = cache.try_emplace(word, Span{0, 0});
    if (inserted) {
      word_ids.clear();
      if (ignore_merges_) {
        // Llama 3, Gemma 4: a word that is a token as a whole is that token, merges or not.
        const int32_t id =
            vocab_.find(raw_utf8_ ? std::string(word) : tokenizer::gpt2_byte_encode(word));
        if (id >= 0) word_ids.push_back(id);
      }
      if (word_ids.empty()) bpe_->encode_word(word, word_ids, scratch);
      it->second =
          Span{static_cast<uint32_t>(cached_ids.size()), static_cast<uint32_t>(word_ids.size())};
      cached_ids.insert(cached_ids.end(), word_ids.begin(), word_ids.end());
    }
    const Span span = it->second;
    out.insert(out.end(), cached_ids.begin() + span.offset,
               cached_ids.begin() + span.offset + span.count);
  }
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  MINFER_CHECK(is_valid_id(id), "token id outside the vocabulary (validate with check_ids)");
  const TokenType type = vocab_.type[id];
  if (!render_special && (type == TokenType::kControl || type == TokenType::kUnknown)) return {};
  return pieces_[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_to_piece(ids[i], render_special);
    // llama.cpp strips one leading space from the first token when the model adds a space
    // prefix (only if that token produced text at all).
    if (i == 0 && add_space_prefix_ && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    text += piece;
  }
  return clean_spaces_ ? clean_up_spaces(std::move(text)) : text;
}

Status Tokenizer::check_ids(std::span<const int32_t> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!is_valid_id(ids[i])) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[tokenizer] token id {} at index {} is outside the vocabulary: expected "
                        "0 to {}",
                        ids[i], i, n_vocab() - 1);
    }
  }
  return Status::ok();
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace minfer
