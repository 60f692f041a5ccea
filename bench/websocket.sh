#!/usr/bin/env bash
# WebSocket benchmark: generator CPU per message and peak RSS per open connection,
# headroom beside k6 (`k6/websockets`) and Artillery (its `ws` engine), at 1,000 and
# 10,000 open connections that each send one message per second to an echo server.
#
#   bash bench/websocket.sh                      # 1000 and 10000 connections, 30 s each
#   BENCH_CONNS="1000" BENCH_SECONDS=15 bash bench/websocket.sh
#   BENCH_TOOLS="headroom k6" bash bench/websocket.sh
#
# The echo server is the built-in target's `/ws/echo` (`headroom target`) on CPU 1;
# every generator runs on CPU 0, one at a time, measured with /usr/bin/time (user +
# system CPU seconds, peak RSS). CPU per message divides by the messages the tool
# says it sent (each is echoed back, so a message here is one send and one receive);
# RSS per connection divides the peak by the connections. Every tool holds all its
# connections for the same time and opens them over the same ramp. Peers: Artillery
# with `npm install --prefix /opt/artillery --ignore-scripts artillery@2` (the scripts
# only fetch a browser); k6 only when K6_BIN names a k6 binary you have (this project
# does not install, build or run k6: its AGPL licence rules it out here).
# A tool that is missing is skipped with a message. See bench/README.md.
set -euo pipefail

BENCH_SECONDS=${BENCH_SECONDS:-30}
BENCH_CONNS=${BENCH_CONNS:-"1000 10000"}
BENCH_TOOLS=${BENCH_TOOLS:-"headroom artillery${K6_BIN:+ k6}"}
RAMP=${RAMP:-5}
GEN_CPU=${GEN_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d -t headroom-wsbench-XXXXXX)
TARGET_PID=""

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench/websocket.sh: $*"
    exit 1
}
cleanup() {
    if [ -n "$TARGET_PID" ]; then
        kill -TERM "$TARGET_PID" 2>/dev/null || true
        wait "$TARGET_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in taskset /usr/bin/time python3; do
    command -v "$tool" >/dev/null 2>&1 || die "needs $tool"
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge 25000 ] || say "warning: ulimit -n is $(ulimit -n); 10000 connections need more"

HEADROOM="${CARGO_TARGET_DIR:-$REPO/target}/dist/headroom"
if [ ! -x "$HEADROOM" ]; then
    say "building headroom (cargo build --profile dist)..."
    (cd "$REPO" && cargo build --profile dist -q) >&2
fi
K6=${K6_BIN:-}
ARTILLERY=$(command -v artillery || echo /opt/artillery/node_modules/.bin/artillery)

have() {
    case $1 in
    headroom) [ -x "$HEADROOM" ] ;;
    k6) [ -x "$K6" ] ;;
    artillery) [ -x "$ARTILLERY" ] ;;
    *) return 1 ;;
    esac
}

# ------------------------------------------------------------------------ the echo server
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$TARGET_CPU" "$HEADROOM" target --listen "127.0.0.1:$PORT" >"$WORK/target.log" 2>&1 &
TARGET_PID=$!
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || die "the target did not start: $(cat "$WORK/target.log")"
URL="ws://127.0.0.1:$PORT/ws/echo"

# measure NAME CMD...: runs CMD on the generator's CPU under /usr/bin/time; leaves
# "cpu_seconds peak_kib" in $WORK/NAME.time.
measure() {
    local name=$1
    shift
    /usr/bin/time -f '%U %S %M' -o "$WORK/$name.rusage" \
        taskset -c "$GEN_CPU" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || {
        say "$name failed: $(tail -5 "$WORK/$name.err")"
        return 1
    }
    awk '{printf "%.3f %d\n", $1 + $2, $3}' "$WORK/$name.rusage" >"$WORK/$name.time"
}

