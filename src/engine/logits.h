// Teacher-forced logits of one sequence: what `minfer logits` writes to a file and
// LanguageModel::logits returns, computed one way for both.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "core/status.h"
#include "engine/runtime.h"

namespace minfer::engine {

// Gets one forward's logits rows, [n_rows, n_vocab] row-major, valid during the call; an error
// it returns ends the run with that error.
using LogitsRows = std::function<Status(std::span<const float> rows)>;

// Feeds `ids` at positions 0 … n-1 of one sequence in forwards of `batch` tokens (0: all at once)
// on a runtime of its own built from `options` (its n_ctx becomes n) and hands every row to
// `on_rows` in order: row t holds the logits after ids[t]. Returns the per-op profile table
// (options.observe.profile; else ""). Errors: no ids, more ids than the model's training context,
// an id outside the vocabulary, what the runtime or `on_rows` returns.
Result<std::string> teacher_forced_logits(const Model& model, RuntimeOptions options,
                                          std::span<const int32_t> ids, int64_t batch,
                                          const LogitsRows& on_rows);

}  // namespace minfer::engine
