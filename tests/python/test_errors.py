"""Errors as Python exceptions carrying the engine's one-line message."""
import pathlib

import pytest

import minfer
from conftest import data_path


def test_a_missing_model_file_raises_file_not_found(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(minfer.ModelNotFoundError) as e:
        minfer.Model(missing)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, minfer.Error)
    assert str(missing) in str(e.value) and "\n" not in str(e.value)


def test_a_file_that_is_not_gguf_raises_the_engines_message(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all, just text" * 4)
    with pytest.raises(minfer.Error, match=r"^\[gguf\]"):
        minfer.Model(bad)


def test_model_takes_one_source():
    with pytest.raises(minfer.InvalidArgumentError, match="one of path"):
        minfer.Model()
    with pytest.raises(minfer.InvalidArgumentError, match="one of path"):
        minfer.Model("a.gguf", hf="org/repo")


def test_a_bad_cache_type_is_refused():
    with pytest.raises(minfer.Error, match="q3_k"):
        minfer.Model(data_path("models/stories260K.gguf"), cache_type="q3_k")


def test_bad_options_are_type_or_value_errors(stories):
    with pytest.raises(TypeError, match="unexpected keyword argument 'temprature'"):
        stories.complete("x", temprature=0)
    with pytest.raises(TypeError, match="'max_tokens' must be an int"):
        stories.complete("x", max_tokens="ten")
    with pytest.raises(TypeError, match="messages"):
        stories.chat("hello")
    with pytest.raises(TypeError, match="'top_logprobs'"):
        stories.complete("x", top_logprobs=3)  # a chat option
    with pytest.raises(ValueError):
        stories.complete("x", temperature=0, logprobs=500)


def test_a_prompt_longer_than_the_context_is_refused():
    model = minfer.Model(data_path("models/stories260K.gguf"), n_threads=2, n_ctx=16)
    with pytest.raises(minfer.Error) as e:
        model.complete("Once upon a time " * 20, max_tokens=4)
    assert "\n" not in str(e.value)
