#!/usr/bin/env python3
"""Many prompts at once through the scheduler (continuous batching): chat_many submits them
together and returns the replies in order, faster than one call after another.

    python3 examples/python/batch.py MODEL.gguf"""
import sys
import time

import minfer

TOPICS = ["the sea", "a robot", "a dragon", "the moon", "a lost key", "rain", "a train", "bees"]


def main():
    model = minfer.Model(sys.argv[1] if len(sys.argv) > 1 else "models/stories260K.gguf",
                         n_parallel=len(TOPICS))
    requests = [{"messages": [{"role": "user", "content": f"A short story about {t}."}],
                 "max_tokens": 64, "seed": i} for i, t in enumerate(TOPICS)]
    start = time.perf_counter()
    replies = model.chat_many(requests)
    seconds = time.perf_counter() - start
    tokens = sum(r["usage"]["completion_tokens"] for r in replies)
    for topic, reply in zip(TOPICS, replies):
        print(f"--- {topic}\n{reply['choices'][0]['message']['content']}")
    print(f"\n{len(replies)} replies, {tokens} tokens in {seconds:.2f} s "
          f"({tokens / seconds:.1f} tokens/s together)")


if __name__ == "__main__":
    main()
