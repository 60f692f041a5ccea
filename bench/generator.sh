#!/usr/bin/env bash
# Generator benchmark: how much CPU and memory headroom spends per request, side by
# side with wrk, oha, hey, h2load, vegeta, k6 and Locust, against one nginx on
# loopback: plain HTTP/1.1, HTTPS/1.1, h2c, HTTP/2 over TLS, a TLS handshake per
# request, and 1000 connections plain and over TLS; and HTTP/3 against one Caddy
# (kept connections and a QUIC handshake per request), with HTTP/2 over TLS against
# the same Caddy as its reference.
#
#   bash bench/generator.sh                         # 3 rounds of 10 s per tool and case
#   BENCH_SECONDS=2 BENCH_ROUNDS=1 bash bench/generator.sh
#   BENCH_CASES="tls h2c h2tls handshake tlsconns" bash bench/generator.sh
#   BENCH_CASES="h2caddy h3 h3new" bash bench/generator.sh   # HTTP/3 (needs caddy)
#   BENCH_INSTALL=1 bash bench/generator.sh         # first install missing peers
#   HEADROOM_BASELINE=/path/to/old/headroom BENCH_TOOLS="headroom baseline wrk" \
#       bash bench/generator.sh                     # a change against an older build
#
# `floor` (closed case only) is bench/floor: a tokio client that keeps 50 connections
# busy and measures nothing, so the closed loop's table shows how far below wrk any
# tokio client gets on this machine, and how much of headroom's cost is its measuring.
#
# nginx (one worker) runs on CPU 1, every generator on CPU 0; tools alternate within
# each round so drift hits them all alike. Each run is measured with /usr/bin/time
# (user + system CPU seconds, peak RSS) and divided by the requests it completed.
# A tool that is not installed is skipped with a message; so is headroom until its
# `run` command exists, and a case whose flags the headroom build lacks. The table at
# the end gives each tool's CPU per request against headroom's and against the case's
# reference peer, and checks headroom against issue 10's aims. See bench/README.md.
set -euo pipefail

BENCH_SECONDS=${BENCH_SECONDS:-10}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
BENCH_CASES=${BENCH_CASES:-"closed open conns tls h2c h2tls handshake tlsconns h2caddy h3 h3new"}
# k6 only when K6_BIN names a k6 binary: this project does not install, build or run
# k6 (its AGPL licence rules it out here).
BENCH_TOOLS=${BENCH_TOOLS:-"headroom wrk floor oha hey h2load vegeta${K6_BIN:+ k6} locust"}
BENCH_OUT=${BENCH_OUT:-$(mktemp -d -t headroom-bench-XXXXXX)}
mkdir -p "$BENCH_OUT/runs"
GEN_CPU=${GEN_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
OPEN_RATE=5000
CLOSED_CONNS=50
MANY_CONNS=1000
H2_CONNS=10
H2_STREAMS=10
HANDSHAKE_WORKERS=20
# nginx before 1.23.4 offers TLS 1.2 at most unless told; name the versions so every
# nginx offers the same and clients negotiate 1.3.
BENCH_TLS_PROTOCOLS=${BENCH_TLS_PROTOCOLS:-"TLSv1.2 TLSv1.3"}

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d -t headroom-bench-work-XXXXXX)
chmod 755 "$WORK"
NGINX_PID=""
CADDY_PID=""

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench/generator.sh: $*"
    exit 1
}

