"""Shared fixtures of the Python module's tests: where the test data and the minfer binary are,
the models, and the rule for missing prerequisites (tests/test_util.h's, in Python): a missing
model skips the test visibly, and under CI=true fails it instead."""
import os
import pathlib
import subprocess

import pytest

import minfer

ROOT = pathlib.Path(__file__).resolve().parents[2]


def in_ci():
    return os.environ.get("CI") == "true"


def skip_or_fail(message):
    if in_ci():
        pytest.fail(f"CI=true: {message} (a missing prerequisite fails in CI instead of skipping)")
    pytest.skip(message)


def test_data_dir():
    """$MINFER_TEST_DATA, else ../shared beside the source tree (as test_util.cpp finds it)."""
    env = os.environ.get("MINFER_TEST_DATA")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(os.environ.get("MINFER_DEFAULT_TEST_DATA", ROOT.parent / "shared"))


def data_path(relative):
    path = test_data_dir() / relative
    if not path.exists():
        skip_or_fail(f"shared test data not found: {path} (set MINFER_TEST_DATA or provide ../shared)")
    return path


def minfer_bin():
    """The built minfer binary ($MINFER_BIN, which ctest sets, else build/minfer)."""
    path = pathlib.Path(os.environ.get("MINFER_BIN", ROOT / "build" / "minfer"))
    if not path.exists():
        skip_or_fail(f"the minfer binary is not at {path} (set MINFER_BIN)")
    return path


def run_minfer(*args):
    """stdout of `minfer ARGS` (2 threads, as the C++ tests run it); a failure fails the test."""
    done = subprocess.run([str(minfer_bin()), *map(str, args)], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


@pytest.fixture(scope="module")
def stories():
    return minfer.Model(data_path("models/stories260K.gguf"), n_threads=2)


@pytest.fixture(scope="module")
def qwen3():
    """The real Qwen3 tokenizer and chat template (tools, <think>) over tiny random weights."""
    return minfer.Model(data_path("models/qwen3-qwentok-tiny-q8_0.gguf"), n_threads=2, n_ctx=2048)


def chat_text(response):
    return response["choices"][0]["message"]["content"]
