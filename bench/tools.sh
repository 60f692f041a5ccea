# shellcheck shell=bash
# How bench/generator.sh drives each tool. Sourced, not run.
#
# Cases (bench/README.md says what each measures):
#   closed     plain HTTP/1.1, CLOSED_CONNS connections, as fast as possible
#   open       plain HTTP/1.1, OPEN_RATE requests/s
#   conns      plain HTTP/1.1, MANY_CONNS connections, as fast as possible
#   tls        HTTPS/1.1 keep-alive, CLOSED_CONNS connections, as fast as possible
#   h2c        HTTP/2 cleartext (prior knowledge), H2_CONNS connections × H2_STREAMS streams
#   h2tls      HTTP/2 over TLS (ALPN), H2_CONNS connections × H2_STREAMS streams
#   handshake  HTTPS/1.1 with a new connection and full TLS handshake per request,
#              HANDSHAKE_WORKERS workers
#   tlsconns   HTTPS/1.1 keep-alive, MANY_CONNS connections (for peak RSS)
#   h2caddy    HTTP/2 over TLS against Caddy, as h2tls: the h3 cases' own reference
#   h3         HTTP/3 against Caddy, H2_CONNS connections × H2_STREAMS streams
#   h3new      HTTP/3 against Caddy, a new connection and full QUIC handshake per
#              request, HANDSHAKE_WORKERS workers
# The caller sets URL to the case's target (http://, https:// or the h2c port).
#
# For every tool T:
#   run_T CASE PREFIX   runs T for CASE via `measure`; returns 3 when T has no such
#                       mode (silently) or cannot run it (after saying why).
#   count_T PREFIX      prints "REQUESTS DROPPED" read from T's own output.
# Uses from the caller: BIN, URL, WORK, BENCH_SECONDS, OPEN_RATE, CLOSED_CONNS,
# MANY_CONNS, H2_CONNS, H2_STREAMS, HANDSHAKE_WORKERS, measure, json_get, say, find_tool.

D="${BENCH_SECONDS}s"

# ---------------------------------------------------------------------------- headroom
# headroom_lacks BIN ARG...: prints the first flag among ARGs that `BIN run --help`
# does not list; fails when it lists them all.
headroom_lacks() {
    local bin=$1 arg help
    shift
    help=$("$bin" run --help 2>/dev/null) || help=""
    for arg; do
        [[ $arg == --* ]] || continue
        grep -qE -- "(^|[[:space:]])$arg([[:space:]=<,]|\$)" <<<"$help" || {
            echo "$arg"
            return 0
        }
    done
    return 1
}

