#!/usr/bin/env bash
# libFuzzer on every parser of the network and of the exporters (record line,
# Lumberjack frames, Lustre stats/md_stats/rpc_stats, job_stats, brw_stats,
# lctl get_param dumps, lfs df, lctl dl -t, sacct, /etc/iosonar/iosonar.toml), Darshan logs, the store's merged blocks, and of the node agent's
# reader of the tracer's rings (shared memory any user writes), under ASan and UBSan,
# seeded from test/fixtures and test/golden. A crash, a sanitizer report or a
# broken promise (see test/fuzz/fuzz_parsers.cc) fails the run and leaves the
# input in build-fuzz/crashes/.
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET (default 20)]
#   bash scripts/fuzz.sh --build-only   only build the targets (scripts/test.sh
#                                       does it at nice 19 beside ctest)
# scripts/test.sh runs it after the test suite (FUZZ_SECONDS, default 10;
# 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ missing (scripts/setup.sh --test installs clang and libclang-rt-14-dev)" >&2; exit 1; }
cmake -S test/fuzz -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
if [[ $secs == --build-only ]]; then exit 0; fi
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
seed() {  # seed TARGET FILES...
  local t=$1; shift
  mkdir -p "$corpus/$t"
  local f
  for f in "$@"; do [[ -f $f ]] && cp "$f" "$corpus/$t/$(echo "$f" | tr / _)"; done
  return 0
}
mapfile -t stats < <(find test/fixtures/lustre -name stats -o -name md_stats -o -name rpc_stats)
mapfile -t jobs < <(find test/fixtures/lustre -name job_stats)
mapfile -t brw < <(find test/fixtures/lustre -name brw_stats)
seed lustre_stats "${stats[@]}"
seed job_stats "${jobs[@]}"
seed brw_stats "${brw[@]}"
seed lctl_dump test/fixtures/lustre/*/lctl-get-param.txt test/fixtures/*/lctl-get-param.txt
seed lfs_df test/fixtures/health/lfs-df*.txt
seed lctl_dl test/fixtures/health/lctl-dl-t*.txt test/fixtures/health/devices-*.txt
seed sacct test/fixtures/slurm/sacct-*.txt
mkdir -p "$corpus/record" "$corpus/lumberjack"
i=0
for g in test/golden/*.jsonl; do  # one line of each dataset each golden file has
  while IFS= read -r line; do printf '%s' "$line" > "$corpus/record/$i"; i=$((i + 1)); done < <(awk -F'"event.dataset":"' '{split($2, a, "\""); if (!seen[a[1]]++) print}' "$g")
done
# Lumberjack: a window of two JSON events, and the same compressed.
printf '2W\0\0\0\x02' > "$corpus/lumberjack/w"
printf '2W\0\0\0\x02''2J\0\0\0\x01\0\0\0\x02{}''2J\0\0\0\x02\0\0\0\x03[1]' > "$corpus/lumberjack/wjj"
python3 -c 'import sys,zlib; inner=b"2W\0\0\0\x01"+b"2J\0\0\0\x01\0\0\0\x02{}"; z=zlib.compress(inner); sys.stdout.buffer.write(b"2C"+len(z).to_bytes(4,"big")+z)' > "$corpus/lumberjack/c"
seed config deploy/iosonar.toml test/fixtures/config/*.toml
mkdir -p "$BUILD/crashes"
fail=0
mkdir -p "$corpus/ring"
printf '\x00' > "$corpus/ring/dead"
printf '\x13' > "$corpus/ring/live-agent-commit"
# Darshan logs: the example logs of the pinned pydarshan (scripts/setup.sh --test), if there.
venv=${IOSONAR_PYDARSHAN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/iosonar/pydarshan-3.5.0}
mapfile -t dlogs < <(find "$venv" -name '*.darshan' -size -600k 2>/dev/null)
seed darshan "${dlogs[@]}"
# Store blocks: a tiny merged header, and first-pass trace blocks of a small simulated store when
# an iosonar binary is built (the target merges them and expands them back).
mkdir -p "$corpus/block_merge"
printf '\x02\x01\x00\x00\x00' > "$corpus/block_merge/tiny"
if [[ -x build/iosonar ]] && command -v sqlite3 >/dev/null; then
  st=$(mktemp -d)
  build/iosonar simulate --store "$st/s" --nodes 4 --duration 3 >/dev/null 2>&1 &&
    sqlite3 "$st/s/store.db" "SELECT writefile('$corpus/block_merge/b' || id, data) FROM blocks WHERE dataset = 'iosonar.trace' AND length(data) < 60000" >/dev/null || true
  rm -rf "$st"
fi
# The targets run side by side, as many at a time as there are cores, each
# for SECONDS; their lines are printed in the list's order.
targets=(record lumberjack lustre_stats job_stats brw_stats lctl_dump lfs_df lctl_dl sacct ring darshan config block_merge)
run_target() {  # run_target T: its line to $BUILD/fuzz_T.line, status 1 on a finding
  local t=$1 log="$BUILD/fuzz_$1.log" max_len=65536
  [[ $t == darshan ]] && max_len=600000  # whole sample logs
  if "$BUILD/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=$max_len -timeout=10 \
       -artifact_prefix="$BUILD/crashes/$t-" -print_final_stats=1 "$corpus/$t" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${secs} s, no finding" > "$BUILD/fuzz_$t.line"
  else
    { echo "fuzz: $t: FAILED (see $log and $BUILD/crashes/)"
      grep -E "ERROR|SUMMARY|broken promise|runtime error" "$log" | head -5 || true; } > "$BUILD/fuzz_$t.line"
    return 1
  fi
}
jobs_max=$(nproc)
declare -A pid_of
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  run_target "$t" &
  pid_of[$t]=$!
done
for t in "${targets[@]}"; do
  if wait "${pid_of[$t]}"; then cat "$BUILD/fuzz_$t.line"; else cat "$BUILD/fuzz_$t.line" >&2; fail=1; fi
done
exit $fail
