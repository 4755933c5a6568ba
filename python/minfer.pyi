"""minfer: run GGUF language models on the CPU from Python.

Chat completions in OpenAI's shapes (tools, reasoning, structured output), streaming, batches
through the scheduler, embeddings and logits as numpy arrays. The module is a binding of the
public C++ API (include/minfer/minfer.h); the engine's errors arrive as minfer.Error.
"""
from collections.abc import Iterator, Sequence
from os import PathLike
from typing import Any, Literal, Mapping, TypedDict, overload

from typing_extensions import Unpack

import numpy
import numpy.typing

__version__: str

class Error(Exception):
    """An error of the minfer engine; str(e) is its one-line message."""

class InvalidArgumentError(Error, ValueError):
    """Bad input: a parameter, a message list, a grammar, a schema, a token id."""

class ModelNotFoundError(Error, FileNotFoundError):
    """The model file (or the named model) does not exist."""

class Message(TypedDict, total=False):
    role: str  # "system", "user", "assistant", "tool"
    content: str | None
    reasoning_content: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    name: str

ChatResponse = dict[str, Any]
"""OpenAI's chat.completion: {"id", "object", "created", "model", "choices": [{"index",
"message": {"role", "content", "reasoning_content"?, "tool_calls"?}, "logprobs",
"finish_reason"}], "usage": {"prompt_tokens", "completion_tokens", "total_tokens",
"prompt_tokens_details"}, "timings": {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms",
…}}."""
ChatChunk = dict[str, Any]
"""OpenAI's chat.completion.chunk: {"choices": [{"index", "delta": {"role"?, "content"?,
"reasoning_content"?, "tool_calls"?}, "logprobs", "finish_reason"}]}; the last chunk has
finish_reason, "usage" and "timings"."""
CompletionResponse = dict[str, Any]
"""OpenAI's text_completion: {"choices": [{"index", "text", "logprobs", "finish_reason"}],
"usage", "timings"}; streamed chunks have the same shape."""

class SamplingOptions(TypedDict, total=False):
    """What chat() and complete() take besides the prompt (None: the model's default): the
    file's recommended sampling, else llama.cpp's (temperature 0.8, top_k 40, top_p 0.95,
    min_p 0.05); a random seed unless the request or the Model sets one."""
    max_tokens: int | None  # None: to an end-of-generation token or a full context
    temperature: float | None  # 0: greedy
    top_p: float | None
    top_k: int | None
    min_p: float | None
    repeat_penalty: float | None
    repeat_last_n: int | None
    frequency_penalty: float | None
    presence_penalty: float | None
    stop: str | list[str] | None  # never part of the text
    seed: int | None
    logit_bias: dict[int, float] | None
    grammar: str | None  # GBNF; not with a JSON response_format
    # {"type": "text" | "json_object"} or {"type": "json_schema", "json_schema": {"name",
    # "schema"}}: the schema becomes the reply's grammar
    response_format: dict[str, Any] | None

class ChatOptions(SamplingOptions, total=False):
    tools: list[dict[str, Any]] | None  # OpenAI's [{"type": "function", "function": {...}}]
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None
    parallel_tool_calls: bool
    logprobs: bool  # choices[0].logprobs.content: each token's logprob
    top_logprobs: int | None  # with logprobs: this many alternatives per token (<= 20)
    reasoning_budget: int | None  # reasoning tokens before the engine closes <think>
    chat_template_kwargs: dict[str, Any] | None  # e.g. {"enable_thinking": False}

class CompletionOptions(SamplingOptions, total=False):
    logprobs: int | None  # alternatives per token (OpenAI's legacy completions shape)

class Stream(Iterator[dict[str, Any]]):
    """The chunks of a streamed request. Iterating waits for the next chunk with the GIL
    released; dropping the stream (or close(), or leaving a `with` block) cancels the request
    and frees its sequence."""
    def __iter__(self) -> Stream: ...
    def __next__(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Stream: ...
    def __exit__(self, *args: object) -> None: ...

class Model:
    """A GGUF model loaded for generation; every request runs through one scheduler on a
    thread of its own, so calls from several Python threads batch together."""

    def __init__(
        self,
        path: str | PathLike[str] | None = None,
        *,
        hf: str | None = None,
        ollama: str | None = None,
        n_ctx: int = 0,
        n_threads: int = 0,
        cache_type: Literal["", "f32", "f16", "bf16", "q8_0"] = "",
        seed: int | None = None,
        n_parallel: int = 4,
        offline: bool = False,
    ) -> None:
        """Loads `path` (a split model's first part), hf="org/repo[:QUANT]" (the Hugging Face
        cache, downloaded unless offline) or ollama="name[:tag]" (Ollama's store). n_ctx:
        positions per request (0: the model's, within a quarter of memory); n_threads <= 0:
        every core; cache_type: KV cells (default f16); seed: the requests' default seed (None:
        random); n_parallel: requests decoded together.
        Raises ModelNotFoundError, InvalidArgumentError, Error."""

    @overload
    def chat(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        stream: Literal[False] = False,
        **options: Unpack[ChatOptions],
    ) -> ChatResponse:
        """A chat completion through the model's template; with stream=True, a Stream of
        chat.completion.chunk dicts. temperature=0 is greedy; Ctrl-C cancels the request."""
    @overload
    def chat(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        stream: Literal[True],
        **options: Unpack[ChatOptions],
    ) -> Stream: ...
    @overload
    def complete(
        self,
        prompt: str | list[int],
        *,
        stream: Literal[False] = False,
        **options: Unpack[CompletionOptions],
    ) -> CompletionResponse:
        """A text completion of `prompt` (a str, tokenized as `minfer run` does: BOS as the
        model asks, special tokens parsed; or ids); with stream=True, a Stream of chunks."""
    @overload
    def complete(
        self,
        prompt: str | list[int],
        *,
        stream: Literal[True],
        **options: Unpack[CompletionOptions],
    ) -> Stream: ...
    def chat_many(self, requests: list[dict[str, Any]]) -> list[ChatResponse]:
        """Chat requests ({"messages": [...], **options}) submitted together and decoded in one
        batch per step; their responses in order."""
    def tokenize(self, text: str, add_special: bool = True, special: bool = False) -> list[int]: ...
    def detokenize(self, ids: Sequence[int]) -> str: ...
    def apply_template(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> str: ...
    def embed(self, texts: str | Sequence[str]) -> numpy.typing.NDArray[numpy.float32]:
        """[n, dim] float32, each row L2-normalised (as the server's /v1/embeddings)."""
    def logits(
        self, ids: Sequence[int], batch: int = 0, cache_type: str = ""
    ) -> numpy.typing.NDArray[numpy.float32]:
        """[n, n_vocab] float32 teacher-forced logits, as `minfer logits` computes them."""
    def stats(self) -> dict[str, int]: ...
    def describe(self) -> str: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def n_parallel(self) -> int: ...
    @property
    def architecture(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def chat_template(self) -> str | None: ...
