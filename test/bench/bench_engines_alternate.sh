#!/usr/bin/env bash
# Alternating runs of job-summary and xlayer on the SQLite store and on a held
# engine of `run-bench-engines-10m` (IOSONAR_BENCH10M_HOLD=FILE): three rounds,
# SQLite then the engine, wall time of each command and whether the engine's
# output is byte-identical to SQLite's.
#   bash test/bench/bench_engines_alternate.sh HOLD_FILE [BUILD_DIR] [ROUNDS]
set -euo pipefail
hold=$1
build=${2:-build}
rounds=${3:-3}
url=$(sed -n 's/^url=//p' "$hold")
sqlite=$(sed -n 's/^sqlite=//p' "$hold")
maps=$(sed -n 's/^maps=//p' "$hold")
ca=$(sed -n 's/^ca=//p' "$hold")
bin=$build/iosonar
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export IOSONAR_CONFIG=/nonexistent IOSONAR_NAMESPACE=bench
[[ -n "$ca" ]] && export IOSONAR_ES_CA_FILE=$ca
# Elasticsearch's test user (the bench's engine), as the bench passes it.
if [[ -n "$ca" ]]; then
  export IOSONAR_ES_USER=${IOSONAR_ES_USER:-iosonar} IOSONAR_ES_PASSWORD=${IOSONAR_ES_PASSWORD:-iosonar-test-writer}
fi
run() {  # name store cmd...
  local name=$1 store=$2
  shift 2
  local s e
  s=$(date +%s.%N)
  "$bin" "$@" --format json --store "$store" >"$out/$name.out" 2>"$out/$name.err" || { echo "$name failed:"; cat "$out/$name.err"; exit 1; }
  e=$(date +%s.%N)
  printf '%s %.2f s\n' "$name" "$(echo "$e - $s" | bc)"
}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  echo "round $r"
  run sqlite-job-summary "$sqlite" job-summary 5000
  run engine-job-summary "$url" job-summary 5000
  run sqlite-xlayer "$sqlite" xlayer 5000 --maps "$maps"
  run engine-xlayer "$url" xlayer 5000 --maps "$maps"
  for c in job-summary xlayer; do
    if cmp -s "$out/sqlite-$c.out" "$out/engine-$c.out"; then echo "  $c: same bytes"; else echo "  $c: DIFFERENT output"; exit 1; fi
  done
done
