#include "engine/reranker.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace minfer::engine {

namespace {

constexpr std::string_view kRerankTemplateKey = "tokenizer.chat_template.rerank";
constexpr std::string_view kQueryPlaceholder = "{query}";
constexpr std::string_view kDocumentPlaceholder = "{document}";

// The yes/no method's tokens, or why the model has none.
Status find_yes_no(const Model& model, const Tokenizer& tokenizer, bool has_template, int32_t& yes,
                   int32_t& no) {
  yes = tokenizer.find_token("yes");
  no = tokenizer.find_token("no");
  const bool chatml = tokenizer.find_token("<|im_start|>") != kNoToken &&
                      tokenizer.find_token("<|im_end|>") != kNoToken;
  if (yes != kNoToken && no != kNoToken && (chatml || has_template)) return Status::ok();
  return make_error(ErrorCode::kUnsupported,
                    "[rerank] '{}' cannot rerank: it has no classifier head (pooling_type rank "
                    "with cls tensors), and the yes/no method (Qwen3-Reranker) needs the tokens "
                    "\"yes\" and \"no\"{} in its vocabulary{}",
                    model.file().name(),
                    has_template ? "" : " and ChatML's <|im_start|>, <|im_end|>",
                    yes == kNoToken || no == kNoToken ? " (\"yes\" or \"no\" is missing)"
                                                      : " (<|im_start|> or <|im_end|> is missing)");
}

}  // namespace

Result<std::unique_ptr<Reranker>> Reranker::create(const Model& model, const Tokenizer& tokenizer,
                                                   const RerankHead* head, RuntimeOptions runtime) {
  std::unique_ptr<Reranker> r(new Reranker(tokenizer, head));
  const GgufFile& file = model.file();
  const bool has_template = file.has(kRerankTemplateKey);
  EmbedderOptions o;
  std::vector<int32_t> logit_columns;  // the yes/no method's
  o.pooling = Pooling::kLast;
  o.normalize = false;
  o.n_batch = std::min<int64_t>(runtime.n_ctx, 2048);
  if (head != nullptr) {
    r->method_ = RerankMethod::kClassifier;
    if (head->n_embd != model.config().n_embd) {
      return make_error(ErrorCode::kCorrupt, "[rerank] '{}': the head reads {} values, n_embd {}",
                        file.name(), head->n_embd, model.config().n_embd);
    }
  } else {
    MINFER_RETURN_IF_ERROR(find_yes_no(model, tokenizer, has_template, r->yes_id_, r->no_id_));
    logit_columns = {r->yes_id_, r->no_id_};
  }
  if (has_template) {
    MINFER_ASSIGN_OR_RETURN(const std::string text, file.get_string(kRerankTemplateKey));
    MINFER_RETURN_IF_ERROR(r->set_template(text));
  } else if (r->method_ == RerankMethod::kYesNo || head->yes_no) {
    MINFER_RETURN_IF_ERROR(r->set_template(kQwen3RerankTemplate));
  }
  runtime.observe = {};  // the observers follow generation
  MINFER_ASSIGN_OR_RETURN(r->embedder_,
                          Embedder::create(model, runtime, o, std::move(logit_columns)));
  return r;
}

Status Reranker::set_template(std::string_view text) {
  if (text.find(kQueryPlaceholder) == std::string_view::npos ||
      text.find(kDocumentPlaceholder) == std::string_view::npos) {
    return make_error(ErrorCode::kUnsupported,
                      "[rerank] the rerank template ({}) has no {} or no {}: {:.200}",
                      kRerankTemplateKey, kQueryPlaceholder, kDocumentPlaceholder, text);
  }
  template_ = std::string(text);
  return Status::ok();
}

std::vector<int32_t> Reranker::pair_tokens(std::string_view query,
                                           std::string_view document) const {
  std::vector<int32_t> ids;
  const int32_t bos = tokenizer_.bos_id();
  if (tokenizer_.add_bos() && bos != kNoToken) ids.push_back(bos);
  auto append = [&ids](const std::vector<int32_t>& more) {
    ids.insert(ids.end(), more.begin(), more.end());
  };
  if (template_.empty()) {  // llama.cpp's encoder layout: [BOS] query [EOS] document [EOS]
    const int32_t eos = tokenizer_.eos_id();
    append(tokenizer_.encode(query, false, false));
    if (eos != kNoToken) ids.push_back(eos);
    append(tokenizer_.encode(document, false, false));
    if (eos != kNoToken) ids.push_back(eos);
    return ids;
  }
  // One pass over the template: placeholders in the query or the document stay as written.
  std::string text;
  const std::string_view t = template_;
  for (size_t at = 0; at < t.size();) {
    if (t.substr(at).starts_with(kQueryPlaceholder)) {
      text += query;
      at += kQueryPlaceholder.size();
    } else if (t.substr(at).starts_with(kDocumentPlaceholder)) {
      text += document;
      at += kDocumentPlaceholder.size();
    } else {
      text += t[at++];
    }
  }
  const std::vector<int32_t> body = tokenizer_.encode(text, false, true);
  // The template may write the BOS itself.
  const bool has_bos = !ids.empty() && !body.empty() && body.front() == bos;
  ids.insert(ids.end(), body.begin() + (has_bos ? 1 : 0), body.end());
  return ids;
}

Result<std::vector<float>> Reranker::score(std::span<const std::vector<int32_t>> pairs) {
  MINFER_ASSIGN_OR_RETURN(std::vector<std::vector<float>> rows, embedder_->embed(pairs));
  std::vector<float> scores;
  scores.reserve(rows.size());
  for (const std::vector<float>& row : rows) {
    if (method_ == RerankMethod::kClassifier) {
      scores.push_back(head_->score(row));
    } else {
      scores.push_back(yes_probability(row[0], row[1]));  // the (yes, no) logit columns
    }
  }
  return scores;
}

std::string Reranker::describe() const {
  if (method_ == RerankMethod::kClassifier) return head_->describe();
  return fmt::format("yes/no logits (tokens {} and {}), score P(yes)", yes_id_, no_id_);
}

}  // namespace minfer::engine
