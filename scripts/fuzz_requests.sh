#!/usr/bin/env bash
# Fuzzes the server's request path (route table, handlers, grammars, templates, generation on the
# tiny models of ../shared/models): ./scripts/fuzz_requests.sh SECONDS [LIBFUZZER_FLAGS...]
# Builds the `fuzz` preset (clang++-14, libFuzzer + ASan/UBSan) in build-fuzz/ and runs libFuzzer
# for SECONDS over build-fuzz/request-corpus (kept between runs) with the seeds of
# fuzz/corpus/requests (read only; written by minfer_request_fuzz_seeds). Exits non-zero on any
# crash, leak, timeout (60 s), sanitizer report or failed property; the input is left in
# build-fuzz/request-crashes/ (replay: MINFER_FUZZ_MODELS=../shared/models
# build-fuzz/fuzz/minfer_request_fuzz FILE). Extra arguments go to libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz_requests.sh SECONDS [LIBFUZZER_FLAGS...]}
shift
shared=${MINFER_TEST_DATA:-../shared}
if [ ! -f "$shared/models/stories260K.gguf" ]; then
  echo "fuzz_requests: no $shared/models (set MINFER_TEST_DATA): the request fuzzer needs its models"
  exit 1
fi

# MINFER_FUZZ_PREBUILT=1: the caller built the target (CI builds the fuzzers once, then runs them).
if [ -z "${MINFER_FUZZ_PREBUILT:-}" ]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j 2 --target minfer_request_fuzz
fi

corpus=build-fuzz/request-corpus
crashes=build-fuzz/request-crashes
mkdir -p "$corpus" "$crashes"

# -dict: the APIs' field names, JSON Schema keywords and GBNF pieces; -max_len 1 MiB: the hostile
# seeds (100,000-deep arrays, 50,000 nested parentheses) fit; -timeout: an input slower than 60 s
# is a failure. Generation is cut at 500 ms per input, so only parsing, compiling or tokenizing
# can take that long, and this build runs them 10 to 20 times slower than a release build: the
# linear work of a 1 MiB input (tokenizing a 1 MiB word: 27 s here, 2-3 s in release) passes, a
# super-linear one (an object of 40,000 keys: 140 s here) fails. -rss_limit_mb: three models,
# their KV caches and ASan's shadow stay far below it. The handlers run on the main thread with
# an 8 MiB stack, what a server's worker threads get under the usual limit (glibc sizes thread
# stacks by it; .ci/run's ASan step raises it for the unit tests): a recursion that overflows it
# is a finding. -detect_leaks=0: libFuzzer would run every input whose mallocs and frees differ
# a second time to look for its leaks, and here nearly all do (the generators' caches and KV
# pools grow, the scheduler's thread allocates beside the input): it would halve the speed. A
# leak still fails the run: LeakSanitizer checks at exit (detect_leaks=1 in ASAN_OPTIONS) and
# names the allocation's stack.
ulimit -s 8192
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  MINFER_FUZZ_MODELS="$shared/models" \
  ./build-fuzz/fuzz/minfer_request_fuzz "$corpus" fuzz/corpus/requests \
  -dict=fuzz/request.dict -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=1048576 \
  -timeout=60 -detect_leaks=0 -artifact_prefix="$crashes/" -print_final_stats=1 "$@"
