#!/usr/bin/env bash
# The root agent against a flood of junk ring directories: J directories named
# iosonar-ring-N that are not uid N's (refused), then a program of 15,000
# writes in agent mode while the agent passes every 0.2 s. Prints the wall
# time of the agent's passes over the flood, the program's ops stored, and
# what the agent wrote on stderr (one line per cause and pass).
set -euo pipefail
B=${1:-build}; J=${2:-200000}
T=$(mktemp -d /dev/shm/agent-flood.XXXXXX); trap 'rm -rf "$T"; [[ -n ${AP:-} ]] && kill $AP 2>/dev/null || true' EXIT
mkdir -p "$T/shm" "$T/data"
(cd "$T/shm" && seq 100000 $((100000 + J - 1)) | sed 's/^/iosonar-ring-/' | xargs mkdir -m 700)
[[ $(id -u) == 0 ]] && find "$T/shm" -mindepth 1 -maxdepth 1 -exec chown 65534 {} +  # owned by another uid than their names say
S=$(date +%s.%N)
/usr/bin/time -f "%U %S %M" -o "$T/time" "$B/iosonar-exporter" agent --ring-root "$T/shm" --output /dev/null --count 40 --interval 0.001 --no-sampler-records 2>"$T/a1.log"
E=$(date +%s.%N)
"$B/iosonar-exporter" agent --ring-root "$T/shm" --output "$T/out.jsonl" --interval 0.2 --no-sampler-records 2>"$T/a2.log" & AP=$!
IOSONAR_OUTPUT=agent IOSONAR_RING_ROOT=$T/shm LD_PRELOAD=$B/libiosonar-trace.so "$B/test/tp_behaviour" write "$T/data/w.dat" 15000 512
for _ in $(seq 300); do
  n=$(python3 -c 'import json,sys
t=0
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r.get("io.op")=="write" and r.get("file.path","").endswith("/w.dat"): t+=r.get("io.count",0)
print(t)' "$T/out.jsonl" 2>/dev/null || echo 0)
  [[ ${n:-0} -ge 15000 ]] && break
  sleep 0.1
done
kill $AP; wait $AP || true; AP=
read -r cu cs rss < "$T/time"
awk -v cu="$cu" -v cs="$cs" -v rss="$rss" -v j="$J" -v s="$S" -v e="$E" -v n="${n:-0}" -v l1="$(wc -l < "$T/a1.log")" -v b1="$(wc -c < "$T/a1.log")" \
  -v l2="$(wc -l < "$T/a2.log")" 'BEGIN {
  printf "%d junk directories: 40 passes in %.2f s wall, %.2f CPU-s (%.1f CPU-ms a pass; the first ones check 16,384 new each), %d KiB max RSS, %d stderr lines (%d bytes); a 15,000-write job alongside: %d ops stored; %d agent lines meanwhile\n",
    j, e - s, cu + cs, (cu + cs) * 1000 / 40, rss, l1, b1, n, l2 }'
