#!/usr/bin/env bash
# How close does `headroom find` get to a known ceiling, and how fast?
#
# Against built-in targets of three known capacities (`headroom target` on free ports of
# 127.0.0.1), runs `headroom find` and reports the found ceiling's error against the
# capacity and the search's wall time. When K6_BIN names a k6 binary,
# runs k6's documented breakpoint pattern against the same targets for comparison:
# a `ramping-arrival-rate` from 0 to twice the capacity over $K6_RAMP, with thresholds
# that abort the test (`abortOnFail`); the breakpoint is the offered rate at the abort.
#
# Usage: bash bench/find-accuracy.sh            (k6 ramp 60s; steps 2s + 1s warm-up, 1s cooldown)
#        K6_RAMP=120s bash bench/find-accuracy.sh
#        STEP=1s WARMUP=500ms COOLDOWN=500ms NO_K6=1 bash bench/find-accuracy.sh
# Results: a table on stdout and in $BENCH_OUT/find-accuracy.md (default /tmp/headroom-bench).
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_OUT=${BENCH_OUT:-/tmp/headroom-bench}
K6_RAMP=${K6_RAMP:-60s}
STEP=${STEP:-2s}
WARMUP=${WARMUP:-1s}
COOLDOWN=${COOLDOWN:-1s}
P95_MS=${P95_MS:-50}
mkdir -p "$BENCH_OUT"

# workers service-time capacity
TARGETS=("2 10ms 200" "4 5ms 800" "10 5ms 2000")

cargo build --profile dist --quiet
HEADROOM=${CARGO_TARGET_DIR:-target}/dist/headroom

K6=""
# Only a k6 the user names (K6_BIN): this project does not install, build or run k6
# (its AGPL licence rules it out here).
if [[ -z ${NO_K6:-} && -n ${K6_BIN:-} && -x ${K6_BIN:-} ]]; then K6=$K6_BIN; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

TARGET_PID=""
stop_target() { [[ -n $TARGET_PID ]] && kill "$TARGET_PID" 2>/dev/null && wait "$TARGET_PID" 2>/dev/null; TARGET_PID=""; }
trap stop_target EXIT

start_target() { # workers service-time → sets PORT, TARGET_PID
    PORT=$(free_port)
    "$HEADROOM" target --listen "127.0.0.1:$PORT" --workers "$1" --service-time "$2" >"$BENCH_OUT/target.log" 2>&1 &
    TARGET_PID=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return 0
        sleep 0.05
    done
    echo "target did not start" >&2
    exit 1
}

now() { date +%s.%N; }
error_pct() { awk -v f="$1" -v c="$2" 'BEGIN { if (f == "" || f == "null" || f == "-") print "-"; else printf "%+.1f%%", (f - c) / c * 100 }'; }

cat >"$BENCH_OUT/breakpoint.js" <<'EOF'
// k6's breakpoint test (https://grafana.com/docs/k6/latest/testing-guides/test-types/breakpoint-testing/):
// ramp the arrival rate up until a threshold aborts the test.
import http from 'k6/http';
export const options = {
  scenarios: {
    breakpoint: {
      executor: 'ramping-arrival-rate',
      startRate: 0,
      timeUnit: '1s',
      preAllocatedVUs: 100,
      maxVUs: 2000,
      stages: [{ duration: __ENV.RAMP, target: Number(__ENV.PEAK) }],
    },
  },
  thresholds: {
    http_req_duration: [{ threshold: `p(95)<${__ENV.P95}`, abortOnFail: true }],
    http_req_failed: [{ threshold: 'rate<0.01', abortOnFail: true }],
  },
};
export default function () { http.get(__ENV.URL); }
export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify({ ms: data.state.testRunDurationMs }) };
}
EOF

ramp_s=$(awk -v r="$K6_RAMP" 'BEGIN { n = r + 0; if (r ~ /m$/) n *= 60; print n }')
rows=()
total_h=0
total_k=0
for spec in "${TARGETS[@]}"; do
    read -r workers service capacity <<<"$spec"

    start_target "$workers" "$service"
    t0=$(now)
    "$HEADROOM" find --url "http://127.0.0.1:$PORT/work" --from 50 \
        --step-duration "$STEP" --warmup "$WARMUP" --cooldown "$COOLDOWN" \
        --threshold "p95 < ${P95_MS}ms" --threshold "errors < 1%" \
        --max-in-flight 512 --connections 64 \
        --quiet --out "$BENCH_OUT/find-$capacity.json" >"$BENCH_OUT/find-$capacity.txt" 2>&1 || true
    h_time=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    h_found=$(jq -r '.ceiling' "$BENCH_OUT/find-$capacity.json")
    h_steps=$(jq -r '.steps | length' "$BENCH_OUT/find-$capacity.json")
    stop_target
    total_h=$(awk -v a="$total_h" -v b="$h_time" 'BEGIN { print a + b }')

    k_found="-" k_time="-"
    if [[ -n $K6 ]]; then
        start_target "$workers" "$service"
        peak=$((capacity * 2))
        t0=$(now)
        "$K6" run --quiet --no-color -e URL="http://127.0.0.1:$PORT/work" -e PEAK="$peak" \
            -e RAMP="$K6_RAMP" -e P95="$P95_MS" -e OUT="$BENCH_OUT/k6-$capacity.json" \
            "$BENCH_OUT/breakpoint.js" >"$BENCH_OUT/k6-$capacity.txt" 2>&1 || true
        k_time=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
        k_found=$(jq -r --argjson peak "$peak" --argjson ramp "$ramp_s" \
            '(.ms / 1000 / $ramp * $peak) | floor' "$BENCH_OUT/k6-$capacity.json")
        stop_target
        total_k=$(awk -v a="$total_k" -v b="$k_time" 'BEGIN { print a + b }')
    fi
    rows+=("| $capacity | $h_found | $(error_pct "$h_found" "$capacity") | ${h_time}s ($h_steps steps) | $k_found | $(error_pct "$k_found" "$capacity") | ${k_time}s |")
done

{
    echo "Thresholds: p95 < ${P95_MS}ms, errors < 1%. headroom: --from 50, steps $STEP + $WARMUP warm-up, $COOLDOWN cooldown, precision 5%."
    if [[ -n $K6 ]]; then
        echo "k6 ($("$K6" version | head -1)): ramping-arrival-rate 0 → 2× capacity over $K6_RAMP, abortOnFail thresholds."
    else
        echo "k6 skipped (NO_K6 set, or not found in ~/go/bin/k6 or PATH)."
    fi
    echo
    echo "| capacity req/s | headroom ceiling | error | headroom time | k6 breakpoint | error | k6 time |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo "| total | | | ${total_h}s | | | ${total_k}s |"
} | tee "$BENCH_OUT/find-accuracy.md"
