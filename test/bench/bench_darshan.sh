#!/usr/bin/env bash
# `iosonar darshan-import` on N Darshan logs: copies of the example logs the
# pinned pydarshan ships (scripts/setup.sh --test), rewritten by
# libdarshan-util as format 3.41 with job ids 1000000..1000000+N-1 (so each is
# a job of its own), imported into a fresh embedded store, 3 runs: logs/s,
# records/s and peak RSS (GNU time), medians; then the same logs again into
# the last store (every record already stored: the deduplication path).
#   bench_darshan.sh BUILD_DIR [N (1000)]
set -euo pipefail
build=$1
n=${2:-1000}
venv=${IOSONAR_PYDARSHAN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/iosonar/pydarshan-3.5.0}
py=$venv/bin/python
[[ -x $py ]] || { echo "bench_darshan: $venv missing (bash scripts/setup.sh --test)" >&2; exit 1; }
src=$("$py" -c 'import darshan, os; print(os.path.dirname(darshan.__file__))')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")/../darshan" && pwd)
"$py" "$here/pydarshan_oracle.py" copies "$src/examples" "$src/tests/input" "$tmp/logs" "$n"
echo "bench_darshan: $n logs, $(du -sh "$tmp/logs" | cut -f1) ($(ls "$src"/examples/*/*.darshan "$src"/tests/input/*.darshan | wc -l) samples cycled)"
run() {  # run STORE -> "seconds rss_kib records"
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$build/iosonar" darshan-import "$tmp/logs" --store "$1" --format json \
    > "$tmp/out.json" 2> "$tmp/err"
  local rec
  rec=$(python3 -c 'import json,sys; print(sum(r["records"] for r in json.load(open(sys.argv[1]))))' "$tmp/out.json")
  echo "$(cat "$tmp/time") $rec"
}
results=()
for i in 1 2 3; do
  rm -rf "$tmp/store"
  results+=("$(run "$tmp/store")")
done
printf '%s\n' "${results[@]}" | sort -n | sed -n 2p | while read -r s rss rec; do
  awk -v s="$s" -v rss="$rss" -v rec="$rec" -v n="$n" 'BEGIN { printf "bench_darshan: import into a fresh store (median of 3): %.2f s, %.0f logs/s, %.0f records/s (%d records), peak RSS %.1f MiB\n", s, n / s, rec / s, rec, rss / 1024 }'
done
read -r s rss rec <<< "$(run "$tmp/store")"
awk -v s="$s" -v rss="$rss" -v n="$n" 'BEGIN { printf "bench_darshan: the same logs again (all already stored): %.2f s, %.0f logs/s, peak RSS %.1f MiB\n", s, n / s, rss / 1024 }'
