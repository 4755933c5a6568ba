// The Python module's engine side, over the public API alone (include/minfer/minfer.h, tools.h):
// a model and the batch generator every request runs through (DESIGN.md invariant 11: chat,
// complete, streams and chat_many share the scheduler's loop, on the generator's own thread), the
// queue that hands a request's events from that thread to the Python thread waiting for them,
// and the exceptions that carry the engine's messages.
#pragma once

#include <pybind11/pybind11.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "minfer/minfer.h"

namespace minfer::python {

namespace py = pybind11;

// minfer.Error and its subclasses, created when the module is imported (register_errors).
void register_errors(py::module_& m);
// Raises `status` as Python's exception: minfer.InvalidArgumentError (also a ValueError) for bad
// input, minfer.ModelNotFoundError (also a FileNotFoundError) for a missing file, else
// minfer.Error; the message is the engine's.
[[noreturn]] void raise_status(const Status& status);
// Raises minfer.InvalidArgumentError with `message`.
[[noreturn]] void raise_invalid(const std::string& message);
// The value of a Result, or its status raised.
template <typename T>
T value_or_raise(Result<T>&& result) {
  if (!result.is_ok()) raise_status(result.status());
  return std::move(result).value();
}

// `text` as a Python str; bytes that are not UTF-8 (a token's piece may be part of a character)
// become U+FFFD.
py::str to_str(std::string_view text);

// The events of one request, pushed by the generator's thread, taken by a Python thread.
class EventQueue {
 public:
  void push(const BatchEvent& event);
  // The next event, waiting with the GIL released. Every 100 ms Python's signal handlers run
  // (Ctrl-C): when one raises, `handle` is cancelled, the request's end is awaited, and the
  // exception propagates.
  BatchEvent pop(RequestHandle& handle);
  // Waits for the request's last event without running signal handlers (after a cancel).
  void drain();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<BatchEvent> events_;
  bool done_ = false;   // the last event was pushed
  bool taken_ = false;  // the last event was popped
};

// A request in flight: its events and the handle that ends it early.
struct Pending {
  std::shared_ptr<EventQueue> events;
  std::shared_ptr<RequestHandle> handle;
};

// What Model(...) takes besides where the model is.
struct ModelOptions {
  LoadOptions load;
  int n_parallel = kDefaultParallel;
  uint64_t seed = kRandomSeed;  // the requests' default seed
};

// A loaded model and its running batch generator. Shared by the Python Model and the streams
// it handed out, so that a stream outliving its Model still ends cleanly.
class ModelCore {
 public:
  ModelCore(std::unique_ptr<LanguageModel> model, std::unique_ptr<BatchGenerator> generator,
            uint64_t seed);
  ~ModelCore();
  ModelCore(const ModelCore&) = delete;
  ModelCore& operator=(const ModelCore&) = delete;

  static std::shared_ptr<ModelCore> load(const std::string& path, const ModelOptions& options);

  LanguageModel& model() { return *model_; }
  BatchGenerator& generator() { return *generator_; }
  // The parameters a request starts from: the file's sampling, the model's seed.
  GenerateParams default_params() const;
  // Queues a request (raises the generator's refusal: bad parameters, no room, a full queue).
  Pending submit(const std::vector<int32_t>& prompt, const GenerateParams& params);
  // Vectors of `inputs` (one call at a time; the embedder is made on first use).
  std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>>& inputs);
  // The model file's name (the response's "model").
  const std::string& name() const { return name_; }

 private:
  std::unique_ptr<LanguageModel> model_;
  std::unique_ptr<BatchGenerator> generator_;
  uint64_t seed_;
  std::string name_;
  std::mutex embed_mutex_;
  std::unique_ptr<Embedder> embedder_;
};

}  // namespace minfer::python
