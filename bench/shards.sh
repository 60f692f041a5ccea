#!/usr/bin/env bash
# Sharded runs (issue 13): N local shards, each in its own network namespace, against
# one nginx on a bridge, at one fixed total rate, for N = 1, 2, 4, 8:
#   - the coordinator's CPU per shard-second (its own process, from the summary's
#     `coordinator.cpu_percent_per_shard`; the shards are processes of their own);
#   - the start skew as nginx saw it: each shard's first request, from its access log
#     ($msec, millisecond resolution), less the arrival's own offset in the schedule;
#   - the merged p50/p95/p99 against a single-process run of the same plan;
# and, as the peer, k6 split the way k6-operator splits it: N `k6 run --paused
# --execution-segment i/N:(i+1)/N` instances in namespaces of their own, resumed one
# REST call after another (k6-operator's starter), their start skew from the same log.
#
#   sudo bash bench/shards.sh                         # 3 rounds × 10 s per N
#   SHARDS_SECONDS=3 SHARDS_ROUNDS=1 sudo bash bench/shards.sh
#
# Needs root (namespaces), nginx, iproute2, python3; k6 only when K6_BIN names a k6
# binary (this project does not install, build or run k6: its AGPL licence rules it
# out here), else its column says so.
set -euo pipefail

SECONDS_EACH=${SHARDS_SECONDS:-10}
ROUNDS=${SHARDS_ROUNDS:-3}
RATE=${SHARDS_RATE:-1000}
NS_LIST=${SHARDS_N:-"1 2 4 8"}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d -t headroom-shards-XXXXXX)
chmod 755 "$WORK"
PIDS=()
NETNS=()
BRIDGE=""

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench/shards.sh: $*"
    exit 1
}

cleanup() {
    local pid ns
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    for ns in "${NETNS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    [ -n "$BRIDGE" ] && ip link del "$BRIDGE" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || die "needs root for network namespaces"
for tool in ip python3 curl; do command -v "$tool" >/dev/null || die "needs $tool"; done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx is not installed (apt-get install -y nginx)"
K6=${K6_BIN:-}

BIN="${CARGO_TARGET_DIR:-$REPO/target}/dist/headroom"
if [ ! -x "$BIN" ]; then
    say "building headroom (cargo build --profile dist)..."
    (cd "$REPO" && cargo build --profile dist -q) >&2
fi
"$BIN" run --help | grep -q -- '--shard-netns' || die "$BIN has no --shard-netns; rebuild it"

# ---------------------------------------------------------------- bridge and nginx
for x in $(seq 240 254); do
    if ip link add "hrb$x" type bridge 2>/dev/null; then
        BRIDGE="hrb$x"
        SUBNET="10.200.$x"
        break
    fi
done
[ -n "$BRIDGE" ] || die "no free bridge name hrb240..hrb254"
ip addr add "$SUBNET.1/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/nginx"
cat >"$WORK/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 8192; }
http {
    log_format at '\$remote_addr \$msec';
    access_log $WORK/nginx/access.log at buffer=256k flush=1s;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server { listen $SUBNET.1:$PORT; location / { return 200 "ok\n"; } }
}
CONF
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/$SUBNET.1/$PORT") 2>/dev/null && break; sleep 0.1; done
URL="http://$SUBNET.1:$PORT/"
LOG="$WORK/nginx/access.log"
say "nginx on $URL; headroom $("$BIN" --version)${K6:+; $("$K6" version | head -n1)}"

# log_lines: lines in the access log now (nginx flushes its buffer every second).
log_lines() { sleep 1.2; wc -l <"$LOG" 2>/dev/null || echo 0; }

# ------------------------------------------------------------------------- k6 peer
# netns_up NAME ADDR: a namespace with ADDR on the bridge (as src/shard/netns.rs does).
netns_up() {
    ip netns add "$1"
    NETNS+=("$1")
    ip link add "${1}o" type veth peer name "${1}i"
    ip link set "${1}i" netns "$1"
    ip link set "${1}o" master "$BRIDGE" up
    ip -n "$1" addr add "$2/24" dev "${1}i"
    ip -n "$1" link set "${1}i" up
    ip -n "$1" link set lo up
    ip -n "$1" route add default via "$SUBNET.1"
}

cat >"$WORK/k6.js" <<'JS'
import http from 'k6/http';
export const options = {
  discardResponseBodies: true,
  scenarios: { load: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE),
    timeUnit: '1s', duration: __ENV.DURATION, preAllocatedVUs: 50, maxVUs: 500 } },
};
export default function () { http.get(__ENV.URL); }
JS

