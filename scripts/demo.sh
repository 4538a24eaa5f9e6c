#!/usr/bin/env bash
# The main job on the bundled demo workload, from a fresh Debian 12 machine:
# installs what building needs (scripts/setup.sh --demo: no test packages, no
# npm), builds only what the demo runs (iosonar without `serve`, the tracer, the
# demo workload; tests off, Release at -O1 but the tracer at -O2, Ninja and
# ccache) into build-demo/, runs `iosonar run` on a 4-rank demo job and prints
# its I/O diagnosis. The record store is left in
# ./iosonar-demo/. scripts/test.sh builds everything else, in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
BUILD_DIR=${BUILD_DIR:-build-demo}
BUILD_DIR=$BUILD_DIR BUILD_TYPE=${BUILD_TYPE:-Release} TARGETS="iosonar iosonar-trace iosonar-demo-workload" \
  bash scripts/build.sh -DIOSONAR_BUILD_TESTS=OFF -DIOSONAR_BUILD_SERVE=OFF -DIOSONAR_QUICK_BUILD=ON
work=$(mktemp -d "${TMPDIR:-/tmp}/iosonar-demo-data.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf iosonar-demo
"$BUILD_DIR/iosonar" run --store iosonar-demo --json iosonar-demo/summary.json -- \
  "$BUILD_DIR/iosonar-demo-workload" "$work/data" 4 64
echo
echo "summary JSON: iosonar-demo/summary.json   record store: iosonar-demo/store.db"
