#!/usr/bin/env bash
# Fork safety stress (issue 38): tp_forkrace (test/programs) under the tracer
# in each output mode: TRIALS trials of 6 threads doing their first I/O while
# the process forks at random moments (~5 forks a trial), each trial killed
# and counted as a hang if it has not ended within 10 s. Exits non-zero on
# any hang or failure. Modes: file, tcp (tcp:// into a real `iosonar
# collect`), agent (IOSONAR_OUTPUT=agent, a real node agent shipping to a file).
set -euo pipefail
B=${1:-build}; TRIALS=${2:-1000}; MODES=${3:-file tcp agent}; SEED=${4:-$RANDOM}
LIB=${IOSONAR_TRACE_LIB:-$B/libiosonar-trace.so}
T=$(mktemp -d /dev/shm/forkrace-bench.XXXXXX)
trap 'for p in ${CP:-} ${AP:-}; do kill $p 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
RING=$T/shm/iosonar-ring-$(id -u)
mkdir -p "$RING" "$T/work"; chmod 700 "$RING"
run() {  # mode: prints the program's summary line with the wall time
  local start end
  start=$(date +%s.%N)
  LD_PRELOAD=$LIB IOSONAR_RING_DIR=$RING IOSONAR_WINDOW_MS=1 IOSONAR_OUTPUT=$1 \
    "$B/test/tp_forkrace" "$T/work" "$TRIALS" 6 10000 "$SEED" > "$T/summary" || { cat "$T/summary"; echo "$2: FAILED (seed $SEED)" >&2; return 1; }
  end=$(date +%s.%N)
  printf '%-6s %s, %.1f s\n' "$2" "$(cat "$T/summary")" "$(echo "$end - $start" | bc)"
}
for m in $MODES; do
  case $m in
    file) run "$T/out.jsonl" file; rm -f "$T/out.jsonl" ;;
    tcp)
      PORT=$((20000 + RANDOM % 20000))
      "$B/iosonar" collect --store "$T/store" --listen "tcp://127.0.0.1:$PORT" 2>"$T/collect.log" & CP=$!
      for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
      run "tcp://127.0.0.1:$PORT" tcp
      kill $CP; wait $CP || true; CP= ;;
    agent)
      "$B/iosonar-exporter" agent --ring-root "$T/shm" --output "$T/agent.jsonl" --interval 0.1 2>"$T/agent.log" & AP=$!
      run agent agent
      for _ in $(seq 600); do [[ -z $(ls "$RING") ]] && break; sleep 0.1; done
      [[ -z $(ls "$RING") ]] || { echo "agent: rings left behind" >&2; exit 1; }
      kill $AP; wait $AP || true; AP= ;;
  esac
done
