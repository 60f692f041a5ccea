#!/usr/bin/env bash
# What watching costs the generator: headroom's CPU per request against one nginx on
# loopback, with no --watch and with four watches sampled every second (the nginx
# worker's process, our own cgroup, Prometheus on a built-in target's /metrics, and a
# throwaway PostgreSQL when its server binaries are installed).
#
#   bash bench/watch-cost.sh                          # 5 rounds × 10 s per case
#   WATCH_SECONDS=3 WATCH_ROUNDS=1 bash bench/watch-cost.sh
#
# The generator runs on CPU 0, nginx, the target and PostgreSQL on CPU 1. Each run is
# measured with /usr/bin/time (user + system seconds) and divided by the requests in
# its summary JSON; the two cases alternate within a round and the medians are compared.
# On a busy machine that comparison drifts by more than the watches cost, so the script
# also prints the watches' own CPU, which the summary records exactly
# (`watches[0].watch_cpu_s`). The generator's self-watch is on in both cases (it always is).
set -euo pipefail

WATCH_SECONDS=${WATCH_SECONDS:-10}
WATCH_ROUNDS=${WATCH_ROUNDS:-5}
WATCH_RATE=${WATCH_RATE:-5000}
GEN_CPU=${GEN_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d -t headroom-watch-cost-XXXXXX)
chmod 755 "$WORK"
PIDS=()
PG_BIN=""
PG_AS=()

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench/watch-cost.sh: $*"
    exit 1
}

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "$PG_BIN" ]; then
        "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in taskset /usr/bin/time python3; do
    command -v "$tool" >/dev/null 2>&1 || die "needs $tool (apt-get install -y time util-linux python3)"
done

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT: waits up to 10 s for something to accept on 127.0.0.1:PORT.
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

BIN="${CARGO_TARGET_DIR:-$REPO/target}/dist/headroom"
if [ ! -x "$BIN" ]; then
    say "building headroom (cargo build --profile dist)..."
    (cd "$REPO" && cargo build --profile dist -q) >&2
fi
"$BIN" run --help | grep -q -- '--watch' || die "$BIN has no --watch; rebuild it"

# ------------------------------------------------------------------------------ nginx
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx is not installed (apt-get install -y nginx)"
mkdir -p "$WORK/nginx"
NGINX_PORT=$(free_port)
cat >"$WORK/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server { listen 127.0.0.1:$NGINX_PORT; location / { return 200 "ok\n"; } }
}
CONF
taskset -c "$TARGET_CPU" "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" \
    -e "$WORK/nginx/error.log" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$NGINX_PORT" || die "nginx did not start: $(cat "$WORK/nginx/error.log")"
NGINX_WORKER=$(pgrep -P "${PIDS[0]}" | head -n1)
URL="http://127.0.0.1:$NGINX_PORT/"
say "nginx on $URL (worker pid $NGINX_WORKER)"

# -------------------------------------------------------------------- built-in target
TARGET_PORT=$(free_port)
taskset -c "$TARGET_CPU" "$BIN" target --listen "127.0.0.1:$TARGET_PORT" >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$TARGET_PORT" || die "the built-in target did not start"

# ------------------------------------------------------------------------- PostgreSQL
PG_URL=""
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ]; then
    mkdir -p "$WORK/pg"
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres:postgres "$WORK/pg"
        PG_AS=(runuser -u postgres --)
    fi
    PG_PORT=$(free_port)
    "${PG_AS[@]}" "$PG_BIN/initdb" -A trust -U postgres -D "$WORK/pg/data" >/dev/null
    "${PG_AS[@]}" taskset -c "$TARGET_CPU" "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w \
        -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $WORK/pg -c fsync=off -c shared_preload_libraries=pg_stat_statements" \
        start >/dev/null || die "PostgreSQL did not start: $(cat "$WORK/pg/log")"
    PG_URL="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
    "$PG_BIN/psql" -q "$PG_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null 2>&1 ||
        say "(no pg_stat_statements: the postgres watch runs without top queries)"
else
    PG_BIN=""
    say "no PostgreSQL server binaries: three watches instead of four"
fi

SELF_CGROUP=$(sed -n 's/^0:://p' /proc/self/cgroup)
WATCHES=(--watch "pid:$NGINX_WORKER" --watch "cgroup:${SELF_CGROUP:-/}"
    --watch "prometheus:http://127.0.0.1:$TARGET_PORT/metrics")
[ -n "$PG_URL" ] && WATCHES+=(--watch "postgres:$PG_URL")

# ------------------------------------------------------------------------------- runs
RUNS="$WORK/runs.tsv"
: >"$RUNS"
# one CASE ROUND ARGS...: one run on the generator CPU; appends "CASE µs-per-request".
one() {
    local case=$1 round=$2 prefix="$WORK/$1-$2"
    shift 2
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S" -o "$prefix.time" \
        "$BIN" run --url "$URL" --rate "$WATCH_RATE" --duration "${WATCH_SECONDS}s" \
        --threads 1 --quiet --out "$prefix.json" "$@" >"$prefix.out" 2>"$prefix.err" ||
        die "$case run failed: $(cat "$prefix.err")"
    python3 - "$case" "$prefix" >>"$RUNS" <<'PY'
import json, sys
case, prefix = sys.argv[1], sys.argv[2]
user, sys_s = map(float, open(prefix + ".time").read().split()[-2:])
s = json.load(open(prefix + ".json"))
watch_cpu = s["watches"][0].get("watch_cpu_s", 0.0) if s.get("watches") else 0.0
print(f"{case}\t{(user + sys_s) * 1e6 / s['requests']:.3f}\t{watch_cpu * 1e6 / s['requests']:.4f}")
PY
}

for round in $(seq "$WATCH_ROUNDS"); do
    say "round $round of $WATCH_ROUNDS"
    one plain "$round"
    one watched "$round" "${WATCHES[@]}"
done

python3 - "$RUNS" "${#WATCHES[@]}" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
plain = [float(r[1]) for r in rows if r[0] == "plain"]
watched = [float(r[1]) for r in rows if r[0] == "watched"]
watches = int(sys.argv[2]) // 2
# Rounds pair runs made next to each other; the median of the paired ratios is less
# sensitive to drift on a shared machine than the ratio of the medians.
paired = [w / p - 1 for p, w in zip(plain, watched)]
print("round  no --watch  watched   diff")
for i, (p, w, d) in enumerate(zip(plain, watched, paired), 1):
    print(f"{i:5}  {p:8.2f}µs  {w:6.2f}µs  {100 * d:+5.1f}%")
print(f"CPU per request, median of {len(plain)} rounds:")
print(f"  no --watch       {statistics.median(plain):.2f} µs")
print(f"  {watches} watches at 1s  {statistics.median(watched):.2f} µs")
print(f"  difference       {100 * statistics.median(paired):+.2f}% (median of the paired rounds)")
# The watches' own CPU (opening, sampling thread, closing), which the generator
# measures exactly with the thread CPU clock: free of the drift in the figures above.
own = statistics.median(float(r[2]) for r in rows if r[0] == "watched")
print(f"  watches' own CPU {own:.3f} µs per request = {100 * own / statistics.median(plain):.2f}% of the unwatched cost")
PY
