#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing (build and test packages), builds with warnings as errors, and runs
# every test with ctest. SANITIZE=1 builds with -fsanitize=address,undefined
# into build-asan instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time, so a slow CI run says where its time went.
t0=$SECONDS; tp=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - tp)) s (total $((SECONDS - t0)) s)"; tp=$SECONDS; }
bash scripts/setup.sh --test
phase "setup (packages)"
# -g1: line tables and functions (backtraces, sanitizer reports, perf and
# callgrind by line) without the variables' debug information, which cost
# about a quarter of the libraries' compile time (serve/service.cc: 41.4 CPU-s
# at -O2 -g1, 57.7 at -O2 -g). BUILD_TYPE=RelWithDebInfo DEBUG_INFO=-g for all of it.
extra=(-DIOSONAR_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 ${DEBUG_INFO:--g1} -DNDEBUG"
       "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 ${DEBUG_INFO:--g1} -DNDEBUG")
BUILD_DIR=${BUILD_DIR:-build}
if [[ "${SANITIZE:-0}" == 1 ]]; then
  extra+=(-DIOSONAR_SANITIZE=ON)
  BUILD_DIR=build-asan
fi
BUILD_DIR=$BUILD_DIR bash scripts/build.sh "${extra[@]}"
phase "build"
# The real OpenSearch and Elasticsearch of the real-opensearch:/real-es: tests (fetched
# through Maven into a cache outside the build tree; fails loudly if they cannot be;
# IOSONAR_SKIP_REAL_ENGINES=1 skips them, and those tests then report SKIP).
bash scripts/engines.sh "$BUILD_DIR"
phase "engines (fetch, unpack)"
# The fuzz targets (clang, ASan/UBSan) build at nice 19 while ctest runs: its
# tests spend much of their time waiting on servers and programs, and the
# build takes only what they leave.
fuzz_pid=""
if [[ "${FUZZ_SECONDS:-10}" != 0 ]]; then
  nice -n 19 bash scripts/fuzz.sh --build-only > "$BUILD_DIR/fuzz-build.log" 2>&1 &
  fuzz_pid=$!
fi
rc=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j2 --timeout 600) || rc=$?
phase "ctest (rc $rc)"
# libFuzzer on every parser, 10 s each by default (the suite stays under 20 min on
# 2 cores), under ASan/UBSan (scripts/fuzz.sh); FUZZ_SECONDS=60 for a longer run.
if [[ -n $fuzz_pid ]]; then
  wait "$fuzz_pid" || { cat "$BUILD_DIR/fuzz-build.log" >&2; echo "fuzz: building the targets failed" >&2; exit 1; }
  phase "waiting for the fuzz build"
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}" || rc=1
  phase "fuzz"
fi
exit $rc
