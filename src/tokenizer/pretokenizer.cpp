#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>

#include "core/check.h"

namespace minfer::tokenizer {

namespace {

// The regexes of llama-vocab.cpp, with llama.cpp's whitespace set (see the header).
// Qwen2 / Qwen2.5 / Qwen3 (tokenizer.json's (?i:'s|…) spelled out, as llama.cpp does).
constexpr const char* kQwen2Pattern = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
                                      R"(|[^\r\n\p{L}\p{N}]?\p{L}+)"
                                      R"(|\p{N})"
                                      R"(| ?[^\s\x{85}\p{L}\p{N}]+[\r\n]*)"
                                      R"(|[\s\x{85}]*[\r\n]+)"
                                      R"(|[\s\x{85}]+(?![^\s\x{85}]))"
                                      R"(|[\s\x{85}]+)";
// Qwen3.5: as Qwen2 with combining marks (\p{M}) kept with their letters and out of the
// punctuation runs (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35).
constexpr const char* kQwen35Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+)"
    R"(|\p{N})"
    R"(| ?[^\s\x{85}\p{L}\p{M}\p{N}]+[\r\n]*)"
    R"(|[\s\x{85}]*[\r\n]+)"
    R"(|[\s\x{85}]+(?![^\s\x{85}]))"
    R"(|[\s\x{85}]+)";
// Llama 3: as Qwen2 but digits in groups of up to three.
constexpr const char* kLlama3Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\x{85}\p{L}\p{N}]+[\r\n]*)"
    R"(|[\s\x{85}]*[\r\n]+)"
    R"(|[\s\x{85}]+(?![^\s\x{85}]))"
    R"(|[\s\x{85}]+)";
// GPT-4o (o200k: gpt-oss, Llama 4): llama.cpp's LLAMA_VOCAB_PRE_TYPE_GPT4O rewriting of
// tokenizer.json's case classes as (?=\p{L})[^a-z] (a letter not ASCII lower case: upper case)
// and (?=\p{L})[^A-Z] (lower case), which every non-ASCII letter matches both of, as in
// llama.cpp's matcher; contractions attach to words, digits in groups of up to three.
constexpr const char* kGpt4oPattern =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)"
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\x{85}\p{L}\p{N}]+[\r\n/]*)"
    R"(|[\s\x{85}]*[\r\n]+)"
    R"(|[\s\x{85}]+(?![^\s\x{85}]))"
    R"(|[\s\x{85}]+)";
// GPT-2. llama.cpp's string lacks a final \s+ but its hand-written matcher for it
// (unicode_regex_split_custom_gpt2) takes leftover whitespace as one word, which the final
// alternative reproduces.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d)"
                                     R"(| ?\p{L}+)"
                                     R"(| ?\p{N}+)"
                                     R"(| ?[^\s\x{85}\p{L}\p{N}]+)"
                                     R"(|[\s\x{85}]+(?![^\s\x{85}]))"
                                     R"(|[\s\x{85}]+)";

struct Family {
  const char* canonical;
  std::vector<std::string> patterns;
  bool ignore_merges;
  bool add_bos;
  bool clean_spaces;
  std::vector<const char*> names;  // tokenizer.ggml.pre values llama.cpp maps to it
};