# headroom_with BIN CASE PREFIX: one headroom binary's run. A case whose flags this
# build lacks or rejects (HTTP/2 and the connection models are newer than the plain
# cases) is skipped with a message, so the script runs on older and newer builds alike.
headroom_with() {
    local bin=$1 case=$2 prefix=$3 load missing status=0
    case $case in
    closed) load=(--users "$CLOSED_CONNS") ;;
    open) load=(--rate "$OPEN_RATE") ;;
    conns) load=(--users "$MANY_CONNS") ;;
    # The closed model's default connection model (each user owns its connection, kept
    # alive), as wrk -c50, oha -c 50 and hey -c 50 do.
    tls) load=(--users "$CLOSED_CONNS" --insecure) ;;
    # h2load -c10 -m10 and oha -c 10 -p 10 keep 100 requests in flight on 10
    # connections, each stream sending its next request as soon as the last one ends:
    # a closed loop of 100. The same here: 100 users without think time sharing one
    # pool of 10 HTTP/2 connections with 10 streams each. (Per-user connections would
    # give each user a connection with one stream busy: no multiplexing to compare.)
    h2c | h2tls | h2caddy)
        load=(--http2 --users "$((H2_CONNS * H2_STREAMS))" --connection shared
            --connections "$H2_CONNS" --streams "$H2_STREAMS")
        [ "$case" = h2c ] || load+=(--insecure)
        ;;
    # The same closed loop of 100 over QUIC: 10 connections with 10 streams each.
    h3) load=(--http3 --users "$((H2_CONNS * H2_STREAMS))" --connection shared
        --connections "$H2_CONNS" --streams "$H2_STREAMS" --insecure) ;;
    # A full QUIC handshake per request: without --h3-resume nothing is resumed.
    h3new) load=(--http3 --users "$HANDSHAKE_WORKERS" --connection per-request --insecure) ;;
    # 20 users, each request on a new connection with a full handshake (nginx keeps no
    # session cache and issues no tickets, so nothing can be resumed), as oha
    # --disable-keepalive -c 20 and hey -disable-keepalive -c 20.
    handshake) load=(--users "$HANDSHAKE_WORKERS" --connection per-request --insecure) ;;
    tlsconns) load=(--users "$MANY_CONNS" --insecure) ;;
    *) return 3 ;;
    esac
    if missing=$(headroom_lacks "$bin" "${load[@]}"); then
        say "  skipping $case for $bin: its \`run\` has no $missing yet"
        return 3
    fi
    measure "$prefix" "$bin" run --url "$URL" "${load[@]}" --duration "$D" \
        --threads 1 --quiet --out "$prefix.json" || status=$?
    # clap's usage errors (an unknown value such as `--connection per-request` on a
    # build that has the flag but not that model) end with this line and exit 2.
    if [ "$status" -eq 2 ] && grep -q "For more information, try" "$prefix.err"; then
        say "  skipping $case for $bin: it rejects the flags: $(head -n 1 "$prefix.err")"
        return 3
    fi
    return "$status"
}
run_headroom() { headroom_with "${BIN[headroom]}" "$@"; }
count_headroom() { echo "$(json_get "$1.json" requests) $(json_get "$1.json" dropped)"; }
# `baseline`: another headroom build ($HEADROOM_BASELINE), to measure a change.
run_baseline() { headroom_with "${BIN[baseline]}" "$@"; }
count_baseline() { count_headroom "$@"; }

# ------------------------------------------------------------------------------- floor
# bench/floor: keep-alive HTTP/1.1 on CLOSED_CONNS connections, nothing measured.
run_floor() {
    case $1 in
    closed) measure "$2" "${BIN[floor]}" "$URL" "$CLOSED_CONNS" "$BENCH_SECONDS" ;;
    *) return 3 ;; # the floor of the plain closed loop only
    esac
}
count_floor() { awk 'NR == 1 && /^[0-9]+$/ { print $1, 0; found=1 } END { exit !found }' "$1.out"; }

# --------------------------------------------------------------------------------- wrk
# wrk speaks HTTP/1.1 only; over TLS it verifies no certificate.
run_wrk() {
    case $1 in
    closed | tls) measure "$2" "${BIN[wrk]}" -t1 -c"$CLOSED_CONNS" -d"$D" "$URL" ;;
    conns | tlsconns) measure "$2" "${BIN[wrk]}" -t1 -c"$MANY_CONNS" -d"$D" "$URL" ;;
    *) return 3 ;; # no fixed-rate mode (that is wrk2), no HTTP/2, no per-request connections
    esac
}
count_wrk() { awk '/requests in/ { print $1, 0; found=1 } END { exit !found }' "$1.out"; }

