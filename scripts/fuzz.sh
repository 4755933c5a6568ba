#!/usr/bin/env bash
# Fuzzes the GGUF reader: ./scripts/fuzz.sh SECONDS
# Builds the `fuzz` preset (clang++-14, libFuzzer + ASan/UBSan) in build-fuzz/, writes the seed
# corpus with the writer into build-fuzz/seeds, and runs libFuzzer for SECONDS over
# build-fuzz/corpus (kept between runs; outside the repo's tracked files). Exits non-zero on any
# crash, leak, sanitizer report or failed property; the crashing input is left in
# build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS}

# MINFER_FUZZ_PREBUILT=1: the caller built the targets (CI builds the three fuzzers once, then
# runs them side by side; two configures of one build folder at once would race).
if [ -z "${MINFER_FUZZ_PREBUILT:-}" ]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j 2 --target minfer_gguf_fuzz minfer_gguf_fuzz_seeds
fi

seeds=build-fuzz/seeds
corpus=build-fuzz/corpus
crashes=build-fuzz/crashes
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$crashes"
./build-fuzz/fuzz/minfer_gguf_fuzz_seeds "$seeds"
echo "fuzz: $(ls "$seeds" | wc -l) seed files"

# New inputs go to the first folder (corpus); the seeds are read only. -max_len 1 MiB: inputs as
# large as CI's other fuzzers take (long strings and arrays, many tensors).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./build-fuzz/fuzz/minfer_gguf_fuzz "$corpus" "$seeds" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10 \
  -artifact_prefix="$crashes/" -print_final_stats=1
