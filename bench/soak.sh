#!/usr/bin/env bash
# Soak: does anything headroom holds grow with time? One `headroom run` at a fixed
# rate against the built-in target for a long while, with the run store and the live
# dashboard on, sampled every 10 s:
#
#   - the generator's anonymous resident memory (RssAnon: its heap and its threads'
#     arenas, where a leak shows) beside its whole RSS (which adds the binary's and
#     libraries' code, paged in as code paths first run: bounded by their size,
#     shared, and given back under pressure), and its open file descriptors;
#   - the run store's size on disk (the database with its WAL);
#   - the size of the dashboard's `/state` (everything a page would be sent).
#
# After a warm-up (the first half, at least a minute; WARMUP= seconds), while the
# process's bounded structures fill and settle (the dashboard's 900 chart rows, filled
# in 15 min and then thinned in place every two minutes; SQLite's page cache; the
# connection pool), a least-squares line is fitted to each series and its slope printed
# per hour, with a verdict. Why half: three hours of samples (2026-11-27) showed the
# anonymous memory reaching its level between 27 and 34 minutes in, then flat to the
# kB; a third (20 min) judged that settling as growth.
#
#   - anonymous memory: flat, its floor (the lowest sample of each 5-minute window)
#     growing under 1 % of its level per hour. The pool's bursts make it a sawtooth
#     of a few hundred kB whose fitted line moves with where the teeth fall; a leak
#     lifts the troughs. The plain line and the peaks' slope are printed beside it;
#   - descriptors: flat, the median of the slopes between every pair of samples (a
#     Theil-Sen line, which a burst of the pool's connections cannot tilt) growing
#     under 1 % of the level per hour or under one descriptor per hour, whichever is
#     more: a count's resolution (1 % of 26 is a quarter of a descriptor). The plain
#     line and the floor of each 5-minute window are printed beside it;
#   - the store: grows linearly (R² ≥ 0.9, or it barely grows at all), by at most
#     STORE_MB_PER_HOUR (default 8 MB per hour at the default rate);
#   - the dashboard's state: bounded, never above STATE_MB (default 2 MB): its rows
#     are thinned past a quarter of an hour.
#
# Usage: bash bench/soak.sh                 (1 h at 500/s)
#        bash bench/soak.sh --quick         (10 min)
#        DURATION=4h RATE=2000 bash bench/soak.sh
#        bash bench/soak.sh --judge FILE    (judge a samples file again, no run)
# Results: a table on stdout and in $BENCH_OUT/soak.md (default /tmp/headroom-bench),
# every sample in $BENCH_OUT/soak-samples.tsv. Exit 1 when a verdict fails.
#
# Seed 000's authors held their "sweet spot" for hours by hand and watched `top`; the
# target side of a soak is `headroom find --hold` (the answer held for a while, with
# what broke if it did not hold). This is the generator's side.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-1h}
JUDGE=
case ${1:-} in
--quick) DURATION=10m ;;
--judge)
    JUDGE=${2:?--judge needs a samples file}
    [[ -r $JUDGE ]] || { echo "soak: cannot read $JUDGE" >&2; exit 2; }
    ;;
esac
RATE=${RATE:-500}
INTERVAL=${INTERVAL:-10}
STORE_MB_PER_HOUR=${STORE_MB_PER_HOUR:-8}
STATE_MB=${STATE_MB:-2}
BENCH_OUT=${BENCH_OUT:-/tmp/headroom-bench}
mkdir -p "$BENCH_OUT"
WORK=$(mktemp -d -t headroom-soak-XXXXXX)

