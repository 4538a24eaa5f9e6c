#!/usr/bin/env bash
# The node agent's merge of a process's threads (exporters/agent/thread_merge.h)
# side by side with --no-thread-merge, on copies of the same rings: P programs
# of T threads sharing one file (tp_behaviour turns: each thread writes K 4 KiB
# blocks in turns with the others, then preads R 4 KiB blocks at random
# places), the tracer's defaults (1 s window, 4,000 detail records a second).
# Prints, per variant, the trace lines, the bytes of JSON and of it deflated
# (gzip -6, as Lumberjack's compression), bytes per traced op, and the agent's
# CPU seconds: medians of ROUNDS rounds, the two variants alternating.
set -euo pipefail
B=${1:-build}; P=${2:-20}; T=${3:-8}; K=${4:-4096}; R=${5:-20000}; ROUNDS=${6:-5}
D=$(mktemp -d /dev/shm/merge-bench.XXXXXX); trap 'rm -rf "$D"' EXIT
U=$(id -u); SRC=$D/src/iosonar-ring-$U
mkdir -p "$SRC" "$D/data"; chmod 700 "$SRC"
for _ in $(seq "$P"); do
  IOSONAR_OUTPUT=agent IOSONAR_RING_DIR=$SRC LD_PRELOAD=$B/libiosonar-trace.so \
    "$B/test/tp_behaviour" turns "$D/data" "$T" "$K" "$R"
done
ops=$((P * T * (K + R)))
run() {  # $1: merge or split; appends "lines json deflated cpu" to $D/$1
  rm -rf "$D/shm"; mkdir -p "$D/shm/iosonar-ring-$U"; chmod 700 "$D/shm/iosonar-ring-$U"
  cp -p "$SRC"/*.bin "$D/shm/iosonar-ring-$U/"
  local flag=(); [[ $1 == split ]] && flag=(--no-thread-merge)
  /usr/bin/time -f "%U %S" -o "$D/time" "$B/iosonar-exporter" agent --ring-root "$D/shm" --output "$D/out.jsonl" \
    --count 1 --no-sampler-records "${flag[@]}" 2>"$D/agent.log"
  [[ $(ls "$D/shm/iosonar-ring-$U" | wc -l) == 0 ]] || { echo "rings left behind" >&2; exit 1; }
  read -r u s < "$D/time"
  echo "$(grep -c '"iosonar.trace"' "$D/out.jsonl") $(stat -c %s "$D/out.jsonl") $(gzip -6 -c "$D/out.jsonl" | wc -c) $u $s" >> "$D/$1"
  rm -f "$D/out.jsonl"
}
for r in $(seq "$ROUNDS"); do
  if (( r % 2 )); then run merge; run split; else run split; run merge; fi
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for v in merge split; do
  lines=$(cut -d' ' -f1 "$D/$v" | median); json=$(cut -d' ' -f2 "$D/$v" | median); gz=$(cut -d' ' -f3 "$D/$v" | median)
  cpu=$(awk '{ print $4 + $5 }' "$D/$v" | median)
  awk -v v="$v" -v l="$lines" -v j="$json" -v g="$gz" -v c="$cpu" -v o="$ops" -v p="$P" -v t="$T" 'BEGIN {
    printf "%-5s %d programs x %d threads, %d traced ops: %d trace lines, %.0f B JSON (%.2f B/op), %.0f B deflated (%.3f B/op), agent %.2f CPU-s\n",
      v, p, t, o, l, j, j / o, g, g / o, c }'
done
