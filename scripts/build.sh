#!/usr/bin/env bash
# Configures and builds iosonar into ${BUILD_DIR:-build}. Extra arguments go to cmake.
#   BUILD_TYPE  CMake build type (default RelWithDebInfo)
#   TARGETS     only these targets (space-separated; default: everything)
# A new build directory gets Ninja and ccache when they are installed
# (scripts/setup.sh installs both); an existing one keeps its generator.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
gen=()
if [[ ! -f $BUILD_DIR/CMakeCache.txt ]] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
if command -v ccache >/dev/null; then
  gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"