cleanup() {
    local pid
    for pid in "$NGINX_PID" "$CADDY_PID"; do
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in taskset /usr/bin/time timeout python3; do
    command -v "$tool" >/dev/null 2>&1 || die "needs $tool (apt-get install -y time util-linux python3)"
done
[ "$(nproc)" -ge 2 ] || say "warning: fewer than 2 CPUs; nginx and the generators will share one"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# ------------------------------------------------------------------------ finding tools
# Prints the path of a tool, looking on PATH and where the install commands put them.
find_tool() {
    local name=$1 dir
    if command -v "$name" >/dev/null 2>&1; then
        command -v "$name"
        return 0
    fi
    for dir in "$HOME/go/bin" "$HOME/.cargo/bin" /opt/locust-venv/bin; do
        if [ -x "$dir/$name" ]; then
            echo "$dir/$name"
            return 0
        fi
    done
    return 1
}

# The headroom binary, built with the dist profile if it is missing; empty if `run` lacks
# the flags this benchmark uses.
find_headroom() {
    local bin="${CARGO_TARGET_DIR:-$REPO/target}/dist/headroom"
    if [ ! -x "$bin" ] && command -v cargo >/dev/null 2>&1; then
        say "building headroom (cargo build --profile dist)..."
        (cd "$REPO" && cargo build --profile dist -q) >&2 || true
    fi
    [ -x "$bin" ] || return 1
    "$bin" run --help 2>/dev/null | grep -q -- '--users' || return 1
    echo "$bin"
}

# The closed loop's floor (bench/floor: a tokio client that measures nothing), built
# into its own target directory on first use; empty without cargo.
find_floor() {
    local dir="${CARGO_TARGET_DIR:-$REPO/target}/bench-floor"
    local bin="$dir/release/headroom-bench-floor"
    if [ ! -x "$bin" ] && command -v cargo >/dev/null 2>&1; then
        say "building the floor (bench/floor)..."
        cargo build --release -q --manifest-path "$REPO/bench/floor/Cargo.toml" \
            --target-dir "$dir" >&2 || true
    fi
    [ -x "$bin" ] || return 1
    echo "$bin"
}

source "$REPO/bench/tools.sh"
if [ "${BENCH_INSTALL:-0}" = 1 ]; then
    install_peers
fi

declare -A BIN
for tool in $BENCH_TOOLS; do
    case $tool in
    headroom) path=$(find_headroom) || path="" ;;
    baseline) path=${HEADROOM_BASELINE:-} && [ -x "$path" ] || path="" ;;
    floor) path=$(find_floor) || path="" ;;
    locust) path=$(find_tool locust) || path="" ;;
    k6) path=${K6_BIN:-} && [ -x "$path" ] || path="" ;;
    *) path=$(find_tool "$tool") || path="" ;;
    esac
    if [ -n "$path" ]; then
        BIN[$tool]=$path
        say "found $tool: $path"
    elif [ "$tool" = headroom ]; then
        say "skipping headroom: no dist binary with \`headroom run --users/--rate/--out\` yet"
    else
        say "skipping $tool: not installed (BENCH_INSTALL=1 installs nginx, wrk, h2load, oha and hey; see bench/README.md)"
    fi
done

# ------------------------------------------------------------------------------ nginx
# free_ports N: N distinct free ports of 127.0.0.1 (all bound at once while chosen).
free_ports() {
    python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))' "$1"
}

# make_cert DIR: a self-signed ECDSA P-256 certificate for localhost and 127.0.0.1 in
# DIR/cert.pem and DIR/key.pem (what BENCH-PEERS measured the peers against); fails
# without openssl.
make_cert() {
    command -v openssl >/dev/null 2>&1 || return 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$1/key.pem" -out "$1/cert.pem" >/dev/null 2>&1
}

# nginx_has_http2_directive NGINX: true from nginx 1.25.1 on, which has `http2 on;`
# and deprecates the `http2` parameter of `listen`.
nginx_has_http2_directive() {
    local version
    version=$("$1" -v 2>&1 | sed -n 's|.*nginx/\([0-9][0-9.]*\).*|\1|p')
    [ -n "$version" ] && [ "$(printf '%s\n1.25.1\n' "$version" | sort -V | head -n 1)" = 1.25.1 ]
}