if [[ -z $JUDGE && -z ${HEADROOM:-} ]]; then
    cargo build --release --quiet
    HEADROOM=${CARGO_TARGET_DIR:-target}/release/headroom
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() {
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on 127.0.0.1:$1" >&2
    return 1
}

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [[ -n ${KEEP:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT

seconds_of() { # 90s, 10m, 1h, 2h30m → seconds
    python3 - "$1" <<'EOF'
import re, sys
total = 0
for n, u in re.findall(r"(\d+)([hms])", sys.argv[1]):
    total += int(n) * {"h": 3600, "m": 60, "s": 1}[u]
print(total or int(sys.argv[1]))
EOF
}
TOTAL=$(seconds_of "$DURATION")
if [[ -n $JUDGE ]]; then
    SAMPLES=$JUDGE
    TOTAL=$(awk 'NR > 1 { t = $1 } END { printf "%d", t + 1 }' "$JUDGE")
else
    # The built-in target far below its capacity (32 workers × 1 ms ≈ 32,000/s), so the
    # run is steady and every figure is the generator's.
    TPORT=$(free_port)
    "$HEADROOM" target --listen "127.0.0.1:$TPORT" --workers 32 --service-time 1ms \
        >"$WORK/target.log" 2>&1 &
    PIDS+=($!)
    wait_port "$TPORT"

    DPORT=$(free_port)
    STORE="$WORK/history.db"
    "$HEADROOM" run --url "http://127.0.0.1:$TPORT/work" --rate "$RATE" --duration "${TOTAL}s" \
        --threads 1 --store "$STORE" --dashboard="127.0.0.1:$DPORT" --quiet \
        --out "$WORK/summary.json" >"$WORK/run.log" 2>&1 &
    RUN=$!
    PIDS+=("$RUN")
    wait_port "$DPORT"

    SAMPLES="$BENCH_OUT/soak-samples.tsv"
    printf 't_s\tanon_kb\tfds\tstore_bytes\tstate_bytes\trss_kb\n' >"$SAMPLES"
    echo "soak: ${TOTAL} s at ${RATE}/s, a sample every ${INTERVAL} s into $SAMPLES" >&2
    START=$(date +%s)
    while kill -0 "$RUN" 2>/dev/null; do
        now=$(($(date +%s) - START))
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$RUN/status" 2>/dev/null || echo "")
        anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$RUN/status" 2>/dev/null || echo "")
        fds=$(ls "/proc/$RUN/fd" 2>/dev/null | wc -l)
        store=$(cat "$STORE" "$STORE-wal" 2>/dev/null | wc -c)
        state=$(curl -s --max-time 5 "http://127.0.0.1:$DPORT/state" | wc -c)
        if [[ -n $rss && -n $anon ]]; then
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$now" "$anon" "$fds" "$store" "$state" "$rss" >>"$SAMPLES"
        fi
        sleep "$INTERVAL"
    done
    wait "$RUN" || echo "the run exited $?: $(tail -3 "$WORK/run.log")" >&2
fi

WARMUP=${WARMUP:-$(((TOTAL / 2) > 60 ? TOTAL / 2 : 60))}
python3 - "$SAMPLES" "$TOTAL" "$RATE" "$STORE_MB_PER_HOUR" "$STATE_MB" "$BENCH_OUT/soak.md" "$WARMUP" <<'EOF'
import sys

path, total, rate, store_mb_h, state_mb, out, warm = sys.argv[1:]
total, rate, store_mb_h, state_mb = int(total), float(rate), float(store_mb_h), float(state_mb)
rows = [line.rstrip("\n").split("\t") for line in open(path)][1:]
rows = [[float(x) for x in r] for r in rows if len(r) == 6 and all(r)]
warm = int(warm)
after = [r for r in rows if r[0] >= warm]
if len(after) < 3:
    sys.exit(f"too few samples after the {warm} s warm-up: {len(after)}")


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    slope = sxy / sxx if sxx else 0.0
    r2 = (sxy * sxy) / (sxx * syy) if sxx and syy else 1.0
    return slope, my, r2


t = [r[0] for r in after]
lines, failed = [], False


def verdict(ok, text):
    global failed
    failed |= not ok
    return ("ok   " if ok else "FAIL ") + text


def windows(column, pick):
    """(middle time, pick of the column) of each 5-minute window after the warm-up."""
    bins = {}
    for r in after:
        b = int((r[0] - warm) // 300)
        bins.setdefault(b, []).append(r[column])
    return [(warm + 300 * b + 150, pick(v)) for b, v in sorted(bins.items())]


rss_slope, rss_level, _ = fit(t, [r[1] for r in after])
rss_pct = rss_slope * 3600 / rss_level * 100
# Memory is judged on its floor: the lowest sample of each 5-minute window. Why: the
# pool's connections come in bursts and their freed pages go back to the kernel only
# when the pool closes them 90-180 s later, so anonymous memory is a sawtooth of a few
# hundred kB, and a line fitted to 30 minutes of teeth moved by +1.75 %/h (2026-11-27)
# from where the teeth fell while its troughs had no trend. A leak lifts the troughs.
# With fewer than 3 windows (a quick run) there is no floor to fit: the plain line
# decides. The rule was set after seeing that run; the next hour was its check.
lows, highs = windows(1, min), windows(1, max)
if len(lows) >= 3:
    floor_slope, _, _ = fit([x for x, _ in lows], [y for _, y in lows])
    peak_slope, _, _ = fit([x for x, _ in highs], [y for _, y in highs])
    judged_pct = floor_slope * 3600 / rss_level * 100
    mem_how = (f"floor of each 5 min {judged_pct:+.2f} %/h, peaks "
               f"{peak_slope * 3600 / rss_level * 100:+.2f} %/h")
else:
    judged_pct = rss_pct
    mem_how = "too few 5-minute windows for a floor: the line decides"
fd_slope, fd_level, _ = fit(t, [r[2] for r in after])
fd_pct = fd_slope * 3600 / fd_level * 100
st_slope, st_level, st_r2 = fit(t, [r[3] for r in after])
st_mb_h = st_slope * 3600 / 1e6
state_max = max(r[4] for r in after)
state_slope, state_level, _ = fit(t, [r[4] for r in after])

lines.append(f"| anonymous memory | {rss_level / 1024:.1f} MB (range {min(r[1] for r in after) / 1024:.2f}-{max(r[1] for r in after) / 1024:.2f}) | "
             f"{rss_slope * 3600 / 1024:+.2f} MB/h ({rss_pct:+.2f} %/h; {mem_how}) | "
             + verdict(judged_pct < 1.0, "flat: its floor grows under 1 % of the level per hour") + " |")
all_slope, all_level, _ = fit(t, [r[5] for r in after])
lines.append(f"| whole RSS (with code paged in) | {all_level / 1024:.1f} MB | {all_slope * 3600 / 1024:+.2f} MB/h | shown, not judged |")
# Descriptors are judged on a Theil-Sen line: the median of the slopes between every
# pair of samples. Why not the least-squares line: the pool opens connections in a
# burst when a stall makes requests overlap and closes them 90-180 s later, so the
# count sits at 25-29 with a rare spike, and one sample of 88 in 179 (2026-11-28,
# 33 min in) tilted the plain line to +2.5/h while every 5-minute floor was 25. Why
# not the floors: with a handful of windows, one quiet window (23 against 25-26, an
# earlier hour) tilts them as far the other way. The median slope ignores both, and a
# leak, which lifts every later sample, moves it at full strength. The rule was set
# after seeing that hour; the next hour was its check. The plain line and the floors
# are printed beside it.
fd_lows = windows(2, min)
if len(fd_lows) >= 2:
    fd_floor, _, _ = fit([x for x, _ in fd_lows], [y for _, y in fd_lows])
else:
    fd_floor = fd_slope
fd_pairs = sorted(
    (b[2] - a[2]) / (b[0] - a[0])
    for i, a in enumerate(after)
    for b in after[i + 1:]
    if b[0] > a[0]
)
fd_median = fd_pairs[len(fd_pairs) // 2]
fd_median_pct = fd_median * 3600 / fd_level * 100
lines.append(f"| open descriptors | {fd_level:.0f} (range {min(r[2] for r in after):.0f}-{max(r[2] for r in after):.0f}) | "
             f"{fd_median * 3600:+.2f}/h ({fd_median_pct:+.2f} %/h; least squares {fd_slope * 3600:+.2f}/h, "
             f"floor of each 5 min {fd_floor * 3600:+.2f}/h) | "
             + verdict(fd_median_pct < 1.0 or fd_median * 3600 < 1.0,
                       "flat: its median slope grows under 1 % of the level, or one descriptor, per hour") + " |")
linear = st_r2 >= 0.9 or st_mb_h < 0.1
lines.append(f"| store (db + WAL) | {st_level / 1e6:.2f} MB | {st_mb_h:+.2f} MB/h (R² {st_r2:.3f}) | "
             + verdict(linear and st_mb_h <= store_mb_h, f"linear, at most {store_mb_h:g} MB/h") + " |")
lines.append(f"| dashboard /state | {state_level / 1e6:.3f} MB (max {state_max / 1e6:.3f}) | {state_slope * 3600 / 1e6:+.3f} MB/h | "
             + verdict(state_max <= state_mb * 1e6, f"bounded, at most {state_mb:g} MB") + " |")

text = (
    f"Soak: {total} s at {rate:g} req/s against the built-in target; {len(rows)} samples, "
    f"{len(after)} after a {warm} s warm-up; slopes are least-squares lines per hour.\n\n"
    "| series | level | slope | verdict |\n|---|---:|---:|---|\n" + "\n".join(lines) + "\n"
)
if warm < 900:
    # The dashboard's 900 chart rows fill at one a second: before then its memory grows
    # by design, and a shorter warm-up judges that filling, not a leak.
    text += (
        f"\nNote: a {warm} s warm-up ends before the dashboard's 900 chart rows are full "
        "(15 min): the memory slope includes their filling. Judge leaks on a run of "
        "45 min or more (the default hour).\n"
    )
print(text)
open(out, "w").write(text)
sys.exit(1 if failed else 0)
EOF
