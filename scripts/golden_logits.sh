#!/usr/bin/env bash
# Writes `minfer logits` for every shared golden (prompt + greedy ids, teacher-forced) into DIR,
# once all at once and once one id per forward, for each KV cell type, so that two builds can be
# compared byte for byte: scripts/golden_logits.sh build/minfer /tmp/a; ... other /tmp/b;
# cmp -s each pair (or `diff -r /tmp/a /tmp/b`).
set -euo pipefail
bin=$1
out=$2
data=${MINFER_TEST_DATA:-$(dirname "$0")/../../shared}
mkdir -p "$out"
for json in "$data"/golden/*.json "$data"/golden/arch/*.json; do
  [ -f "$json" ] || continue
  name=$(basename "$json" .json)
  read -r model ids < <(python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
print(g["model"], ",".join(str(t) for t in g["prompt_tokens"] + g["greedy_tokens"]))' "$json")
  for cache in f32 f16 q8_0; do
    for batch in 0 1; do
      "$bin" logits -m "$data/models/$model" --ids "$ids" --batch "$batch" --cache-type "$cache" \
        -t 2 -o "$out/$name.$cache.b$batch.f32" 2>"$out/$name.$cache.b$batch.err" || true
    done
  done
done
ls "$out" | grep -c '\.f32$'