# start_nginx: one worker on TARGET_CPU with three servers on free loopback ports:
# plain HTTP/1.1 (URL), HTTPS with HTTP/1.1 and h2 by ALPN (TLS_URL), and h2c with
# prior knowledge (H2C_URL). TLS_URL is empty without openssl.
start_nginx() {
    local nginx port tls_port h2c_port tls_server="" h2c_server
    nginx=$(find_tool nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; }) ||
        die "nginx is not installed (apt-get install -y nginx, or BENCH_INSTALL=1)"
    mkdir -p "$WORK/nginx"
    chmod 755 "$WORK/nginx"
    local have_tls=1
    make_cert "$WORK/nginx" || {
        have_tls=""
        say "no openssl: the TLS cases are skipped (apt-get install -y openssl)"
    }
    for _ in 1 2 3 4 5; do
        read -r port tls_port h2c_port < <(free_ports 3)
        # Full handshakes only: no session cache and no tickets, so a client cannot
        # resume (the `handshake` case measures a full handshake per request).
        local tls_common="ssl_certificate $WORK/nginx/cert.pem;
        ssl_certificate_key $WORK/nginx/key.pem;
        ssl_protocols $BENCH_TLS_PROTOCOLS;
        ssl_session_cache off;
        ssl_session_tickets off;
        location / { return 200 \"ok\\n\"; }"
        if nginx_has_http2_directive "$nginx"; then
            [ -z "$have_tls" ] || tls_server="server { listen 127.0.0.1:$tls_port ssl; http2 on; $tls_common }"
            # With `http2 on` a cleartext port answers HTTP/1.1 and h2c with prior knowledge.
            h2c_server="server { listen 127.0.0.1:$h2c_port; http2 on; location / { return 200 \"ok\\n\"; } }"
        else
            [ -z "$have_tls" ] || tls_server="server { listen 127.0.0.1:$tls_port ssl http2; $tls_common }"
            # Before 1.25.1 a cleartext `listen … http2` speaks h2c with prior knowledge only.
            h2c_server="server { listen 127.0.0.1:$h2c_port http2; location / { return 200 \"ok\\n\"; } }"
        fi
        cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    http2_max_concurrent_streams 256;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\n"; }
        location /json { default_type application/json; return 200 '{"id": 42, "data": [1,2,3]}'; }
    }
    $tls_server
    $h2c_server
}
EOF
        taskset -c "$TARGET_CPU" "$nginx" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" \
            -e "$WORK/nginx/error.log" </dev/null >/dev/null 2>&1 &
        NGINX_PID=$!
        for _ in $(seq 100); do
            if [ -s "$WORK/nginx/nginx.pid" ] &&
                (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                URL="http://127.0.0.1:$port/"
                PLAIN_URL=$URL
                H2C_URL="http://127.0.0.1:$h2c_port/"
                TLS_URL=${have_tls:+"https://127.0.0.1:$tls_port/"}
                # The worker inherits the master's CPU mask; pin it explicitly anyway.
                pgrep -P "$NGINX_PID" | xargs -r -n1 taskset -pc "$TARGET_CPU" >/dev/null
                say "nginx on $URL, h2c on $H2C_URL, TLS on ${TLS_URL:-(none)}" \
                    "(master pid $NGINX_PID, CPU $TARGET_CPU)"
                return 0
            fi
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=""
        grep -q "Address already in use" "$WORK/nginx/error.log" 2>/dev/null ||
            die "nginx did not start: $(cat "$WORK/nginx/error.log" 2>/dev/null)"
    done
    die "nginx found no free port in 5 attempts"
}

# start_caddy: Debian's Caddy (HTTP/3 on by default since 2.6) on TARGET_CPU with one
# Go thread, serving HTTP/1.1, h2 and h3 on one free port of 127.0.0.1 (TCP and UDP)
# with nginx's certificate; sets CADDY_URL, or leaves it empty when caddy or the
# certificate is missing. The URL names `localhost`: a client sends no SNI for an
# address, and Caddy 2.6 then looks the certificate up by its QUIC socket's wildcard
# address, finds none and fails the handshake.
start_caddy() {
    local caddy port
    CADDY_URL=""
    caddy=$(find_tool caddy) || {
        say "caddy is not installed: the HTTP/3 cases are skipped (apt-get install -y caddy)"
        return 0
    }
    [ -s "$WORK/nginx/cert.pem" ] || return 0
    mkdir -p "$WORK/caddy"
    read -r port < <(free_ports 1)
    cat >"$WORK/caddy/Caddyfile" <<EOF
{
    admin off
    auto_https off
    storage file_system $WORK/caddy/data
    servers {
        protocols h1 h2 h3
    }
}
https://localhost:$port {
    bind 127.0.0.1
    tls $WORK/nginx/cert.pem $WORK/nginx/key.pem
    respond "ok" 200
}
EOF
    HOME="$WORK/caddy" XDG_DATA_HOME="$WORK/caddy/xdg" XDG_CONFIG_HOME="$WORK/caddy/xdg" \
        GOMAXPROCS=1 taskset -c "$TARGET_CPU" "$caddy" run --adapter caddyfile \
        --config "$WORK/caddy/Caddyfile" </dev/null >"$WORK/caddy/log" 2>&1 &
    CADDY_PID=$!
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            CADDY_URL="https://localhost:$port/"
            say "caddy on $CADDY_URL over TCP and UDP (pid $CADDY_PID, CPU $TARGET_CPU)"
            return 0
        fi
        kill -0 "$CADDY_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "caddy did not start: $(tail -n 5 "$WORK/caddy/log")"
}

