#!/usr/bin/env bash
# The node agent's drain-and-ship rate: N programs in agent mode, each 1,000
# pwrites at never-adjacent offsets with no detail budget (~640 trace records
# each), exit; then one agent pass ships every ring (to /dev/null, or over
# Lumberjack into a real `iosonar collect`) and removes it.
set -euo pipefail
B=${1:-build}; N=${2:-300}; OUT=${3:-file}  # build dir, programs, file or lumberjack
T=$(mktemp -d /dev/shm/agent-bench.XXXXXX); trap 'rm -rf "$T"; [[ -n ${CP:-} ]] && kill $CP 2>/dev/null || true' EXIT
mkdir -p "$T/shm/iosonar-ring-$(id -u)" "$T/spool"; chmod 700 "$T/shm/iosonar-ring-$(id -u)" "$T/spool"
for i in $(seq "$N"); do
  IOSONAR_OUTPUT=agent IOSONAR_RING_DIR=$T/shm/iosonar-ring-$(id -u) IOSONAR_DETAIL_BUDGET=0 \
    LD_PRELOAD=$B/libiosonar-trace.so "$B/test/tp_pattern" pwrite-rand "$T/f" 4096 1000
done
if [[ $OUT == lumberjack ]]; then
  PORT=$((20000 + RANDOM % 20000))
  "$B/iosonar" collect --store "$T/store" --listen "tcp://127.0.0.1:$PORT" 2>"$T/collect.log" & CP=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
  dest="lumberjack://127.0.0.1:$PORT"
else
  dest=/dev/null
fi
/usr/bin/time -f "%e %U %S %M" -o "$T/time" "$B/iosonar-exporter" agent --ring-root "$T/shm" --output "$dest" --spool-dir "$T/spool" --count 1 2>"$T/agent.log"
read -r wall user sys rss < "$T/time"
lines=$(grep -o '[0-9]* lines' "$T/agent.log" | grep -o '^[0-9]*')
awk -v l="$lines" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v o="$OUT" -v n="$N" 'BEGIN {
  printf "%s: %d rings, %d lines, %.2f s wall, %.2f s CPU (%.3f s user + %.3f s sys): %.0f lines/s of wall, %.0f lines per CPU-second, %.3f CPU-s per 10^5 lines, %d KiB max RSS\n",
    o, n, l, w, u + s, u, s, l / w, l / (u + s), (u + s) * 1e5 / l, r }'
[[ $(ls "$T/shm/iosonar-ring-$(id -u)" | wc -l) == 0 ]] || { echo "rings left behind" >&2; exit 1; }
