#!/usr/bin/env bash
# Fuzzes the chat template interpreter: ./scripts/fuzz_template.sh SECONDS
# Builds the `fuzz` preset (clang++-14, libFuzzer + ASan/UBSan) in build-fuzz/, writes the seed
# corpus (the real templates of tests/chat/templates and of the shared models, the hostile ones
# of the budget tests) into build-fuzz/template-seeds, and runs libFuzzer for SECONDS over
# build-fuzz/template-corpus (kept between runs). Exits non-zero on any crash, leak, timeout,
# sanitizer report or failed property; the input is left in build-fuzz/template-crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz_template.sh SECONDS}
shared=${MINFER_TEST_DATA:-../shared}

# MINFER_FUZZ_PREBUILT=1: the caller built the targets (CI builds the three fuzzers once, then
# runs them side by side; two configures of one build folder at once would race).
if [ -z "${MINFER_FUZZ_PREBUILT:-}" ]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j 2 --target minfer_template_fuzz minfer_template_fuzz_seeds
fi

seeds=build-fuzz/template-seeds
corpus=build-fuzz/template-corpus
crashes=build-fuzz/template-crashes
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$crashes"
./build-fuzz/fuzz/minfer_template_fuzz_seeds "$seeds" tests/chat/templates "$shared/models"

# -max_len 1 MiB: templates as long as the hostile ones of the budget tests; -timeout: any input
# slower than 10 s is a failure (the lowered budgets keep each in milliseconds); -rss_limit_mb:
# the budgets keep a render far below it.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ./build-fuzz/fuzz/minfer_template_fuzz "$corpus" "$seeds" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1048576 -timeout=10 \
  -artifact_prefix="$crashes/" -print_final_stats=1
