// Reranking (POST /v1/rerank): a relevance score for each (query, document) pair, computed from
// the pair's prompt by one of two methods, chosen by what the model file holds:
//
// - classifier head: the file's pooling_type is rank (4) and it has cls.* tensors
//   (engine/rerank_head.h): the last token's hidden state (after the final norm) through the
//   head. llama.cpp pools the first token for encoders and the last for Qwen3; minfer's models
//   are causal decoders, whose last token is the only one that sees the whole pair.
// - yes/no: a generative model whose vocabulary has the tokens "yes" and "no" and ChatML's
//   <|im_start|> / <|im_end|> (Qwen3-Reranker as its model card runs it): the logits of "yes"
//   and "no" at the prompt's last position, score = softmax over the two = P(yes).
//
// The pair's prompt: the file's `tokenizer.chat_template.rerank` (llama.cpp's converter writes
// it) with {query} and {document} replaced; else, for the yes/no method and a head labelled
// yes/no, Qwen3-Reranker's model-card prompt (kQwen3RerankTemplate); else (a head without a
// template) llama.cpp's encoder layout: [BOS] query [EOS] document [EOS]. A template's prompt is
// tokenized whole with special tokens parsed, as transformers tokenizes the model card's prompt and
// llama.cpp its template (so text such as "<|im_end|>" in a document is that token there too).
//
// Pairs run as sequences of a runtime of their own (engine/embedder.h), freed after each call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "engine/embedder.h"
#include "engine/rerank_head.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// Qwen3-Reranker's prompt (its model card; the same text llama.cpp's converter stores as
// tokenizer.chat_template.rerank), with the card's default instruction.
inline constexpr std::string_view kQwen3RerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that "
    "answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

enum class RerankMethod { kClassifier, kYesNo };

class Reranker : NonCopyable {
 public:
  // `model`, `tokenizer` and `head` must outlive the reranker; `head`: the file's classifier
  // head (LoadedModel::rerank_head), null when it has none. `runtime.n_ctx`: the longest pair.
  // Error: a model with neither method, naming what is missing.
  static Result<std::unique_ptr<Reranker>> create(const Model& model, const Tokenizer& tokenizer,
                                                  const RerankHead* head, RuntimeOptions runtime);

  // The tokens of one pair's prompt (see above).
  std::vector<int32_t> pair_tokens(std::string_view query, std::string_view document) const;
  // One score per pair of tokens, in order (pairs share forward steps). Errors (nothing
  // computed): an empty pair, a pair longer than n_ctx (named by its index).
  Result<std::vector<float>> score(std::span<const std::vector<int32_t>> pairs);

  RerankMethod method() const { return method_; }
  // "classifier head (…)" or "yes/no logits (tokens 9693, 2152)".
  std::string describe() const;
  int64_t n_ctx() const { return embedder_->n_ctx(); }

 private:
  Reranker(const Tokenizer& tokenizer, const RerankHead* head)
      : tokenizer_(tokenizer), head_(head) {}
  // Checks that the template has both placeholders and keeps it.
  Status set_template(std::string_view text);

  const Tokenizer& tokenizer_;
  const RerankHead* head_;
  RerankMethod method_ = RerankMethod::kYesNo;
  int32_t yes_id_ = -1;
  int32_t no_id_ = -1;
  std::string template_;  // with {query} and {document}; empty: the encoder layout
  std::unique_ptr<Embedder> embedder_;
};

}  // namespace minfer::engine
