"""minfer: run GGUF language models on the CPU from Python.

Chat completions in OpenAI's shapes (tools, reasoning, structured output), streaming, batches
through the scheduler, embeddings and logits as numpy arrays. The module is a binding of the
public C++ API (include/minfer/minfer.h); the engine's errors arrive as minfer.Error.
"""
from collections.abc import Iterator, Sequence
from os import PathLike
from typing import Any, Literal, Mapping, TypedDict, overload

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
        cache_type: Literal["", "f32", "f16", "q8_0"] = "",
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
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None,
        parallel_tool_calls: bool = True,
        response_format: dict[str, Any] | None = None,
        grammar: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        repeat_penalty: float | None = None,
        repeat_last_n: int | None = None,
        frequency_penalty: float | None = None,
        presence_penalty: float | None = None,
        stop: str | list[str] | None = None,
        seed: int | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        logit_bias: dict[int, float] | None = None,
        reasoning_budget: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        stream: Literal[False] = False,
    ) -> ChatResponse: ...
    @overload
    def chat(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        stream: Literal[True],
        **options: Any,
    ) -> Stream: ...
    @overload
    def complete(
        self,
        prompt: str | list[int],
        *,
        response_format: dict[str, Any] | None = None,
        grammar: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        repeat_penalty: float | None = None,
        repeat_last_n: int | None = None,
        frequency_penalty: float | None = None,
        presence_penalty: float | None = None,
        stop: str | list[str] | None = None,
        seed: int | None = None,
        logprobs: int | None = None,
        logit_bias: dict[int, float] | None = None,
        stream: Literal[False] = False,
    ) -> CompletionResponse: ...
    @overload
    def complete(
        self, prompt: str | list[int], *, stream: Literal[True], **options: Any
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
