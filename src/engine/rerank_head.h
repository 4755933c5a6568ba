// A reranker's classifier head, as llama.cpp's GGUF files hold it for pooling_type RANK (4): the
// pooled hidden state of a query–document pair goes through
//
//   cls.weight [n_embd → n_inner], cls.bias [n_inner], tanh     (optional: RoBERTa's dense layer)
//   cls.output.weight [n_in → n_out], cls.output.bias [n_out]  (optional: the projection)
//
// (transformers' RobertaClassificationHead; BGE-reranker). Qwen3-Reranker files converted by
// llama.cpp keep only cls.output.weight: the lm_head rows of "yes" and "no" (n_out 2, labels
// <arch>.classifier.output_labels = ["yes", "no"]), and the score is the softmax's P(yes).
// The head is read out of the file before the model loads (GgufFile::take_tensors), as f32.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"

namespace minfer::engine {

// Qwen3-Reranker's score from the logits of "yes" and "no": softmax over the two, P(yes) =
// 1 / (1 + e^(no − yes)) (the difference, so nothing overflows).
float yes_probability(double yes, double no);

struct RerankHead {
  int64_t n_embd = 0;
  int64_t n_inner = 0;            // rows of the dense layer; 0: none
  std::vector<float> dense;       // [n_inner, n_embd] row-major (cls.weight)
  std::vector<float> dense_bias;  // [n_inner] or empty (cls.bias)
  int64_t n_out = 0;              // rows of the projection; 0: none (the dense layer gives 1)
  std::vector<float> out;         // [n_out, n_in] row-major (cls.output.weight)
  std::vector<float> out_bias;    // [n_out] or empty (cls.output.bias)
  // Two outputs labelled yes and no: the score is softmax(out)[0], P(yes); else the one output.
  bool yes_no = false;

  // The score of one pair from its pooled hidden state [n_embd]. Sums in double.
  float score(std::span<const float> hidden) const;
  // "classifier head (cls 1024→1024 + tanh, cls.output 1024→1)" and the like, for messages.
  std::string describe() const;
};

// For a file whose <arch>.pooling_type is 4 (rank): takes its cls.* tensors out of the file's
// list and its <arch>.classifier.output_labels key out of its metadata (so that the model's
// loader, which refuses tensors and keys it does not read, loads the rest) and returns them as
// a head. nullopt: the file is not a reranker (no pooling_type 4) or has no
// cls.* tensors. Errors name what is not computed: cls.norm (ModernBERT's head norm) or another
// cls.* tensor, a shape that does not chain, more than one output unless they are Qwen3's yes/no
// pair, a tensor type that cannot be converted.
Result<std::optional<RerankHead>> take_rerank_head(GgufFile& file);

}  // namespace minfer::engine