# --------------------------------------------------------------------------------- oha
oha_format() {
    if "${BIN[oha]}" --help | grep -q -- '--output-format'; then
        echo --output-format json
    else
        echo --json
    fi
}
run_oha() {
    local load
    case $1 in
    closed) load=(-c "$CLOSED_CONNS") ;;
    open) load=(-q "$OPEN_RATE" -c 200) ;;
    conns) load=(-c "$MANY_CONNS") ;;
    tls) load=(-c "$CLOSED_CONNS" --insecure) ;;
    # -p is streams per connection: c × p requests in flight. On http:// oha --http2
    # speaks h2c with prior knowledge.
    h2c) load=(--http2 -c "$H2_CONNS" -p "$H2_STREAMS") ;;
    h2tls | h2caddy) load=(--http2 -c "$H2_CONNS" -p "$H2_STREAMS" --insecure) ;;
    handshake) load=(--disable-keepalive -c "$HANDSHAKE_WORKERS" --insecure) ;;
    # HTTP/3 needs oha built with `--features http3`; a build without it fails the run.
    # oha 1.16 ends an HTTP/3 run only when the server closes its idle connections
    # (Caddy: 30 s after the last request): the wait costs no CPU, so CPU per request
    # stands, and `measure` allows it.
    h3) load=(--http-version 3 -c "$H2_CONNS" -p "$H2_STREAMS" --insecure) ;;
    # No such mode: oha's --disable-keepalive applies to HTTP/1.1 only, and over HTTP/3
    # it keeps its connections (measured: 165,350 requests in 3 s on 20 of them).
    h3new) return 3 ;;
    tlsconns) load=(-c "$MANY_CONNS" --insecure) ;;
    *) return 3 ;;
    esac
    # shellcheck disable=SC2046 # the format flags are two words on purpose
    measure "$2" "${BIN[oha]}" -z "$D" "${load[@]}" --no-tui $(oha_format) "$URL"
}
count_oha() { echo "$(json_get "$1.out" 'statusCodeDistribution.*') 0"; }

# --------------------------------------------------------------------------------- hey
# hey verifies no certificate; it has HTTP/2 only by ALPN (-h2), not used here.
run_hey() {
    case $1 in
    closed | tls) measure "$2" "${BIN[hey]}" -z "$D" -c "$CLOSED_CONNS" "$URL" ;;
    # hey paces each worker on its own (-q is per worker): 50 workers × 100/s.
    open) measure "$2" "${BIN[hey]}" -z "$D" -c 50 -q $((OPEN_RATE / 50)) "$URL" ;;
    conns | tlsconns) measure "$2" "${BIN[hey]}" -z "$D" -c "$MANY_CONNS" "$URL" ;;
    handshake) measure "$2" "${BIN[hey]}" -z "$D" -c "$HANDSHAKE_WORKERS" -disable-keepalive "$URL" ;;
    *) return 3 ;;
    esac
}
count_hey() {
    awk '/^[[:space:]]*\[[0-9]+\][[:space:]]+[0-9]+ responses/ { n += $2; found=1 }
         END { if (!found) exit 1; print n, 0 }' "$1.out"
}

# ------------------------------------------------------------------------------ h2load
# nghttp2's load generator: HTTP/2 only here (h2c by prior knowledge on http://, h2 by
# ALPN on https://), one thread, -c connections × -m streams, for -D seconds. It times
# each request from when its stream is opened, so no queueing delay is in its latency.
run_h2load() {
    case $1 in
    h2c | h2tls | h2caddy) measure "$2" "${BIN[h2load]}" -t1 -c"$H2_CONNS" -m"$H2_STREAMS" \
        -D "$BENCH_SECONDS" "$URL" ;;
    *) return 3 ;;
    esac
}
# "requests: 120 total, 120 started, 120 done, 118 succeeded, 2 failed, ..."
count_h2load() {
    awk '/^requests:/ { for (i = 2; i < NF; i++) if ($(i + 1) ~ /^succeeded/) n = $i; found=1 }
         END { if (!found || n == "") exit 1; print n, 0 }' "$1.out"
}

# ------------------------------------------------------------------------------ vegeta
run_vegeta() {
    local load
    case $1 in
    open) load=(-rate="$OPEN_RATE") ;;
    conns) load=(-rate=0 -workers="$MANY_CONNS" -max-workers="$MANY_CONNS"
        -connections="$MANY_CONNS" -max-connections="$MANY_CONNS") ;;
    *) return 3 ;; # no closed loop; the TLS and HTTP/2 cases are not measured with it
    esac
    echo "GET $URL" >"$WORK/vegeta.targets"
    STDIN_FILE="$WORK/vegeta.targets" measure "$2" "${BIN[vegeta]}" attack \
        -duration="$D" "${load[@]}" -output="$2.bin"
}
count_vegeta() {
    "${BIN[vegeta]}" report -type=json "$1.bin" >"$1.report.json"
    echo "$(json_get "$1.report.json" requests) 0"
}