const std::vector<Family>& families() {
  static const std::vector<Family> kFamilies = {
      {"default",
       // llama.cpp's default: punctuation runs, then GPT-2 words, then digit runs, then triples.
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Pattern, R"(\p{N}+)", R"([0-9][0-9][0-9])"},
       false,
       false,
       true,
       {"default"}},
      {"llama3",
       {kLlama3Pattern},
       true,
       true,
       true,
       {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"}},
      {"dbrx", {kLlama3Pattern}, false, false, true, {"dbrx", "smaug-bpe"}},
      {"qwen2", {kQwen2Pattern}, false, false, false, {"qwen2", "deepseek-r1-qwen"}},
      {"qwen2-clean", {kQwen2Pattern}, false, false, true, {"stablelm2", "megrez"}},
      {"qwen35", {kQwen35Pattern}, false, false, false, {"qwen35"}},
      {"gpt-4o", {kGpt4oPattern}, false, false, false, {"gpt-4o", "llama4"}},
      // Gemma 4 (tokenizer.ggml.model gemma4, spaces already ▁): runs of newlines apart from
      // everything else; a run that is a token as a whole is that token.
      {"gemma4", {R"([^\n]+|[\n]+)"}, true, true, false, {"gemma4"}},
      {"gpt2",
       {kGpt2Pattern},
       false,
       false,
       true,
       {"gpt2", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
        "mpt", "olmo", "jais"}},
      {"starcoder",
       {R"(\p{N})", kGpt2Pattern},
       false,
       false,
       true,
       {"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}},
      {"starcoder-noclean",
       {R"(\p{N})", kGpt2Pattern},
       false,
       false,
       false,
       {"command-r", "smollm"}},
  };
  return kFamilies;
}

}  // namespace

Result<PreTokenizerSpec> pre_tokenizer_spec(std::string_view pre) {
  const std::string_view name = pre.empty() ? std::string_view("default") : pre;
  for (const Family& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), name) == f.names.end()) continue;
    PreTokenizerSpec spec;
    spec.canonical = f.canonical;
    spec.patterns = f.patterns;
    spec.ignore_merges = f.ignore_merges;
    spec.add_bos = f.add_bos;
    spec.clean_spaces = f.clean_spaces;
    return spec;
  }
  std::string known;
  for (const Family& f : families()) {
    for (const char* n : f.names) known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
  }
  return make_error(ErrorCode::kUnsupported,
                    "[tokenizer] unknown pre-tokenizer tokenizer.ggml.pre = '{}': expected one of "
                    "{}",
                    pre, known);
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const PreTokenizerSpec& spec) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  for (const std::string& pattern : spec.patterns) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto regex = std::make_unique<Regex>();
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (regex->code == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      return make_error(ErrorCode::kInternal,
                        "[tokenizer] pre-tokenizer regex does not compile at offset {}: {}",
                        error_offset, reinterpret_cast<const char*>(message.data()));
    }
    // Without JIT support the interpreter gives the same matches, only slower.
    regex->jit = pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE) == 0;
    pre->regexes_.push_back(std::move(regex));
  }
  return pre;
}

namespace {

// Match data for one thread; the compiled patterns are shared and read-only.
struct MatchData {
  MatchData() : data(pcre2_match_data_create(1, nullptr)) {
    MINFER_CHECK(data != nullptr, "pcre2_match_data_create failed");
  }
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

// Splits `piece` with one regex: each match is a word and so is each stretch between matches.
template <typename Emit>
void split_one(const pcre2_code* code, bool jit, pcre2_match_data* md, std::string_view piece,
               Emit&& emit) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  const PCRE2_SIZE length = piece.size();
  PCRE2_SIZE pos = 0;
  PCRE2_SIZE gap_start = 0;
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md);
  while (pos < length) {
    int rc = jit ? pcre2_jit_match(code, subject, length, pos, 0, md, nullptr)
                 : PCRE2_ERROR_JIT_BADOPTION;
    // Without JIT, or should the JIT stack ever run out, the interpreter gives the same match.
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      rc = pcre2_match(code, subject, length, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    }
    if (rc < 0) {
      MINFER_CHECK(rc == PCRE2_ERROR_NOMATCH, "pre-tokenizer regex failed to run");
      break;
    }
    const PCRE2_SIZE start = ovector[0];
    const PCRE2_SIZE end = ovector[1];
    if (end == start) {
      // None of llama.cpp's patterns match empty; step over one character if one ever does.
      pos = start + 1;
      while (pos < length && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (start > gap_start) emit(piece.substr(gap_start, start - gap_start));
    emit(piece.substr(start, end - start));
    pos = gap_start = end;
  }
  if (gap_start < length) emit(piece.substr(gap_start));
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  if (text.empty()) return;
  thread_local MatchData match_data;
  if (regexes_.size() == 1) {
    split_one(regexes_[0]->code, regexes_[0]->jit, match_data.data, text,
              [&](std::string_view w) { words.push_back(w); });
    return;
  }
  std::vector<std::string_view> pieces{text};
  std::vector<std::string_view> refined;
  for (const auto& regex : regexes_) {
    refined.clear();
    for (std::string_view piece : pieces) {
      split_one(regex->code, regex->jit, match_data.data, piece,
                [&](std::string_view w) { refined.push_back(w); });
    }
    pieces.swap(refined);
  }
  words.insert(words.end(), pieces.begin(), pieces.end());
}

}  // namespace minfer::tokenizer