# k6_round N: N paused k6 instances, then resumed one after another the way
# k6-operator's starter does (one REST call each); prints their first-request skew.
k6_round() {
    local n=$1 i seq="0" addr pids=() before
    for i in $(seq 1 "$n"); do seq="$seq,$i/$n"; done
    before=$(log_lines)
    for i in $(seq 0 $((n - 1))); do
        addr="$SUBNET.$((150 + i))"
        ip netns exec "hrk$i" env RATE="$RATE" DURATION="${SECONDS_EACH}s" URL="$URL" \
            "$K6" run --quiet --no-summary --paused --address "$addr:6565" \
            --execution-segment "$i/$n:$((i + 1))/$n" --execution-segment-sequence "$seq" \
            "$WORK/k6.js" >"$WORK/k6-$i.log" 2>&1 &
        pids+=($!)
    done
    for i in $(seq 0 $((n - 1))); do
        for _ in $(seq 200); do
            curl -s -o /dev/null "http://$SUBNET.$((150 + i)):6565/v1/status" && break
            sleep 0.1
        done
    done
    for i in $(seq 0 $((n - 1))); do
        curl -s -o /dev/null -X PATCH -H 'Content-Type: application/json' \
            -d '{"data":{"type":"status","id":"default","attributes":{"paused":false}}}' \
            "http://$SUBNET.$((150 + i)):6565/v1/status"
    done
    for pid in "${pids[@]}"; do wait "$pid" || true; done
    log_lines >/dev/null
    python3 - "$LOG" "$before" "$SUBNET" 150 "$n" 0 <<'PY'
import sys
log, skip, subnet, base, n, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
first = {}
for line in open(log).read().splitlines()[skip:]:
    addr, ms = line.split()
    first.setdefault(addr, float(ms) * 1000)
t = [first.get(f"{subnet}.{base + i}") for i in range(n)]
if None in t:
    print("nan"); sys.exit()
t = [x - (i / rate * 1000 if rate else 0) for i, x in enumerate(t)]
print(f"{max(t) - min(t):.1f}")
PY
}

# --------------------------------------------------------------------- headroom runs
# hr_round N: a run on N shards; prints "skew coordinator%/shard p50 p95 p99".
hr_round() {
    local n=$1 before out="$WORK/hr-$1.json"
    before=$(log_lines)
    "$BIN" run --url "$URL" --rate "$RATE" --duration "${SECONDS_EACH}s" --shards "$n" \
        --shard-netns "$BRIDGE" --quiet --store "$WORK/store.db" --out "$out" >/dev/null
    log_lines >/dev/null
    local skew
    skew=$(python3 - "$LOG" "$before" "$SUBNET" 100 "$n" "$RATE" <<'PY'
import sys
log, skip, subnet, base, n, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
first = {}
for line in open(log).read().splitlines()[skip:]:
    addr, ms = line.split()
    first.setdefault(addr, float(ms) * 1000)
# Shard i's first arrival is arrival i of the one schedule, due i / rate after the start.
t = [first[f"{subnet}.{base + i}"] - i / rate * 1000 for i in range(n)]
print(f"{max(t) - min(t):.1f}")
PY
)
    python3 - "$out" "$skew" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
l = s["latency_ms"]
bound = sum(1 for x in s["shards"] if x["generator"]["bound"])
print(sys.argv[2], s["coordinator"]["cpu_percent_per_shard"], l["p50"], l["p95"], l["p99"], bound)
PY
}

