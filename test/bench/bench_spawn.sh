#!/usr/bin/env bash
# Per-process cost of the tracer (issue 38): N short processes spawned one
# after another (bench_spawn), untraced and under each output mode, ROUNDS
# rounds alternating; prints the median wall and CPU (the processes' own
# user + system time) microseconds per process, what the tracer adds
# (traced - untraced) and the ratio traced / untraced. Each process writes one 4 KiB block to
# a file of its own in a work directory under /tmp (so it makes a ring, records
# and sends), as tp_behaviour "write". Also: what the rings left in /dev/shm.
#   bench_spawn.sh BUILD [N] [ROUNDS] [MODES]
# A mode MODE@base runs MODE with the library $IOSONAR_TRACE_LIB_BASE instead
# (an earlier build's libiosonar-trace.so), in the same rounds: before and
# after side by side, e.g. MODES="none tcp@base tcp run@base run".
set -euo pipefail
B=$(cd "${1:-build}" && pwd); N=${2:-1000}; ROUNDS=${3:-3}; MODES=${4:-none file tcp agent trace run}
LIB=${IOSONAR_TRACE_LIB:-$B/libiosonar-trace.so}; export IOSONAR_TRACE_LIB=$LIB  # (iosonar trace/run preload it too)
T=$(mktemp -d /tmp/spawn-bench.XXXXXX); S=$(mktemp -d /dev/shm/spawn-bench.XXXXXX)
trap 'for p in ${CP:-} ${AP:-}; do kill $p 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T" "$S"' EXIT
RING=$S/iosonar-ring-$(id -u); mkdir -m 700 "$RING"
SPAWN=$B/test/bench_spawn; PROG=$B/test/tp_behaviour
PORT=$((20000 + RANDOM % 20000))
"$B/iosonar" collect --store "$T/store" --listen "tcp://127.0.0.1:$PORT" 2>"$T/collect.log" & CP=$!
"$B/iosonar-exporter" agent --ring-root "$S" --output "$T/agent.jsonl" --interval 0.5 2>"$T/agent.log" & AP=$!
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
one() {  # mode -> "wall_us cpu_us" per process
  local env=(env IOSONAR_RING_DIR="$RING") LIB=$LIB
  if [[ $1 == *@base ]]; then LIB=${IOSONAR_TRACE_LIB_BASE:?MODE@base needs IOSONAR_TRACE_LIB_BASE}; fi
  local -x IOSONAR_TRACE_LIB=$LIB
  case ${1%@base} in
    none) env=(env) ;;
    file) env+=(LD_PRELOAD="$LIB" IOSONAR_OUTPUT="$T/out.jsonl") ;;
    tcp) env+=(LD_PRELOAD="$LIB" IOSONAR_OUTPUT="tcp://127.0.0.1:$PORT") ;;
    agent) env+=(LD_PRELOAD="$LIB" IOSONAR_OUTPUT=agent) ;;
    trace) env=(env "$B/iosonar" trace --output "$T/trace.jsonl" --) ;;
    run) env=("$B/iosonar" run --store "$T/run-store" --) ;;
  esac
  (cd "$T" && "${env[@]}" "$SPAWN" "$N" "$PROG" write "$T/w.dat" 1 4096 2>>"$T/err.log" |
     awk '/^bench_spawn_us /{w=$2} /^bench_spawn_cpu_us /{c=$2} END{print w, c}')
}
declare -A wall cpu
for r in $(seq "$ROUNDS"); do
  for m in $MODES; do
    read -r w c < <(one "$m")
    wall[$m]+="$w "; cpu[$m]+="$c "
    rm -rf "$T/run-store"
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bw=$(echo "${wall[none]:-0}" | median); bc_=$(echo "${cpu[none]:-0}" | median)
printf '%-6s %10s %10s %7s %10s %10s %7s   (%d processes, %d rounds, medians)\n' mode wall_us added ratio cpu_us added ratio "$N" "$ROUNDS"
for m in $MODES; do
  w=$(echo "${wall[$m]}" | median); c=$(echo "${cpu[$m]}" | median)
  printf '%-6s %10.1f %10.1f %7.2f %10.1f %10.1f %7.2f   wall [%s] cpu [%s]\n' "$m" "$w" "$(echo "$w - $bw" | bc)" \
    "$(echo "scale=3; $w / $bw" | bc)" "$c" "$(echo "$c - $bc_" | bc)" "$(echo "scale=3; $c / $bc_" | bc)" "${wall[$m]}" "${cpu[$m]}"
done
sleep 1.5  # two agent passes: what the rings still hold in /dev/shm is what finished processes left
printf 'rings left in the agent-mode ring directory: %s files, %s KiB\n' "$(find "$RING" -name 'ring-*' | wc -l)" "$(du -sk "$RING" | cut -f1)"