# ---------------------------------------------------------------------------- the tools
# headroom: N closed-model users, each holding one WebSocket and sending one message
# a second (send, wait for its echo, think 1 s), on one engine thread.
run_headroom() {
    local n=$1 name=$2
    cat >"$WORK/ws.yaml" <<EOF
target: http://127.0.0.1:$PORT
load: {model: users, users: $n, duration: $((BENCH_SECONDS + RAMP))s, think: 1s}
flows:
  - name: echo
    steps:
      - ws: {name: echo, url: /ws/echo}
      - ws: {name: echo, send: "hello", expect: {regex: hello, timeout: 5s}}
EOF
    measure "$name" "$HEADROOM" run "$WORK/ws.yaml" --threads 1 --quiet \
        --out "$WORK/$name.json"
    python3 - "$WORK/$name.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(s["streams"]["echo"]["messages"]["sent"])
EOF
}

run_k6() {
    local n=$1 name=$2
    cat >"$WORK/ws.js" <<EOF
import { WebSocket } from 'k6/websockets';
import { setInterval, clearInterval, setTimeout } from 'k6/timers';
export const options = {
  scenarios: { ws: { executor: 'per-vu-iterations', vus: $n, iterations: 1,
                     maxDuration: '$((BENCH_SECONDS + RAMP + 30))s' } },
};
export default function () {
  const ws = new WebSocket('$URL');
  ws.onopen = () => {
    const tick = setInterval(() => ws.send('hello'), 1000);
    setTimeout(() => { clearInterval(tick); ws.close(); }, $(((BENCH_SECONDS + RAMP) * 1000)));
  };
  ws.onmessage = () => {};
}
export function handleSummary(data) { return { '$WORK/$name.k6.json': JSON.stringify(data) }; }
EOF
    measure "$name" "$K6" run --quiet --no-usage-report "$WORK/ws.js"
    python3 - "$WORK/$name.k6.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(int(s["metrics"]["ws_msgs_sent"]["values"]["count"]))
EOF
}

run_artillery() {
    local n=$1 name=$2
    cat >"$WORK/ws.yml" <<EOF
config:
  target: "$URL"
  phases:
    - {duration: $RAMP, arrivalCount: $n}
scenarios:
  - engine: ws
    flow:
      - loop:
          - send: "hello"
          - think: 1
        count: $((BENCH_SECONDS + RAMP))
EOF
    measure "$name" "$ARTILLERY" run --quiet --output "$WORK/$name.art.json" "$WORK/ws.yml"
    python3 - "$WORK/$name.art.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(int(s["aggregate"]["counters"].get("websocket.messages_sent", 0)))
EOF
}

# -------------------------------------------------------------------------------- rounds
printf '%-10s %7s %10s %10s %12s %12s %10s\n' tool conns messages cpu_s "cpu_us/msg" "rss_MiB" "KiB/conn" >"$WORK/table"
for n in $BENCH_CONNS; do
    for tool in $BENCH_TOOLS; do
        if ! have "$tool"; then
            say "skipping $tool: not installed"
            continue
        fi
        name="$tool-$n"
        say "== $tool, $n connections, ${BENCH_SECONDS}s"
        sent=$("run_$tool" "$n" "$name") || continue
        read -r cpu kib <"$WORK/$name.time"
        python3 - "$tool" "$n" "$sent" "$cpu" "$kib" >>"$WORK/table" <<'EOF'
import sys
tool, n, sent, cpu, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
per = cpu * 1e6 / sent if sent else float("nan")
print(f"{tool:<10} {n:>7} {sent:>10} {cpu:>10.2f} {per:>12.1f} {kib/1024:>12.1f} {kib/n:>10.1f}")
EOF
    done
done
cat "$WORK/table"
python3 - "$WORK/table" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
by = {(r[0], r[1]): r for r in rows}
for (tool, n), r in sorted(by.items()):
    if tool == "headroom":
        continue
    h = by.get(("headroom", n))
    if h:
        print(f"{n} connections: headroom CPU per message {float(h[4]) / float(r[4]):.2f}x {tool}'s; "
              f"RSS {float(h[5]) / float(r[5]):.2f}x")
for (tool, n), r in sorted(by.items()):
    if tool == "headroom":
        print(f"{n} connections: headroom {float(r[6]):.1f} KiB of peak RSS per open connection (aim <= 50)")
EOF
