#!/usr/bin/env python3
"""Compares two MINFER_DUMP_DIR folders tensor by tensor and prints the first that differs.

Usage: tools/diff_dumps.py DIR_A DIR_B [--atol 1e-4] [--rtol 1e-3]

Each folder holds index.json ({step, kind, name, op, shape, file} per tensor, in execution
order) and the raw little-endian float32 files it names. Tensors are matched by (step, name)
and walked in A's order; the first whose max |a - b| exceeds atol + rtol * max |a| is reported
with statistics of both and of the difference. Exit code: 0 when all match, 1 when one differs,
2 on a usage or file error. Needs only the Python standard library.
"""

import argparse
import array
import json
import math
import os
import sys


def load_index(folder):
    with open(os.path.join(folder, "index.json"), encoding="utf-8") as f:
        return json.load(f)


def load_tensor(folder, entry):
    values = array.array("f")
    with open(os.path.join(folder, entry["file"]), "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    return values


def stats(values):
    finite = [v for v in values if math.isfinite(v)]
    n_nan = sum(1 for v in values if math.isnan(v))
    n_inf = sum(1 for v in values if math.isinf(v))
    if not finite:
        return {"count": len(values), "n_nan": n_nan, "n_inf": n_inf}
    return {
        "count": len(values),
        "min": min(finite),
        "max": max(finite),
        "mean": sum(finite) / len(finite),
        "mean_abs": sum(abs(v) for v in finite) / len(finite),
        "n_nan": n_nan,
        "n_inf": n_inf,
    }


def fmt_stats(s):
    keys = ["count", "min", "max", "mean", "mean_abs", "n_nan", "n_inf"]
    return "  ".join(
        f"{k} {s[k]:.6g}" if isinstance(s[k], float) else f"{k} {s[k]}" for k in keys if k in s
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-3)
    args = parser.parse_args()
    try:
        index_a = load_index(args.a)
        index_b = {(e["step"], e["name"]): e for e in load_index(args.b)}
    except (OSError, ValueError) as e:
        print(f"diff_dumps: {e}", file=sys.stderr)
        return 2

    compared = 0
    for entry in index_a:
        key = (entry["step"], entry["name"])
        other = index_b.get(key)
        if other is None:
            print(f"step {key[0]} {key[1]}: only in {args.a}")
            return 1
        a = load_tensor(args.a, entry)
        b = load_tensor(args.b, other)
        if len(a) != len(b):
            print(f"step {key[0]} {key[1]}: shapes differ {entry['shape']} vs {other['shape']}")
            return 1
        diff = [abs(x - y) for x, y in zip(a, b)]
        worst = max(diff) if diff else 0.0
        scale = max((abs(x) for x in a if math.isfinite(x)), default=0.0)
        nan_mismatch = any(math.isnan(x) != math.isnan(y) for x, y in zip(a, b))
        compared += 1
        if nan_mismatch or worst > args.atol + args.rtol * scale or math.isnan(worst):
            at = max(range(len(diff)), key=lambda i: diff[i] if math.isfinite(diff[i]) else math.inf)
            print(f"first difference: step {key[0]} ({entry['kind']}) {key[1]} "
                  f"op {entry['op']} shape {entry['shape']}")
            print(f"  max |a-b| {worst:.6g} at element {at} (a {a[at]:.6g}, b {b[at]:.6g}); "
                  f"tolerance {args.atol + args.rtol * scale:.6g}")
            print(f"  a:     {fmt_stats(stats(a))}")
            print(f"  b:     {fmt_stats(stats(b))}")
            print(f"  |a-b|: {fmt_stats(stats(diff))}")
            return 1
    print(f"all {compared} tensors match (atol {args.atol}, rtol {args.rtol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
