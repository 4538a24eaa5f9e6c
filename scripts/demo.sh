#!/usr/bin/env bash
# The main job on the bundled demo workload, from a fresh Debian 12 machine:
# installs what building needs (scripts/setup.sh, no test packages), builds
# only what the demo runs (iosonar, the tracer, the demo workload; tests off,
# Release, Ninja and ccache) into build-demo/, runs `iosonar run` on a 4-rank
# demo job and prints its I/O diagnosis. The record store is left in
# ./iosonar-demo/. scripts/test.sh builds everything else, in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build-demo}
BUILD_DIR=$BUILD_DIR BUILD_TYPE=${BUILD_TYPE:-Release} TARGETS="iosonar iosonar-trace iosonar-demo-workload" \
  bash scripts/build.sh -DIOSONAR_BUILD_TESTS=OFF
work=$(mktemp -d "${TMPDIR:-/tmp}/iosonar-demo-data.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf iosonar-demo
"$BUILD_DIR/iosonar" run --store iosonar-demo --json iosonar-demo/summary.json -- \
  "$BUILD_DIR/iosonar-demo-workload" "$work/data" 4 64
echo
echo "summary JSON: iosonar-demo/summary.json   record store: iosonar-demo/store.db"
