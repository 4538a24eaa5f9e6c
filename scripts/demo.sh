#!/usr/bin/env bash
# The main job on the bundled demo workload, from a fresh Debian 12 machine:
# installs what is missing, builds, runs `iosonar run` on a 4-rank demo job
# and prints its I/O diagnosis. The record store is left in ./iosonar-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/iosonar-demo-data.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf iosonar-demo
"${BUILD_DIR:-build}/iosonar" run --store iosonar-demo --json iosonar-demo/summary.json -- \
  "${BUILD_DIR:-build}/iosonar-demo-workload" "$work/data" 4 64
echo
echo "summary JSON: iosonar-demo/summary.json   record store: iosonar-demo/store.db"