# case_url CASE: the target of a case (empty when it cannot run here).
case_url() {
    case $1 in
    closed | open | conns) echo "$PLAIN_URL" ;;
    h2c) echo "$H2C_URL" ;;
    tls | h2tls | handshake | tlsconns) echo "$TLS_URL" ;;
    h2caddy | h3 | h3new) echo "$CADDY_URL" ;;
    esac
}

# ------------------------------------------------------------------- running one tool
# measure PREFIX CMD...: runs CMD on the generator CPU under /usr/bin/time, stdin from
# $STDIN_FILE (default /dev/null), output to PREFIX.out/.err, "%U %S %M" to PREFIX.time.
measure() {
    local prefix=$1
    shift
    local limit=$((BENCH_SECONDS * 3 + 60))
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S %M" -o "$prefix.time" \
        timeout -k 5 "$limit" "$@" <"${STDIN_FILE:-/dev/null}" >"$prefix.out" 2>"$prefix.err"
}

# json_get FILE KEY[.KEY...]: prints one number from a JSON file (0 when the key is
# absent); a trailing `.*` sums the values of an object or the items of a list.
json_get() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
node = json.load(open(sys.argv[1]))
keys = sys.argv[2].split(".")
total = keys[-1] == "*"
for key in keys[:-1] if total else keys:
    node = node.get(key, {}) if isinstance(node, dict) else node[int(key)]
if total:
    print(int(sum(node.values() if isinstance(node, dict) else node)))
else:
    print(int(node) if node != {} else 0)
EOF
}

# ---------------------------------------------------------------------------- records
RUNS="$BENCH_OUT/runs.tsv"
printf 'case\ttool\tround\trequests\tdropped\tuser_s\tsys_s\trss_kib\n' >"$RUNS"

# record CASE TOOL ROUND PREFIX REQUESTS DROPPED
record() {
    local user sys rss
    read -r user sys rss <"$4.time" || true
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$5" "$6" "$user" "$sys" "$rss" >>"$RUNS"
}

run_case_tool() {
    local case=$1 tool=$2 round=$3
    local prefix="$BENCH_OUT/runs/$case-$tool-$round" counts status=0
    "run_$tool" "$case" "$prefix" || status=$?
    if [ "$status" -eq 3 ]; then return 0; fi # the tool has no such mode
    counts=$("count_$tool" "$prefix" 2>"$prefix.count.err") || counts=""
    # Accept only "REQUESTS DROPPED" with at least one request completed.
    if [ "$status" -ne 0 ] || ! [[ $counts =~ ^[1-9][0-9]*\ [0-9]+$ ]]; then
        say "  $tool: run failed (exit $status); last lines of its stderr:"
        tail -n 5 "$prefix.err" "$prefix.count.err" 2>/dev/null | sed 's/^/    /' >&2 || true
        return 0
    fi
    say "  $tool: $counts (requests dropped) in $(cat "$prefix.time")"
    # shellcheck disable=SC2086 # counts is "REQUESTS DROPPED": two arguments
    record "$case" "$tool" "$round" "$prefix" ${counts}
    rm -f "$prefix.bin"
}

for case in $BENCH_CASES; do
    case $case in
    closed | open | conns | tls | h2c | h2tls | handshake | tlsconns | h2caddy | h3 | h3new) ;;
    *) die "unknown case $case (known: closed open conns tls h2c h2tls handshake tlsconns h2caddy h3 h3new)" ;;
    esac
done
start_nginx
case " $BENCH_CASES " in
*" h2caddy "* | *" h3 "* | *" h3new "*) start_caddy ;;
esac
say "results: $BENCH_OUT (seconds=$BENCH_SECONDS rounds=$BENCH_ROUNDS)"
for round in $(seq "$BENCH_ROUNDS"); do
    for case in $BENCH_CASES; do
        URL=$(case_url "$case")
        if [ -z "$URL" ]; then
            say "round $round, case $case: skipped (no TLS certificate or no caddy)"
            continue
        fi
        say "round $round, case $case ($URL)"
        for tool in $BENCH_TOOLS; do
            [ -n "${BIN[$tool]:-}" ] || continue
            run_case_tool "$case" "$tool" "$round"
            sleep 1
        done
    done
done

python3 "$REPO/bench/table.py" "$RUNS" "$BENCH_SECONDS" | tee "$BENCH_OUT/table.md"
say "raw runs: $RUNS; each run's output, stderr and time: $BENCH_OUT/runs/"
