// The `minfer` Python module: Model (chat, complete, chat_many, tokenize, detokenize,
// apply_template, embed, logits), the Stream a streamed request returns, and the exceptions. The
// docstrings are the reference; minfer.pyi repeats the signatures for editors.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core.h"
#include "minfer/tools.h"
#include "requests.h"

namespace minfer::python {

namespace {

constexpr const char* kModelDoc =
    "Model(path=None, *, hf=None, ollama=None, n_ctx=0, n_threads=0, cache_type='', seed=None, "
    "n_parallel=4, offline=False)\n\n"
    "A GGUF model loaded for generation: a path (the first part of a split model), a Hugging "
    "Face repository 'org/repo[:QUANT]' (downloaded into the shared Hub cache unless offline), "
    "or an Ollama model 'name[:tag]' from the local store. n_ctx: positions per request (0: the "
    "model's, within a quarter of memory); n_threads <= 0: every core; cache_type 'f32', 'f16' "
    "(default), 'bf16' or 'q8_0'; seed: the default seed of requests (None: random each); "
    "n_parallel: "
    "requests decoded together. Every request runs through one scheduler on a thread of its "
    "own, so calls from several Python threads batch together.";
constexpr const char* kChatDoc =
    "chat(messages, *, tools=None, tool_choice=None, parallel_tool_calls=True, "
    "response_format=None, grammar=None, max_tokens=None, temperature=, top_p=, top_k=, "
    "min_p=, repeat_penalty=, repeat_last_n=, frequency_penalty=, presence_penalty=, "
    "stop=None, seed=None, logprobs=False, top_logprobs=None, logit_bias=None, "
    "reasoning_budget=None, chat_template_kwargs=None, stream=False)\n\n"
    "A chat completion: a dict in OpenAI's chat.completion shape (choices[0].message with "
    "content, reasoning_content, tool_calls; usage; timings), or with stream=True a Stream of "
    "chat.completion.chunk dicts. Sampling defaults are the file's recommendation, else "
    "llama.cpp's; temperature=0 is greedy. The GIL is released while the engine works and "
    "Ctrl-C cancels the request.";
constexpr const char* kCompleteDoc =
    "complete(prompt, *, max_tokens=None, temperature=, …, logprobs=None, stream=False)\n\n"
    "A text completion of `prompt` (a str, tokenized as `minfer run` does, or a list of ids): "
    "a dict in OpenAI's text_completion shape, or a Stream of them. Options as chat() has them "
    "(no tools); logprobs is the number of alternatives per token.";
constexpr const char* kChatManyDoc =
    "chat_many(requests) -> list[dict]\n\n"
    "Several chat requests ({'messages': […], **options}) submitted together and decoded in "
    "one batch per step (continuous batching); their responses in order.";
constexpr const char* kEmbedDoc =
    "embed(texts) -> numpy.ndarray[float32, (n, dim)]\n\n"
    "One L2-normalised vector per text (a str is one text), pooled as the file says (else the "
    "last token), as the server's /v1/embeddings computes them.";
constexpr const char* kLogitsDoc =
    "logits(ids, batch=0, cache_type='') -> numpy.ndarray[float32, (n, n_vocab)]\n\n"
    "Teacher-forced logits of `ids` at positions 0 … n-1 of a sequence of their own, as "
    "`minfer logits` computes them (f32 KV cells unless cache_type says otherwise): row t "
    "holds the logits after ids[t]. The array owns the engine's buffer (no copy).";

// A streamed request: an iterator of chunk dicts. Dropping it (or close()) cancels the request
// and waits until the generator has freed its sequence.
class Stream {
 public:
  Stream(std::shared_ptr<ModelCore> core, const Request& request)
      : core_(std::move(core)),
        pending_(core_->submit(request.prompt, request.params)),
        builder_(*core_, request) {}
  ~Stream() { close(); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  py::object next() {
    while (!finished_) {
      BatchEvent event = pending_.events->pop(*pending_.handle);
      finished_ = event.done;
      py::object chunk = builder_.chunk(event);
      if (!chunk.is_none()) return chunk;
    }
    throw py::stop_iteration();
  }

  void close() {
    if (finished_) return;
    finished_ = true;
    pending_.handle->cancel();
    pending_.events->drain();
  }

 private:
  std::shared_ptr<ModelCore> core_;
  Pending pending_;
  ReplyBuilder builder_;
  bool finished_ = false;
};

// The whole reply of a request already submitted.
py::dict wait_reply(ModelCore& core, const Request& request, Pending& pending) {
  ReplyBuilder builder(core, request);
  for (;;) {
    BatchEvent event = pending.events->pop(*pending.handle);
    builder.add(event);
    if (event.done) return builder.response();
  }
}

// A request run to its end, or its stream.
py::object run(const std::shared_ptr<ModelCore>& core, const Request& request) {
  if (request.stream) return py::cast(std::make_unique<Stream>(core, request));
  Pending pending = core->submit(request.prompt, request.params);
  return wait_reply(*core, request, pending);
}

// Several chat requests submitted together, so that the scheduler batches them; their replies in
// order. An exception while waiting (Ctrl-C, an engine error) cancels the others first.
py::list chat_many(const std::shared_ptr<ModelCore>& core, const py::list& requests) {
  std::vector<Request> parsed;
  for (const py::handle item : requests) {
    if (!py::isinstance<py::dict>(item)) {
      raise_invalid("[python] chat_many() takes a list of dicts {'messages': […], …options}");
    }
    py::dict options = py::reinterpret_borrow<py::dict>(item).attr("copy")();
    if (!options.contains("messages"))
      raise_invalid("[python] a chat_many() request has no 'messages'");
    py::object messages = options.attr("pop")("messages");
    parsed.push_back(chat_request(*core, messages, options));
    if (parsed.back().stream) raise_invalid("[python] chat_many() does not stream");
  }
  std::vector<Pending> pending;
  pending.reserve(parsed.size());
  struct CancelRest {
    std::vector<Pending>& pending;
    size_t next = 0;
    ~CancelRest() {
      for (size_t i = next; i < pending.size(); ++i) {
        pending[i].handle->cancel();
        pending[i].events->drain();
      }
    }
  } guard{pending};
  for (const Request& r : parsed) pending.push_back(core->submit(r.prompt, r.params));
  py::list replies;
  for (size_t i = 0; i < parsed.size(); ++i) {
    guard.next = i;
    replies.append(wait_reply(*core, parsed[i], pending[i]));
  }
  guard.next = parsed.size();
  return replies;
}

// [rows, cols] float32 owning `values` (no copy).
py::array_t<float> owned_array(std::vector<float>&& values, int64_t rows, int64_t cols) {
  auto* owned = new std::vector<float>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>({rows, cols}, owned->data(), free_when_done);
}

py::array_t<float> embed(ModelCore& core, const py::object& texts) {
  std::vector<std::string> list;
  if (py::isinstance<py::str>(texts)) {
    list.push_back(py::str(texts));
  } else {
    list = texts.cast<std::vector<std::string>>();
  }
  if (list.empty()) raise_invalid("[python] embed() needs at least one text");
  std::vector<std::vector<int32_t>> inputs;
  for (const std::string& t : list) inputs.push_back(core.model().tokenize(t));
  const std::vector<std::vector<float>> vectors = core.embed(inputs);
  const int64_t dim = static_cast<int64_t>(vectors.front().size());
  std::vector<float> flat;  // [n, dim]
  flat.reserve(vectors.size() * static_cast<size_t>(dim));
  for (const auto& v : vectors) flat.insert(flat.end(), v.begin(), v.end());
  return owned_array(std::move(flat), static_cast<int64_t>(vectors.size()), dim);
}

py::array_t<float> logits(ModelCore& core, const std::vector<int32_t>& ids, int64_t batch,
                          const std::string& cache_type) {
  Result<std::vector<float>> rows = Status(ErrorCode::kInternal, "[python] no logits");
  {
    py::gil_scoped_release release;
    rows = core.model().logits(ids, batch, cache_type);
  }
  return owned_array(value_or_raise(std::move(rows)), static_cast<int64_t>(ids.size()),
                     core.model().n_vocab());
}

std::shared_ptr<ModelCore> load_model(const py::object& path, const py::object& hf,
                                      const py::object& ollama, bool offline,
                                      const ModelOptions& options) {
  const int n_sources = !path.is_none() + !hf.is_none() + !ollama.is_none();
  if (n_sources != 1) {
    raise_invalid(
        "[python] Model() takes one of path, hf='org/repo[:QUANT]' or "
        "ollama='name[:tag]'");
  }
  ModelSource source;
  if (!path.is_none()) source.model = py::str(py::module_::import("os").attr("fspath")(path));
  if (!ollama.is_none()) source.model = "ollama:" + std::string(py::str(ollama));
  if (!hf.is_none()) source.hf_repo = py::str(hf);
  source.offline = offline;
  Result<std::string> file = Status(ErrorCode::kInternal, "[python] no model");
  {
    py::gil_scoped_release release;
    file = resolve_model_source(source);
  }
  return ModelCore::load(value_or_raise(std::move(file)), options);
}

py::dict stats_dict(const BatchStats& s) {
  py::dict d;
  d["n_running"] = s.n_running;
  d["n_waiting"] = s.n_waiting;
  d["kv_blocks_used"] = s.kv_blocks_used;
  d["kv_blocks_free"] = s.kv_blocks_free;
  d["kv_blocks_cached"] = s.kv_blocks_cached;
  d["kv_blocks_total"] = s.kv_blocks_total;
  d["kv_bytes_used"] = s.kv_bytes_used;
  d["kv_bytes_total"] = s.kv_bytes_total;
  d["n_steps"] = s.n_steps;
  d["n_preemptions"] = s.n_preemptions;
  return d;
}

void bind_stream(py::module_& m) {
  py::class_<Stream>(m, "Stream",
                     "The chunks of a streamed request (chat(..., stream=True)). Iterating "
                     "waits for the next chunk with the GIL released; dropping the stream or "
                     "close() cancels the request and frees its sequence.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Stream::next)
      .def("close", &Stream::close, "Cancels the request (if still running) and waits its end.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Stream& s, py::args) { s.close(); });
}

void bind_model(py::module_& m) {
  using Core = std::shared_ptr<ModelCore>;
  py::class_<ModelCore, Core>(m, "Model", kModelDoc)
      .def(py::init([](const py::object& path, const py::object& hf, const py::object& ollama,
                       int64_t n_ctx, int n_threads, const std::string& cache_type,
                       const py::object& seed, int n_parallel, bool offline) {
             ModelOptions o;
             o.load.n_ctx = n_ctx;
             o.load.n_threads = n_threads;
             o.load.cache_type = cache_type;
             o.n_parallel = n_parallel;
             if (!seed.is_none() && seed.cast<int64_t>() >= 0) o.seed = seed.cast<uint64_t>();
             return load_model(path, hf, ollama, offline, o);
           }),
           py::arg("path") = py::none(), py::kw_only(), py::arg("hf") = py::none(),
           py::arg("ollama") = py::none(), py::arg("n_ctx") = 0, py::arg("n_threads") = 0,
           py::arg("cache_type") = "", py::arg("seed") = py::none(),
           py::arg("n_parallel") = kDefaultParallel, py::arg("offline") = false)
      .def(
          "chat",
          [](const Core& self, const py::object& messages, const py::kwargs& options) {
            return run(self, chat_request(*self, messages, options));
          },
          py::arg("messages"), kChatDoc)
      .def(
          "complete",
          [](const Core& self, const py::object& prompt, const py::kwargs& options) {
            return run(self, completion_request(*self, prompt, options));
          },
          py::arg("prompt"), kCompleteDoc)
      .def("chat_many", &chat_many, py::arg("requests"), kChatManyDoc)
      .def(
          "tokenize",
          [](const Core& self, const std::string& text, bool add_special, bool special) {
            return self->model().tokenize(text, add_special, special);
          },
          py::arg("text"), py::arg("add_special") = true, py::arg("special") = false,
          "Token ids of `text`: BOS when the model adds one (add_special), special tokens such "
          "as <|im_start|> matched only with special=True.")
      .def(
          "detokenize",
          [](const Core& self, const std::vector<int32_t>& ids) {
            return to_str(value_or_raise(self->model().detokenize(ids)));
          },
          py::arg("ids"), "The text of `ids` (control tokens left out).")
      .def(
          "apply_template",
          [](const Core& self, const py::object& messages, bool add_generation_prompt,
             const py::object& tools, const py::object& chat_template_kwargs) {
            const std::string body =
                chat_request_json(messages, tools, chat_template_kwargs, add_generation_prompt);
            return to_str(value_or_raise(self->model().render_chat_request(body)));
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true,
          py::arg("tools") = py::none(), py::arg("chat_template_kwargs") = py::none(),
          "The prompt the model's chat template renders for `messages` (and `tools`).")
      .def(
          "embed", [](const Core& self, const py::object& texts) { return embed(*self, texts); },
          py::arg("texts"), kEmbedDoc)
      .def(
          "logits",
          [](const Core& self, const std::vector<int32_t>& ids, int64_t batch,
             const std::string& cache_type) { return logits(*self, ids, batch, cache_type); },
          py::arg("ids"), py::arg("batch") = 0, py::arg("cache_type") = "", kLogitsDoc)
      .def(
          "stats", [](const Core& self) { return stats_dict(self->generator().stats()); },
          "The scheduler's counters: running and waiting requests, KV blocks used and free.")
      .def(
          "describe", [](const Core& self) { return self->model().describe(); },
          "The model's shape and how it runs, one fact per line.")
      .def_property_readonly("n_vocab", [](const Core& self) { return self->model().n_vocab(); })
      .def_property_readonly(
          "n_ctx", [](const Core& self) { return self->generator().n_ctx(); },
          "Positions one request may use.")
      .def_property_readonly("n_parallel",
                             [](const Core& self) { return self->generator().n_parallel(); })
      .def_property_readonly("architecture",
                             [](const Core& self) { return self->model().architecture(); })
      .def_property_readonly("path", [](const Core& self) { return self->model().path(); })
      .def_property_readonly("chat_template", [](const Core& self) -> py::object {
        Result<std::string> t = self->model().chat_template();
        return t.is_ok() ? py::object(to_str(*t)) : py::object(py::none());
      });
}

}  // namespace

}  // namespace minfer::python

PYBIND11_MODULE(minfer, m) {
  namespace mp = minfer::python;
  m.doc() =
      "minfer: run GGUF language models on the CPU — chat completions, streaming, "
      "grammars, embeddings and logits as numpy arrays.";
  m.attr("__version__") = MINFER_VERSION;
  mp::register_errors(m);
  mp::bind_stream(m);
  mp::bind_model(m);
}
