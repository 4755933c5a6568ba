#!/usr/bin/env bash
# Fuzzes the server's request path (route table, handlers, grammars, templates, generation on the
# tiny models of ../shared/models): ./scripts/fuzz_requests.sh SECONDS [LIBFUZZER_FLAGS...]
# Builds the `fuzz` preset (clang++-14, libFuzzer + ASan/UBSan) in build-fuzz/ and runs libFuzzer
# for SECONDS over build-fuzz/request-corpus (kept between runs) with the seeds of
# fuzz/corpus/requests (read only; written by minfer_request_fuzz_seeds). Exits non-zero on any
# crash, leak, timeout, sanitizer report or failed property; the input is left in
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
# seeds (100,000-deep arrays, 50,000 nested parentheses) fit; -timeout: an input slower than 10 s
# is a failure (generation is cut at 250 ms per request, so only a parser or compiler can be that
# slow); -rss_limit_mb: three models, their KV caches and ASan's shadow stay far below it. The
# handlers run on the main thread with an 8 MiB stack, what a server's worker threads get under
# the usual limit (glibc sizes thread stacks by it; .ci/run's ASan step raises it for the unit
# tests): a recursion that overflows it is a finding.
ulimit -s 8192
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  MINFER_FUZZ_MODELS="$shared/models" \
  ./build-fuzz/fuzz/minfer_request_fuzz "$corpus" fuzz/corpus/requests \
  -dict=fuzz/request.dict -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=1048576 \
  -timeout=10 -artifact_prefix="$crashes/" -print_final_stats=1 "$@"
