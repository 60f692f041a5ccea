# How bench/generator.sh drives each tool. Sourced, not run.
#
# For every tool T:
#   run_T CASE PREFIX   runs T for case `closed` (CLOSED_CONNS connections, as fast as
#                       possible), `open` (OPEN_RATE requests/s) or `conns` (MANY_CONNS
#                       connections, as fast as possible) via `measure`; returns 3 when
#                       T has no such mode.
#   count_T PREFIX      prints "REQUESTS DROPPED" read from T's own output.
# Uses from the caller: BIN, URL, WORK, BENCH_SECONDS, OPEN_RATE, CLOSED_CONNS,
# MANY_CONNS, measure, json_get.

D="${BENCH_SECONDS}s"

# ---------------------------------------------------------------------------- headroom
# headroom_with BIN CASE PREFIX: one headroom binary's run.
headroom_with() {
    local load
    case $2 in
    closed) load=(--users "$CLOSED_CONNS") ;;
    open) load=(--rate "$OPEN_RATE") ;;
    conns) load=(--users "$MANY_CONNS") ;;
    esac
    measure "$3" "$1" run --url "$URL" "${load[@]}" --duration "$D" \
        --threads 1 --quiet --out "$3.json"
}
run_headroom() { headroom_with "${BIN[headroom]}" "$@"; }
count_headroom() { echo "$(json_get "$1.json" requests) $(json_get "$1.json" dropped)"; }
# `baseline`: another headroom build ($HEADROOM_BASELINE), to measure a change.
run_baseline() { headroom_with "${BIN[baseline]}" "$@"; }
count_baseline() { count_headroom "$@"; }

# --------------------------------------------------------------------------------- wrk
run_wrk() {
    case $1 in
    closed) measure "$2" "${BIN[wrk]}" -t1 -c"$CLOSED_CONNS" -d"$D" "$URL" ;;
    conns) measure "$2" "${BIN[wrk]}" -t1 -c"$MANY_CONNS" -d"$D" "$URL" ;;
    *) return 3 ;; # wrk has no fixed-rate mode (that is wrk2)
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
    esac
    # shellcheck disable=SC2046 # the format flags are two words on purpose
    measure "$2" "${BIN[oha]}" -z "$D" "${load[@]}" --no-tui $(oha_format) "$URL"
}
count_oha() { echo "$(json_get "$1.out" 'statusCodeDistribution.*') 0"; }

# --------------------------------------------------------------------------------- hey
run_hey() {
    case $1 in
    closed) measure "$2" "${BIN[hey]}" -z "$D" -c "$CLOSED_CONNS" "$URL" ;;
    # hey paces each worker on its own (-q is per worker): 50 workers × 100/s.
    open) measure "$2" "${BIN[hey]}" -z "$D" -c 50 -q $((OPEN_RATE / 50)) "$URL" ;;
    conns) measure "$2" "${BIN[hey]}" -z "$D" -c "$MANY_CONNS" "$URL" ;;
    esac
}
count_hey() {
    awk '/^[[:space:]]*\[[0-9]+\][[:space:]]+[0-9]+ responses/ { n += $2; found=1 }
         END { if (!found) exit 1; print n, 0 }' "$1.out"
}

# ------------------------------------------------------------------------------ vegeta
run_vegeta() {
    local load
    case $1 in
    closed) return 3 ;; # vegeta has no closed-loop mode
    open) load=(-rate="$OPEN_RATE") ;;
    conns) load=(-rate=0 -workers="$MANY_CONNS" -max-workers="$MANY_CONNS"
        -connections="$MANY_CONNS" -max-connections="$MANY_CONNS") ;;
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
    open) return 3 ;; # Locust has no arrival-rate model
    conns) users=$MANY_CONNS ;;
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
