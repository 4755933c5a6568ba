#!/usr/bin/env python3
"""The Python module's overhead (issue #50's Done-when), printed, never asserted:

1. model.chat streaming N tokens vs `minfer run`'s decode rate on the same model, alternating
   the two (rounds of run, python, run, python, …) so that a drifting machine load hits both;
2. chat_many with 8 requests vs 8 sequential chat calls (tokens/s together).

    python3 bench/python/overhead.py MODEL.gguf [--tokens 256] [--rounds 5] [--threads T]
      [--minfer build/minfer]

The model: a 0.5B-shaped file from `minfer make-model` (see `minfer make-model --help`) for the
issue's figures. Run with PYTHONPATH=build/python (or the module installed).
"""
import argparse
import re
import statistics
import subprocess
import time

import minfer

PROMPT = "Once upon a time"


def run_decode_rate(args):
    """`minfer run`'s decode tokens/s from its metrics (printed with --verbose on stderr)."""
    done = subprocess.run(
        [args.minfer, "run", "-m", args.model, "-p", PROMPT, "-n", str(args.tokens),
         "--temp", "0", "-t", str(args.threads), "--verbose"],
        capture_output=True, text=True, check=True)
    match = re.search(r"decode:\s+[0-9.]+ ms, ([0-9.]+) tok/s", done.stderr)
    if match is None:
        raise SystemExit(f"no decode rate in minfer run's output:\n{done.stderr}")
    return float(match.group(1))


def python_decode_rate(model, args):
    """Tokens/s of a streamed complete() from its first chunk to its last, as run measures
    decode (from the first sampled token)."""
    first = None
    n = 0
    for chunk in model.complete(PROMPT, max_tokens=args.tokens, temperature=0, stream=True):
        if first is None:
            first = time.perf_counter()
        n = chunk.get("usage", {}).get("completion_tokens", n)
    seconds = time.perf_counter() - first
    return (n - 1) / seconds if seconds > 0 else 0.0


def batch_speedup(model, args):
    requests = [{"messages": [{"role": "user", "content": f"Story {i}"}],
                 "max_tokens": args.tokens, "temperature": 0} for i in range(8)]
    start = time.perf_counter()
    sequential = [model.chat(r["messages"], max_tokens=args.tokens, temperature=0)
                  for r in requests]
    t_seq = time.perf_counter() - start
    start = time.perf_counter()
    batched = model.chat_many(requests)
    t_batch = time.perf_counter() - start
    n_seq = sum(r["usage"]["completion_tokens"] for r in sequential)
    n_batch = sum(r["usage"]["completion_tokens"] for r in batched)
    return n_seq / t_seq, n_batch / t_batch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--minfer", default="build/minfer")
    args = p.parse_args()
    model = minfer.Model(args.model, n_threads=args.threads, n_parallel=8)
    run_rates, py_rates = [], []
    for _ in range(args.rounds):
        run_rates.append(run_decode_rate(args))
        py_rates.append(python_decode_rate(model, args))
    run_median, py_median = statistics.median(run_rates), statistics.median(py_rates)
    print(f"decode, {args.tokens} tokens, {args.rounds} alternating rounds (median tok/s):")
    print(f"  minfer run      {run_median:9.1f}   {run_rates}")
    print(f"  model.complete  {py_median:9.1f}   {py_rates}")
    print(f"  python / run    {py_median / run_median:9.3f}   (Done-when: >= 0.97)")
    seq, batch = batch_speedup(model, args)
    print(f"8 requests: sequential {seq:.1f} tok/s, chat_many {batch:.1f} tok/s, "
          f"x{batch / seq:.2f} (Done-when: >= 3)")


if __name__ == "__main__":
    main()
