#!/usr/bin/env bash
# bench_spawn_pairs.sh BUILD BASE_LIB NEW_LIB N PAIRS MODE...: per mode (none file tcp agent run), PAIRS
# alternating runs of bench_spawn N (tp_behaviour write F 1 4096) under the base and the new
# libiosonar-trace.so; prints each side's median and the median paired difference (CPU us per
# process). On a shared machine the paired difference is steadier than bench_spawn.sh's rounds.
set -euo pipefail
B=$(cd "$1" && pwd) BASE=$(realpath "$2") NEW=$(realpath "$3") N=$4 P=$5; shift 5
T=$(mktemp -d /tmp/pairs.XXXXXX); S=$(mktemp -d /dev/shm/pairs.XXXXXX); RING=$S/iosonar-ring-$(id -u); mkdir -m 700 "$RING"
PORT=$((20000 + RANDOM % 20000))
"$B/iosonar" collect --store "$T/store" --listen "tcp://127.0.0.1:$PORT" 2>"$T/collect.log" & CP=$!
trap 'kill $CP; wait; rm -rf "$T" "$S"' EXIT
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
for mode in "$@"; do
  for i in $(seq "$P"); do
    for L in "$BASE" "$NEW"; do
      case $mode in
        none) e=(env) ;;
        file) e=(env IOSONAR_RING_DIR="$RING" LD_PRELOAD="$L" IOSONAR_OUTPUT="$T/out.jsonl") ;;
        tcp) e=(env IOSONAR_RING_DIR="$RING" LD_PRELOAD="$L" IOSONAR_OUTPUT="tcp://127.0.0.1:$PORT") ;;
        agent) e=(env IOSONAR_RING_DIR="$RING" LD_PRELOAD="$L" IOSONAR_OUTPUT=agent) ;;
        run) e=(env IOSONAR_TRACE_LIB="$L" "$B/iosonar" run --store "$T/run-store" --) ;;
      esac
      (cd "$T" && "${e[@]}" "$B/test/bench_spawn" "$N" "$B/test/tp_behaviour" write "$T/w.dat" 1 4096 2>>"$T/err.log") | awk '/cpu/{printf "%s ", $2}'
      rm -rf "$T/run-store"
    done
    echo
  done | awk -v m="$mode" '{d[NR]=$2-$1; b[NR]=$1; n[NR]=$2} END {asort(d); asort(b); asort(n); k=int((NR+1)/2); printf "%-6s base %7.1f  new %7.1f  median paired new-base %7.1f us CPU per process (%d pairs)\n", m, b[k], n[k], d[k], NR}'
done
