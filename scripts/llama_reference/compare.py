#!/usr/bin/env python3
"""Where minfer's numbers first leave llama.cpp's: for each pair MINFER_NODE=LLAMA_NAME[.K], the
rows (tokens) whose values differ, in graph order, from a MINFER_DUMP_DIR of `minfer logits` and
an OUT of dump.cpp over the same ids.

    MINFER_DUMP_DIR=/tmp/m build/minfer logits -m MODEL --ids-file IDS.csv --cache-type f32 -o x
    /tmp/llama_dump MODEL IDS.txt /tmp/l 2 attn_norm-0 Vcur-0 kqv_out-0 ...
    scripts/llama_reference/compare.py /tmp/m /tmp/l blk.0.attn_norm=attn_norm-0 \
        blk.0.attn_v_bias=Vcur-0.1 blk.0.attn=kqv_out-0 ...

K (default 0) picks llama.cpp's K-th output under that name (a name given to several steps, as
Vcur before and after its bias). Prints, per pair, the largest difference, how many rows differ
at all and the first of them: the first pair whose rows differ is where to look.
"""
import json
import sys

import numpy as np


def minfer_node(dump_dir, name):
    index = json.load(open(f"{dump_dir}/index.json"))
    for entry in index:
        if entry["step"] == 0 and entry["name"] == name:
            data = np.fromfile(f"{dump_dir}/{entry['file']}", dtype=np.float32)
            return data.reshape(entry["shape"][0], -1)
    raise SystemExit(f"no node '{name}' in step 0 of {dump_dir}/index.json")


def llama_tensor(out_dir, spec):
    name, _, call = spec.partition(".")
    base = f"{out_dir}/{name}.{call or 0}"
    kind, *ne = open(f"{base}.shape").read().split()
    data = np.fromfile(f"{base}.bin", dtype=np.int32 if kind == "i32" else np.float32)
    return data.astype(np.float32), [int(n) for n in ne]


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    minfer_dir, llama_dir = sys.argv[1], sys.argv[2]
    for pair in sys.argv[3:]:
        mine_name, _, theirs_spec = pair.partition("=")
        mine = minfer_node(minfer_dir, mine_name)
        theirs, ne = llama_tensor(llama_dir, theirs_spec)
        if theirs.size != mine.size:
            print(f"{pair}: sizes differ ({mine.shape} vs llama.cpp ne {ne})")
            continue
        rows = np.abs(mine - theirs.reshape(mine.shape)).max(axis=1)
        differing = np.nonzero(rows > 0)[0]
        first = differing[0] if differing.size else "-"
        print(f"{pair}: max {rows.max():.3e}, rows differing {differing.size}/{rows.size}, "
              f"first {first}")


if __name__ == "__main__":
    main()
