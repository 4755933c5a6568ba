"""embed() and logits(): numpy arrays equal to what `minfer embed` and `minfer logits` compute."""
import json

import numpy as np
import pytest

import minfer
from conftest import data_path, run_minfer

IDS = [1, 17, 300, 42, 999, 5, 0, 123, 7, 64]


def test_logits_equal_minfer_logits_bit_for_bit(tmp_path):
    path = data_path("models/qwen2-tiny-q4_k_m.gguf")
    out = tmp_path / "logits.f32"
    run_minfer("logits", "-t", "2", "-m", path, "--ids", ",".join(map(str, IDS)), "-o", out)
    expected = np.fromfile(out, dtype=np.float32)
    model = minfer.Model(path, n_threads=2)
    rows = model.logits(IDS)
    assert rows.dtype == np.float32 and rows.shape == (len(IDS), model.n_vocab)
    assert np.array_equal(rows.reshape(-1).view(np.uint32), expected.view(np.uint32))
    # The array holds the engine's buffer: no copy was made.
    assert not rows.flags.owndata and rows.flags.c_contiguous
    chunked = model.logits(IDS, batch=3)
    assert np.array_equal(chunked.view(np.uint32), rows.view(np.uint32))


def test_logits_refuse_bad_ids(stories):
    with pytest.raises(minfer.InvalidArgumentError, match=r"\[logits\] id 512 at index 1"):
        stories.logits([1, 512])
    with pytest.raises(minfer.InvalidArgumentError, match="no ids"):
        stories.logits([])


def test_embed_equals_minfer_embed():
    path = data_path("models/qwen3-tiny-f32.gguf")
    texts = ["The cat sat on the mat.", "A dog ran in the park.", "Stocks fell today."]
    lines = run_minfer("embed", "-t", "2", "-m", path, *sum((["-p", t] for t in texts), []))
    expected = np.array([json.loads(line) for line in lines.decode().splitlines()],
                        dtype=np.float32)
    model = minfer.Model(path, n_threads=2)
    vectors = model.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == expected.shape
    assert np.array_equal(vectors, expected)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    one = model.embed(texts[1])
    assert one.shape == (1, vectors.shape[1])
    np.testing.assert_array_equal(one[0], vectors[1])


def test_embed_needs_a_text(stories):
    with pytest.raises(minfer.InvalidArgumentError, match="at least one text"):
        stories.embed([])