# ---------------------------------------------------------------------------------- k6
k6_script() {
    local options=$1
    cat <<EOF
import http from 'k6/http';
export const options = Object.assign({ discardResponseBodies: true }, $options);
export default function () { http.get(__ENV.URL); }
export function handleSummary(data) { return { [__ENV.SUMMARY]: JSON.stringify(data) }; }
EOF
}
run_k6() {
    local options
    case $1 in
    closed) options="{ vus: $CLOSED_CONNS, duration: '$D' }" ;;
    open) options="{ scenarios: { open: { executor: 'constant-arrival-rate', rate: $OPEN_RATE,
        timeUnit: '1s', duration: '$D', preAllocatedVUs: 200, maxVUs: 1000 } } }" ;;
    conns) options="{ vus: $MANY_CONNS, duration: '$D' }" ;;
    *) return 3 ;; # the TLS and HTTP/2 cases are not measured with k6
    esac
    k6_script "$options" >"$WORK/k6-$1.js"
    measure "$2" "${BIN[k6]}" run --quiet --no-usage-report -e URL="$URL" \
        -e SUMMARY="$2.json" "$WORK/k6-$1.js"
}
count_k6() {
    echo "$(json_get "$1.json" metrics.http_reqs.values.count)" \
        "$(json_get "$1.json" metrics.dropped_iterations.values.count)"
}

# ------------------------------------------------------------------------------ Locust
run_locust() {
    local users
    case $1 in
    closed) users=$CLOSED_CONNS ;;
    conns) users=$MANY_CONNS ;;
    *) return 3 ;; # no arrival-rate model; the TLS and HTTP/2 cases are not measured with it
    esac
    cat >"$WORK/locustfile.py" <<'EOF'
from locust import FastHttpUser, constant, task


class Get(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/")
EOF
    measure "$2" "${BIN[locust]}" -f "$WORK/locustfile.py" --headless -u "$users" \
        -r "$users" -t "$D" -H "${URL%/}" --json --only-summary --loglevel WARNING
}
count_locust() {
    python3 - "$1.out" <<'EOF'
import json, sys
print(sum(entry["num_requests"] for entry in json.load(open(sys.argv[1]))), 0)
EOF
}

# ----------------------------------------------------------------------------- install
# install_peers: installs what generator.sh needs and the peers of the TLS and HTTP/2
# cases, each only when it is missing (so a second call installs nothing): nginx,
# wrk, /usr/bin/time, openssl, h2load (Debian's nghttp2-client) and caddy (the HTTP/3
# cases' server) with apt, oha with cargo and its `http3` feature, hey with go. vegeta, k6 and Locust: see bench/README.md.
install_peers() {
    local apt=() pkg cmd
    for pkg in nginx:nginx wrk:wrk time:/usr/bin/time openssl:openssl \
        nghttp2-client:h2load util-linux:taskset caddy:caddy; do
        cmd=${pkg#*:}
        command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || apt+=("${pkg%%:*}")
    done
    if [ "${#apt[@]}" -gt 0 ]; then
        say "installing with apt: ${apt[*]}"
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt[@]}"; } >&2; then
            say "apt-get install ${apt[*]} failed; those peers will be skipped"
        fi
    fi
    if ! find_tool oha >/dev/null; then
        if command -v cargo >/dev/null 2>&1; then
            say "installing oha (cargo install oha --locked --features http3, several minutes)"
            cargo install oha --locked --features http3 >&2 ||
                say "cargo install oha failed; oha will be skipped"
        else
            say "no cargo: oha will be skipped"
        fi
    fi
    if ! find_tool hey >/dev/null; then
        if command -v go >/dev/null 2>&1; then
            say "installing hey (go install github.com/rakyll/hey@latest)"
            go install github.com/rakyll/hey@latest >&2 || say "go install hey failed; hey will be skipped"
        else
            say "no go: hey will be skipped"
        fi
    fi
}
