"""Model sources (a path, ollama=, hf=) and errors as Python exceptions carrying the engine's
one-line message."""
import json

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
    with pytest.raises(minfer.Error, match="q3_k") as refused:
        minfer.Model(data_path("models/stories260K.gguf"), cache_type="q3_k")
    assert "f32, f16, bf16 or q8_0" in str(refused.value)


def test_bf16_cells_tell_the_f32_cells_story():
    # bf16 KV cells (llama.cpp's -ctk bf16): stories260K's greedy story is the f32 cells' one.
    path = data_path("models/stories260K.gguf")
    texts = [minfer.Model(path, cache_type=cells).complete(
        "Once upon a time", max_tokens=40, temperature=0)["choices"][0]["text"]
        for cells in ("bf16", "f32")]
    assert texts[0] == texts[1]
    assert texts[0].startswith(", there was a little girl named Lily.")


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


def test_a_model_from_ollamas_store_is_the_file(tmp_path, monkeypatch):
    digest = "1" * 64
    blob = tmp_path / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir()
    blob.write_bytes(data_path("models/stories260K.gguf").read_bytes())
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "stories" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
         "size": blob.stat().st_size}]}))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    by_name = minfer.Model(ollama="stories", n_threads=2)
    assert by_name.path == str(blob)
    by_path = minfer.Model(blob, n_threads=2)
    assert by_name.complete("Once", max_tokens=8, temperature=0)["choices"][0]["text"] == \
        by_path.complete("Once", max_tokens=8, temperature=0)["choices"][0]["text"]
    with pytest.raises(minfer.Error, match=r"^\[ollama\].*not in the store"):
        minfer.Model(ollama="qwen3:0.6b")


def test_an_offline_hub_model_missing_from_the_cache_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(minfer.Error) as e:
        minfer.Model(hf="org/absent-GGUF:Q8_0", offline=True)
    assert "org/absent-GGUF" in str(e.value) and "\n" not in str(e.value)
