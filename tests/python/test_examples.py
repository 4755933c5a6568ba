"""examples/python/ run on the tiny model and print what they promise."""
import json
import os
import subprocess
import sys

from conftest import ROOT, data_path


def run_example(name, *args, stdin=""):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / name), *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_structured_output_prints_the_schemas_json():
    person = json.loads(run_example("structured_output.py", data_path("models/stories260K.gguf")))
    assert set(person) == {"name", "age", "languages"}
    assert isinstance(person["age"], int) and len(person["languages"]) <= 3


def test_embeddings_similarity_ranks_every_document():
    lines = run_example("embeddings_similarity.py", data_path("models/qwen3-tiny-f32.gguf"))
    scores = [float(line.split()[0]) for line in lines.splitlines()]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True)


def test_batch_prints_every_reply():
    out = run_example("batch.py", data_path("models/stories260K.gguf"))
    assert out.count("--- ") == 8 and "8 replies" in out


def test_chat_stream_answers_each_line():
    out = run_example("chat_stream.py", data_path("models/stories260K.gguf"), stdin="Hello\nMore\n")
    assert out.count("> ") == 3 and len(out) > 20
