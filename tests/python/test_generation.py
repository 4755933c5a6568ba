"""chat() and complete(), whole and streamed: greedy text equal to `minfer run`'s, OpenAI's
response and chunk shapes, usage, timings, seeds, stops and logprobs."""
import math
import re

import minfer
from conftest import ROOT, chat_text, data_path, run_minfer

ONCE = "Once upon a time"


def test_version_is_the_projects():
    project = re.search(r"project\(minfer VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert minfer.__version__ == project.group(1)


def test_completion_equals_minfer_run_greedy_and_seeded(stories):
    expected = run_minfer("run", "-t", "2", "-m", data_path("models/stories260K.gguf"),
                          "-p", ONCE, "-n", 48, "--temp", 0).decode()
    reply = stories.complete(ONCE, max_tokens=48, temperature=0)
    assert reply["object"] == "text_completion"
    assert reply["choices"][0]["text"] == expected
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 48
    assert reply["usage"]["prompt_tokens"] == len(stories.tokenize(ONCE))
    # Sampled with a seed: the same draws as run's.
    sampled = run_minfer("run", "-t", "2", "-m", data_path("models/stories260K.gguf"),
                         "-p", ONCE, "-n", 48, "--temp", 1.0, "--seed", 42).decode()
    reply = stories.complete(ONCE, max_tokens=48, temperature=1.0, seed=42)
    assert reply["choices"][0]["text"] == sampled


def test_chat_equals_minfer_run_chat_greedy_and_seeded():
    path = data_path("models/qwen2.5-qwentok-tiny-q8_0.gguf")
    expected = run_minfer("run", "-t", "2", "-m", path, "--chat", "-p", "Hello there",
                          "-n", 24, "--temp", 0).decode()
    model = minfer.Model(path, n_threads=2)
    reply = model.chat([{"role": "user", "content": "Hello there"}], max_tokens=24, temperature=0)
    assert chat_text(reply) == expected
    sampled = run_minfer("run", "-t", "2", "-m", path, "--chat", "-p", "Hello there",
                         "-n", 24, "--temp", 1.0, "--seed", 7).decode()
    reply = model.chat([{"role": "user", "content": "Hello there"}], max_tokens=24,
                       temperature=1.0, seed=7)
    assert chat_text(reply) == sampled


def test_chat_has_openais_shape(qwen3):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    reply = qwen3.chat(messages, max_tokens=8, temperature=0)
    assert reply["object"] == "chat.completion"
    assert reply["id"].startswith("chatcmpl-")
    assert reply["model"] == "qwen3-qwentok-tiny-q8_0.gguf"
    choice = reply["choices"][0]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] in ("stop", "length")
    assert choice["logprobs"] is None
    prompt = qwen3.tokenize(qwen3.apply_template(messages), special=True)
    usage = reply["usage"]
    assert usage["prompt_tokens"] == len(prompt)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert 1 <= usage["completion_tokens"] <= 8
    timings = reply["timings"]
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["prompt_n"] + timings["cache_n"] == usage["prompt_tokens"]


def test_stream_chunks_add_up_to_the_whole_reply(qwen3):
    messages = [{"role": "user", "content": "Tell me a story"}]
    whole = qwen3.chat(messages, max_tokens=20, temperature=0)
    chunks = list(qwen3.chat(messages, max_tokens=20, temperature=0, stream=True))
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    last = chunks[-1]
    assert last["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert last["usage"]["completion_tokens"] == whole["usage"]["completion_tokens"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    message = whole["choices"][0]["message"]
    assert "".join(d.get("content", "") for d in deltas) == (message["content"] or "")
    assert "".join(d.get("reasoning_content", "") for d in deltas) == message.get(
        "reasoning_content", "")


def test_streamed_completion_equals_the_whole(stories):
    whole = stories.complete(ONCE, max_tokens=30, temperature=0)
    chunks = list(stories.complete(ONCE, max_tokens=30, temperature=0, stream=True))
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_a_seed_repeats_a_sampled_reply(stories):
    a = stories.complete(ONCE, max_tokens=24, temperature=1.0, seed=1234)
    b = stories.complete(ONCE, max_tokens=24, temperature=1.0, seed=1234)
    assert a["choices"][0]["text"] == b["choices"][0]["text"]
    seeded = minfer.Model(data_path("models/stories260K.gguf"), n_threads=2, seed=1234)
    c = seeded.complete(ONCE, max_tokens=24, temperature=1.0)
    assert c["choices"][0]["text"] == a["choices"][0]["text"]


def test_a_stop_string_ends_the_reply_unprinted(stories):
    full = stories.complete(ONCE, max_tokens=48, temperature=0)["choices"][0]["text"]
    word = full.split()[3]
    reply = stories.complete(ONCE, max_tokens=48, temperature=0, stop=[word])
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["choices"][0]["text"] == full[: full.index(word)]


def test_logprobs_report_each_token_and_its_alternatives(qwen3):
    reply = qwen3.chat([{"role": "user", "content": "Hi"}], max_tokens=6, temperature=0,
                       logprobs=True, top_logprobs=3)
    content = reply["choices"][0]["logprobs"]["content"]
    assert len(content) == reply["usage"]["completion_tokens"]
    for entry in content:
        assert entry["logprob"] <= 0.0 and math.isfinite(entry["logprob"])
        assert len(entry["top_logprobs"]) == 3
        # Greedy: the token taken is the most likely one.
        assert entry["top_logprobs"][0]["logprob"] == entry["logprob"]
        assert bytes(entry["bytes"]).decode(errors="replace") == entry["token"]
    completion = qwen3.complete("Hi", max_tokens=4, temperature=0, logprobs=2)
    lp = completion["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == 4
