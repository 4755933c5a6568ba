"""Requests side by side through the one scheduler: four Python threads calling chat at once, a
stream dropped early freeing its sequence, chat_many, Ctrl-C during a generation, and no memory
growing over a thousand calls."""
import gc
import os
import signal
import threading
import time

import numpy as np
import pytest

import minfer
from conftest import chat_text, data_path

ONCE = "Once upon a time"


def test_four_threads_calling_chat_at_once_get_their_own_replies(qwen3):
    prompts = [f"Question number {i}" for i in range(4)]
    expected = [chat_text(qwen3.chat([{"role": "user", "content": p}], max_tokens=24,
                                     temperature=0)) for p in prompts]
    results = [None] * 4
    barrier = threading.Barrier(4)

    def ask(i):
        barrier.wait()
        results[i] = chat_text(qwen3.chat([{"role": "user", "content": prompts[i]}],
                                          max_tokens=24, temperature=0))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == expected


def test_a_stream_dropped_after_three_chunks_frees_its_sequence():
    # One sequence of 256 positions: a request after the dropped one needs all of them.
    model = minfer.Model(data_path("models/stories260K.gguf"), n_threads=2, n_ctx=256,
                         n_parallel=1)
    stream = model.complete(ONCE, max_tokens=200, temperature=0, stream=True)
    chunks = [next(stream) for _ in range(3)]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    del stream
    gc.collect()
    stats = model.stats()
    assert stats["n_running"] == 0 and stats["kv_blocks_used"] == 0
    prompt = model.tokenize(ONCE)
    reply = model.complete(ONCE, max_tokens=256, temperature=0)
    # The whole context: every position but the prompt's went to the reply.
    assert reply["usage"]["completion_tokens"] == 256 - len(prompt)
    assert reply["choices"][0]["finish_reason"] == "length"


def test_closing_a_stream_cancels_it(stories):
    with stories.complete(ONCE, max_tokens=400, temperature=0, stream=True) as stream:
        next(stream)
    assert list(stream) == []
    assert stories.stats()["n_running"] == 0


def test_chat_many_equals_sequential_chats(qwen3):
    requests = [{"messages": [{"role": "user", "content": f"Tell me about {topic}"}],
                 "max_tokens": 16, "temperature": 0}
                for topic in ("cats", "dogs", "the sea", "trains", "tea", "rain", "maps", "bees")]
    sequential = [qwen3.chat(r["messages"], max_tokens=16, temperature=0) for r in requests]
    batched = qwen3.chat_many(requests)
    assert [chat_text(r) for r in batched] == [chat_text(r) for r in sequential]
    assert [r["usage"] for r in batched] != [] and all(
        b["usage"]["completion_tokens"] == s["usage"]["completion_tokens"]
        for b, s in zip(batched, sequential))
    with pytest.raises(minfer.InvalidArgumentError, match="messages"):
        qwen3.chat_many([{"max_tokens": 3}])


def test_ctrl_c_interrupts_a_generation():
    # A generation that cannot end before the signal: the real Qwen vocabulary (its output rows
    # make a token cost ~1 ms here), its end-of-generation tokens banned, 4,000 tokens (3.3 s
    # uninterrupted on the 2-core CI machine; qwen2-tiny met its end token after 226 tokens, in
    # 27 ms, before the timer fired).
    model = minfer.Model(data_path("models/qwen3-qwentok-tiny-q8_0.gguf"), n_threads=2,
                         n_ctx=4096, n_parallel=1)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.complete("hello", max_tokens=4000, temperature=0,
                       logit_bias={151643: -100, 151645: -100})
    # Raised from inside the call (within its 100 ms signal checks of the 0.3 s timer), not after
    # the whole generation returned (which would raise KeyboardInterrupt too, seconds later).
    assert time.monotonic() - start < 1.5
    stats = model.stats()
    assert stats["n_running"] == 0 and stats["kv_blocks_used"] == 0


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_thousand_calls_do_not_leak(stories):
    def calls(n):
        for i in range(n):
            stories.complete(ONCE, max_tokens=2, temperature=0)
            stories.chat([{"role": "user", "content": f"hi {i}"}], max_tokens=1)
            for _ in zip(range(2), stories.complete(ONCE, max_tokens=50, stream=True)):
                pass
            stories.tokenize(ONCE)
            stories.logits([1, 2, 3])
            try:
                stories.detokenize([9999])
            except minfer.InvalidArgumentError:
                pass

    calls(200)  # warm up: the allocator's pools, the prefix cache, the interpreter's caches
    gc.collect()
    before = rss_bytes()
    calls(1000)
    gc.collect()
    growth = rss_bytes() - before
    # 0.2 MB here; a leak of 2 KB a round (a third of one logits array) would fail.
    assert growth < 2 * 1024 * 1024, f"RSS grew {growth / 1e6:.1f} MB over 1000 rounds of calls"
