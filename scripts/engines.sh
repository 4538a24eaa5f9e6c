#!/usr/bin/env bash
# The real search engines for the `real-opensearch:` and `real-es:` tests.
# Fetches OpenSearch's and Elasticsearch's integ-test distributions from Maven
# Central with Maven into a cache outside the build tree (kept between runs),
# unpacks each once there, and writes their homes to BUILD_DIR/engines.env
# (read by test/testutil/search_engine.cc; the environment variables
# IOSONAR_OPENSEARCH_HOME / IOSONAR_ES_HOME override it).
#   scripts/engines.sh [BUILD_DIR]          default BUILD_DIR=build
#   IOSONAR_ENGINE_CACHE=DIR                default /var/cache/iosonar-engines
#   IOSONAR_SKIP_REAL_ENGINES=1             fetch nothing; the real-engine tests report SKIP
# A fetch that fails stops here, naming the artifact: the real-engine tests
# are part of the suite and are never dropped silently.
set -euo pipefail
BUILD_DIR=${1:-${BUILD_DIR:-build}}
CACHE=${IOSONAR_ENGINE_CACHE:-/var/cache/iosonar-engines}
OPENSEARCH_VERSION=2.19.1
ES_VERSION=8.15.5
mkdir -p "$BUILD_DIR"
ENV_FILE="$BUILD_DIR/engines.env"

if [[ "${IOSONAR_SKIP_REAL_ENGINES:-0}" == 1 ]]; then
  echo "engines: IOSONAR_SKIP_REAL_ENGINES=1: no real engines; the real-opensearch: and real-es: tests will SKIP"
  printf 'IOSONAR_SKIP_REAL_ENGINES=1\n' >"$ENV_FILE"
  exit 0
fi

mkdir -p "$CACHE"
# The engines refuse to run as root: the tests run them as this user.
if [[ $(id -u) -eq 0 ]] && ! id iosonar-test >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin iosonar-test
  echo "engines: created system user iosonar-test"
fi

# fetch GROUP ARTIFACT VERSION -> the unpacked home on stdout
fetch() {
  local group=$1 artifact=$2 version=$3
  local zip="$CACHE/$artifact-$version.zip" home="$CACHE/$artifact-$version"
  if [[ ! -s "$zip" ]]; then
    echo "engines: fetching $group:$artifact:$version:zip from Maven Central" >&2
    if ! mvn -q -B dependency:copy -Dartifact="$group:$artifact:$version:zip" -DoutputDirectory="$CACHE" >&2 ||
       [[ ! -s "$zip" ]]; then
      echo "engines: FAILED to fetch $group:$artifact:$version:zip (Maven Central); the real-engine tests" \
           "cannot run. Set IOSONAR_SKIP_REAL_ENGINES=1 to skip them knowingly." >&2
      exit 1
    fi
  fi
  if [[ ! -x "$home/bin/$artifact" ]]; then
    local tmp
    tmp=$(mktemp -d "$CACHE/.unpack.XXXXXX")
    unzip -q "$zip" -d "$tmp"
    rm -rf "$home"
    mv "$tmp/$artifact-$version" "$home"
    rmdir "$tmp"
    # Readable by the engine's user; it writes only to its own data/log dirs (the tests give it a private config copy).
    chmod -R a+rX "$home"
  fi
  echo "$home"
}

os_home=$(fetch org.opensearch.distribution.integ-test-zip opensearch "$OPENSEARCH_VERSION")
es_home=$(fetch org.elasticsearch.distribution.integ-test-zip elasticsearch "$ES_VERSION")
{
  printf 'IOSONAR_OPENSEARCH_HOME=%s\n' "$os_home"
  printf 'IOSONAR_ES_HOME=%s\n' "$es_home"
} >"$ENV_FILE"
echo "engines: OpenSearch $OPENSEARCH_VERSION at $os_home, Elasticsearch $ES_VERSION at $es_home (written to $ENV_FILE)"
