#!/usr/bin/env python3
"""llama.cpp's logits with smaller KV cells for a shared golden, as this repository keeps them
(tests/data/golden/arch/kv/NAME.kv-CELLS.{json,logits.f32}, read by tests/models/golden.cpp beside
../shared/golden; q8_0 cells with flash attention, which llama.cpp needs for them, as the shared
ones were made; bf16 cells with flash attention too, the path where llama.cpp's CPU scores them by
bf16 dot products and sums the values in f32, as minfer does; without it kq is rounded to bf16
before the values):

    LLAMA_REF="llama.cpp <commit>" scripts/llama_reference/make_golden.py LLAMA_DUMP \
        arch/gemma4-tiny-q8_0.short f16 [q8_0 ...]

LLAMA_DUMP is dump.cpp built against llama.cpp (see its header); LLAMA_REF names that build. The golden's own ids (prompt,
then its greedy tokens) are fed as it was made: the prompt as one batch, then one token at a time.
First the f32-cell run must reproduce the shared golden bit for bit (the same llama.cpp on an
equivalent host), else nothing is written. The greedy tokens stay the f32 golden's (the rows are
the logits after those ids); llama_self_shift_mean_kl is the mean KL from the f32-cell golden
over all rows.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("MINFER_TEST_DATA", os.path.join(ROOT, "..", "shared"))
# Cells made with flash attention: llama.cpp quantizes V cells only with it (q8_0), and only its
# flash attention scores bf16 cells by bf16 dots with the values summed in f32 (bf16).
FLASH_CELLS = ("q8_0", "bf16")


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def mean_kl(p_logits, q_logits):
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return float((np.exp(lp) * (lp - lq)).sum(axis=1).mean())


def llama_logits(dump, model, ids, n_prompt, cells, n_vocab):
    with tempfile.TemporaryDirectory() as out:
        ids_file = os.path.join(out, "ids.txt")
        with open(ids_file, "w") as f:
            f.write(" ".join(map(str, ids)))
        env = dict(os.environ, KV=cells, PROMPT=str(n_prompt))
        env.pop("FA", None)
        if cells in FLASH_CELLS:
            env["FA"] = "1"
        subprocess.run([dump, model, ids_file, out, "2"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return np.fromfile(os.path.join(out, "logits.f32"), dtype=np.float32).reshape(-1, n_vocab)


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    dump, name, cell_types = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not os.environ.get("LLAMA_REF"):
        raise SystemExit("set LLAMA_REF to the llama.cpp build's name (commit)")
    folder, stem = os.path.split(name)
    golden_dir = os.path.join(SHARED, "golden", folder)
    g = json.load(open(os.path.join(golden_dir, stem + ".json")))
    n_rows, n_vocab = g["logits_shape"]
    ref = np.fromfile(os.path.join(golden_dir, g["logits_file"]), dtype=np.float32)
    ref = ref.reshape(n_rows, n_vocab)
    ids = (g["prompt_tokens"] + g["greedy_tokens"])[:n_rows]
    n_prompt = min(len(g["prompt_tokens"]), n_rows)
    model = os.path.join(SHARED, "models", g["model"])
    f32 = llama_logits(dump, model, ids, n_prompt, "f32", n_vocab)
    if not np.array_equal(f32, ref):
        raise SystemExit(f"{name}: llama.cpp's f32-cell logits here differ from the golden's "
                         f"(max |d| {np.abs(f32 - ref).max():.3g}): not the same llama.cpp or host")
    out_dir = os.path.join(ROOT, "tests", "data", "golden", folder, "kv")
    os.makedirs(out_dir, exist_ok=True)
    for cells in cell_types:
        logits = llama_logits(dump, model, ids, n_prompt, cells, n_vocab)
        out = f"{stem}.kv-{cells}"
        logits.tofile(os.path.join(out_dir, out + ".logits.f32"))
        j = dict(g)
        j["logits_file"] = out + ".logits.f32"
        fa = "on" if cells in FLASH_CELLS else "off"
        j["reference"] = (f"{os.environ['LLAMA_REF']} CPU, kv {cells}, flash-attn {fa}, 2 threads "
                          "(its f32-cell logits equal the shared golden's bit for bit)")
        j["cache_type"] = cells
        j["llama_self_shift_mean_kl"] = round(mean_kl(ref, logits), 6)
        j["llama_self_shift_note"] = (
            f"mean KL between llama.cpp's own logits with f32 cells and with {cells} cells on "
            f"this file, over all {n_rows} rows (the same ids: the f32 golden's prompt and greedy "
            "tokens); made by scripts/llama_reference/make_golden.py")
        with open(os.path.join(out_dir, out + ".json"), "w") as f:
            json.dump(j, f, indent=2)
            f.write("\n")
        print(f"{out}: llama.cpp's own shift from f32 cells {j['llama_self_shift_mean_kl']:.3g}")


if __name__ == "__main__":
    main()
