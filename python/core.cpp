#include "core.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>

namespace minfer::python {

namespace {

PyObject* g_error = nullptr;             // minfer.Error
PyObject* g_invalid_argument = nullptr;  // minfer.InvalidArgumentError(Error, ValueError)
PyObject* g_not_found = nullptr;         // minfer.ModelNotFoundError(Error, FileNotFoundError)

// How often a waiting thread runs Python's signal handlers (Ctrl-C).
constexpr auto kSignalCheck = std::chrono::milliseconds(100);

// A new exception class minfer.<name> deriving from `bases` (a tuple), with `doc`.
PyObject* add_error(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("minfer.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.attr(name) = py::handle(type);
  return type;
}

}  // namespace

void register_errors(py::module_& m) {
  g_error = add_error(m, "Error", py::make_tuple(py::handle(PyExc_Exception)),
                      "An error of the minfer engine; str(e) is its one-line message.");
  g_invalid_argument = add_error(
      m, "InvalidArgumentError", py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError)),
      "Bad input (a parameter, a message list, a grammar, a schema, a token id).");
  g_not_found = add_error(m, "ModelNotFoundError",
                          py::make_tuple(py::handle(g_error), py::handle(PyExc_FileNotFoundError)),
                          "The model file (or the named model) does not exist.");
}

void raise_status(const Status& status) {
  PyObject* type = g_error;
  if (status.code() == ErrorCode::kInvalidArgument) type = g_invalid_argument;
  if (status.code() == ErrorCode::kNotFound) type = g_not_found;
  PyErr_SetString(type, status.message().c_str());
  throw py::error_already_set();
}

void raise_invalid(const std::string& message) {
  raise_status(Status(ErrorCode::kInvalidArgument, message));
}

py::str to_str(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

void EventQueue::push(const BatchEvent& event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(event);
    if (event.done) done_ = true;
  }
  ready_.notify_all();
}

BatchEvent EventQueue::pop(RequestHandle& handle) {
  for (;;) {
    std::optional<BatchEvent> event;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(mutex_);
      if (ready_.wait_for(lock, kSignalCheck, [this] { return !events_.empty(); })) {
        event = std::move(events_.front());
        events_.pop_front();
        if (event->done) taken_ = true;
      }
    }
    // Signals are checked after every event too: while tokens stream in, the wait never times
    // out, and a check only on timeouts left Ctrl-C waiting for the whole generation.
    if (PyErr_CheckSignals() != 0) {
      // Ctrl-C (or another handler's exception): end the request before raising, so that its
      // sequence is free when the exception reaches the caller.
      handle.cancel();
      drain();
      throw py::error_already_set();
    }
    if (event) return std::move(*event);
  }
}

void EventQueue::drain() {
  py::gil_scoped_release release;
  std::unique_lock<std::mutex> lock(mutex_);
  if (taken_) return;
  ready_.wait(lock, [this] { return done_; });
  events_.clear();
  taken_ = true;
}

ModelCore::ModelCore(std::unique_ptr<LanguageModel> model,
                     std::unique_ptr<BatchGenerator> generator, uint64_t seed)
    : model_(std::move(model)),
      generator_(std::move(generator)),
      seed_(seed),
      name_(std::filesystem::path(model_->path()).filename().string()) {
  generator_->start();
}

ModelCore::~ModelCore() {
  // Cancels what is left (streams dropped without being read to the end) and joins the thread.
  generator_->stop();
}

std::shared_ptr<ModelCore> ModelCore::load(const std::string& path, const ModelOptions& options) {
  LoadOptions load = options.load;
  load.single_sequence = false;  // every request goes through the batch generator
  Result<std::unique_ptr<LanguageModel>> model =
      Status(ErrorCode::kInternal, "[python] the model was not loaded");
  {
    py::gil_scoped_release release;
    model = LanguageModel::load(path, load);
  }
  if (!model.is_ok()) {
    const Status& s = model.status();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) raise_status(Status(ErrorCode::kNotFound, s.message()));
    raise_status(s);
  }
  BatchOptions batch;
  batch.n_parallel = options.n_parallel;
  batch.n_ctx = options.load.n_ctx;
  std::unique_ptr<BatchGenerator> generator = value_or_raise((*model)->batch_generator(batch));
  return std::make_shared<ModelCore>(std::move(model).value(), std::move(generator), options.seed);
}

GenerateParams ModelCore::default_params() const {
  GenerateParams p = model_->default_params();
  p.seed = seed_;
  return p;
}

Pending ModelCore::submit(const std::vector<int32_t>& prompt, const GenerateParams& params) {
  Pending pending;
  pending.events = std::make_shared<EventQueue>();
  auto events = pending.events;
  pending.handle = value_or_raise(generator_->submit(
      prompt, params, [events](const BatchEvent& event) { events->push(event); }));
  return pending;
}

std::vector<std::vector<float>> ModelCore::embed(const std::vector<std::vector<int32_t>>& inputs) {
  Result<std::vector<std::vector<float>>> vectors =
      Status(ErrorCode::kInternal, "[python] nothing was embedded");
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(embed_mutex_);
    if (embedder_ == nullptr) {
      EmbedOptions options;  // the file's pooling, L2-normalised: as the server's
      options.n_ctx = generator_->n_ctx();
      Result<std::unique_ptr<Embedder>> made = model_->embedder(options);
      if (!made.is_ok()) {
        vectors = made.status();
      } else {
        embedder_ = std::move(made).value();
      }
    }
    if (embedder_ != nullptr) vectors = embedder_->embed(inputs);
  }
  return value_or_raise(std::move(vectors));
}

}  // namespace minfer::python