# single_round: the same plan in one process, in a namespace of its own too (so that
# both cross the same veth and bridge to nginx).
single_round() {
    local out="$WORK/single.json"
    ip netns exec hrs "$BIN" run --url "$URL" --rate "$RATE" --duration "${SECONDS_EACH}s" --quiet \
        --store "$WORK/store.db" --out "$out" >/dev/null
    python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["latency_ms"]; print(l["p50"], l["p95"], l["p99"])' "$out"
}

# The namespaces are made here, in this shell (the rounds run in subshells, whose
# NETNS entries the cleanup would never see): one for the single process, one per k6.
# A leftover from an interrupted run is replaced, not reused.
NS_MAX=$(printf '%s\n' $NS_LIST | sort -n | tail -n1)
for ns in hrs $(seq -f 'hrk%g' 0 $((NS_MAX - 1))); do
    ip netns del "$ns" 2>/dev/null || true
done
netns_up hrs "$SUBNET.200"
if [ -n "$K6" ]; then
    for i in $(seq 0 $((NS_MAX - 1))); do netns_up "hrk$i" "$SUBNET.$((150 + i))"; done
fi

RUNS="$WORK/runs.tsv"
: >"$RUNS"
for round in $(seq 1 "$ROUNDS"); do
    say "round $round of $ROUNDS"
    printf 'single\t%s\t%s\n' "$round" "$(single_round)" >>"$RUNS"
    for n in $NS_LIST; do
        printf 'headroom\t%s\t%s\n' "$n" "$(hr_round "$n")" >>"$RUNS"
        if [ -n "$K6" ]; then
            printf 'k6\t%s\t%s\n' "$n" "$(k6_round "$n")" >>"$RUNS"
        fi
    done
done

python3 - "$RUNS" "$RATE" "$SECONDS_EACH" "${K6:+k6}" <<'PY'
import statistics as st, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
rate, secs, have_k6 = sys.argv[2], sys.argv[3], sys.argv[4] == "k6"
single = [list(map(float, r[2].split())) for r in rows if r[0] == "single"]
ref = [st.median(c) for c in zip(*single)]
print(f"## Sharded runs: {rate} req/s for {secs} s against nginx, medians over {len(single)} rounds\n")
print("| shards | coordinator CPU per shard (% of a core) | start skew headroom | start skew k6 (paused, resumed one by one) | k6 ÷ headroom | merged p50 / p95 / p99 ÷ single process | shards generator-bound |")
print("|---|---|---|---|---|---|---|")
for n in sorted({int(r[1]) for r in rows if r[0] == "headroom"}):
    hr = [list(map(float, r[2].split())) for r in rows if r[0] == "headroom" and int(r[1]) == n]
    skew, cpu, p50, p95, p99, bound = (st.median(c) for c in zip(*hr))
    k6 = [float(r[2]) for r in rows if r[0] == "k6" and int(r[1]) == n and r[2] != "nan"]
    k6s = f"{st.median(k6):.1f} ms" if k6 else ("not run" if not have_k6 else "no data")
    ratio = f"{st.median(k6) / max(skew, 1.0):.1f}" if k6 else "-"
    lat = " / ".join(f"{v / r:.2f}" for v, r in zip((p50, p95, p99), ref))
    print(f"| {n} | {cpu:.2f} % | {skew:.1f} ms | {k6s} | {ratio} | {lat} | {bound:.0f} of {n} |")
print("\nSkew is read from nginx's $msec (1 ms resolution); the k6 ÷ headroom ratio divides by")
print("at least 1 ms. Aims (issue 13): coordinator under 1 % of one core per shard, skew under 2 ms.")
PY
