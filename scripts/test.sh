#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing (build and test packages), builds with warnings as errors, and runs
# every test with ctest. SANITIZE=1 builds with -fsanitize=address,undefined
# into build-asan instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
extra=(-DIOSONAR_WERROR=ON)
BUILD_DIR=${BUILD_DIR:-build}
if [[ "${SANITIZE:-0}" == 1 ]]; then
  extra+=(-DIOSONAR_SANITIZE=ON)
  BUILD_DIR=build-asan
fi
BUILD_DIR=$BUILD_DIR bash scripts/build.sh "${extra[@]}"
# The real OpenSearch and Elasticsearch of the real-opensearch:/real-es: tests (fetched
# through Maven into a cache outside the build tree; fails loudly if they cannot be;
# IOSONAR_SKIP_REAL_ENGINES=1 skips them, and those tests then report SKIP).
bash scripts/engines.sh "$BUILD_DIR"
(cd "$BUILD_DIR" && ctest --output-on-failure -j2 --timeout 600)
# libFuzzer on every parser, 10 s each by default (the suite stays under 20 min on
# 2 cores), under ASan/UBSan (scripts/fuzz.sh); FUZZ_SECONDS=60 for a longer run.
if [[ "${FUZZ_SECONDS:-10}" != 0 ]]; then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
