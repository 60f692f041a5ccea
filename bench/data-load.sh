#!/usr/bin/env bash
# Loading a per-user data file (`data:`): the wall time and peak RSS of reading a
# 1,000,000-row CSV (id,username,password,email; ~60 bytes a row) into memory, for
#   - headroom: `headroom check` of a scenario that declares the file under `data:`
#     (check loads every data set and prints it with its row count), less the same
#     check of the scenario without `data:` (the process, the scenario, no file);
#   - Python: csv.DictReader reading every row into a list, what a Locust user writes
#     to share accounts between users;
#   - `wc -l`: reading the file and nothing else, the floor.
#
#   bash bench/data-load.sh                 # 5 rounds
#   DATA_ROUNDS=1 bash bench/data-load.sh
#   DATA_ROWS=100000 bash bench/data-load.sh
#
# The file is read once before the rounds, so every tool reads it from the page cache;
# the tools alternate within a round and the medians are reported. Goals: headroom
# loads the file in at most DATA_GOAL_S (1 s) and holds at most twice its size for it.
# Needs /usr/bin/time (apt-get install -y time) and python3; installs nothing.
set -euo pipefail

ROWS=${DATA_ROWS:-1000000}
ROUNDS=${DATA_ROUNDS:-5}
GOAL_S=${DATA_GOAL_S:-1.0}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d -t headroom-data-load-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench/data-load.sh: $*"
    exit 1
}

for tool in /usr/bin/time python3 wc; do
    command -v "$tool" >/dev/null 2>&1 || die "needs $tool (apt-get install -y time python3)"
done

BIN=${HEADROOM:-"${CARGO_TARGET_DIR:-$REPO/target}/dist/headroom"}
if [ ! -x "$BIN" ]; then
    say "building headroom (cargo build --profile dist)..."
    (cd "$REPO" && cargo build --profile dist -q) >&2
fi

# ------------------------------------------------------------------------ the data file
CSV="$WORK/accounts.csv"
python3 - "$CSV" "$ROWS" <<'PY'
import sys
path, rows = sys.argv[1], int(sys.argv[2])
with open(path, "w", newline="") as f:
    f.write("id,username,password,email\n")
    for i in range(rows):
        user = f"user{i:07d}"
        # A fixed, scrambled password per row, so the file is the same on every run.
        password = f"pw{(i * 0x9E3779B97F4A7C15) % (1 << 64):016x}"
        f.write(f"{i},{user},{password},{user}@example.com\n")
PY
FILE_BYTES=$(stat -c %s "$CSV")
cat "$CSV" >/dev/null
say "$CSV: $ROWS rows, $FILE_BYTES bytes ($((FILE_BYTES / ROWS)) a row)"

# The scenario with the file (relative to the scenario's directory) and without it.
cat >"$WORK/data.yaml" <<'EOF'
name: data-load
target: http://127.0.0.1:9
load: {rate: 10, duration: 1s}
data:
  accounts: {file: accounts.csv, pick: sequential}
requests:
  - {path: /}
EOF
grep -v -e '^data:' -e 'accounts:' "$WORK/data.yaml" >"$WORK/none.yaml"

# ----------------------------------------------------------------------------- the runs
RUNS="$WORK/runs.tsv"
: >"$RUNS"
FAILED=""
# measure TOOL ROUND CMD...: runs CMD under /usr/bin/time -v; appends
# "TOOL ROUND seconds peak_kib" to $RUNS. Its output goes to $WORK/TOOL.out. The wall
# time is taken around it in nanoseconds (time's own is in hundredths of a second).
measure() {
    local tool=$1 round=$2 start end
    shift 2
    start=$(date +%s%N)
    if ! /usr/bin/time -v -o "$WORK/$tool.time" "$@" >"$WORK/$tool.out" 2>"$WORK/$tool.err"; then
        say "$tool failed: $(tail -n 5 "$WORK/$tool.err")"
        return 1
    fi
    end=$(date +%s%N)
    python3 - "$tool" "$round" "$WORK/$tool.time" "$((end - start))" >>"$RUNS" <<'PY'
import sys
tool, round_, path, nanos = sys.argv[1:5]
fields = dict(line.strip().rpartition(": ")[::2] for line in open(path))
print(f"{tool}\t{round_}\t{int(nanos) / 1e9:.4f}\t{fields['Maximum resident set size (kbytes)']}")
PY
}

PY_READ='import csv, sys
with open(sys.argv[1], newline="") as f:
    rows = list(csv.DictReader(f))
print(len(rows), "rows")'

for round in $(seq "$ROUNDS"); do
    say "round $round of $ROUNDS"
    if [ -z "$FAILED" ]; then
        if measure headroom "$round" "$BIN" check "$WORK/data.yaml"; then
            measure headroom-none "$round" "$BIN" check "$WORK/none.yaml" || FAILED=1
        else
            FAILED=1
            say "(headroom check does not load \`data:\` yet? its figures are left out)"
        fi
    fi
    measure python "$round" python3 -c "$PY_READ" "$CSV"
    measure wc "$round" wc -l "$CSV"
done
if [ -z "$FAILED" ] && ! grep -Eq '1[,_ ]?000[,_ ]?000|'"$ROWS" "$WORK/headroom.out"; then
    say "warning: headroom check's output does not show $ROWS rows:"
    sed 's/^/  /' "$WORK/headroom.out" >&2
fi

# ---------------------------------------------------------------------------- the table
python3 - "$RUNS" "$FILE_BYTES" "$ROWS" "$GOAL_S" <<'PY'
import statistics, sys
runs, file_bytes, rows, goal_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
by_tool = {}
for line in open(runs):
    tool, _, seconds, kib = line.split("\t")
    by_tool.setdefault(tool, []).append((float(seconds), int(kib) / 1024))
med = {t: (statistics.median(s for s, _ in v), statistics.median(m for _, m in v)) for t, v in by_tool.items()}
file_mib = file_bytes / 2**20
print(f"\n{rows:,} rows, {file_mib:.1f} MiB; median of {len(by_tool['wc'])} rounds\n")
print("| tool | seconds | peak RSS MiB | RSS ÷ file |")
print("|---|---:|---:|---:|")
names = {
    "headroom": "headroom check (with data)",
    "headroom-none": "headroom check (no data)",
    "headroom-data": "headroom: the data alone (difference)",
    "python": "Python csv.DictReader → list",
    "wc": "wc -l (reading the file)",
}
if "headroom" in med and "headroom-none" in med:
    (s1, m1), (s0, m0) = med["headroom"], med["headroom-none"]
    med["headroom-data"] = (max(s1 - s0, 0.0), max(m1 - m0, 0.0))
for tool in ["headroom", "headroom-none", "headroom-data", "python", "wc"]:
    if tool in med:
        s, m = med[tool]
        print(f"| {names[tool]} | {s:.3f} | {m:.1f} | {m / file_mib:.2f} |")
        med[tool] = (max(s, 1e-3), max(m, 1e-3))  # no division by zero below
if "headroom" not in med:
    print("\nheadroom: not measured (its check failed; see above)")
    sys.exit(1)
(s, m), (sd, md) = med["headroom"], med["headroom-data"]
(sp, mp), (sw, mw) = med["python"], med["wc"]
print("\n| ratio | value |")
print("|---|---:|")
print(f"| headroom ÷ Python, time | {s / sp:.2f} |")
print(f"| headroom ÷ Python, peak RSS | {m / mp:.2f} |")
print(f"| headroom ÷ wc -l, time | {s / sw:.1f} |")
print(f"| headroom's data alone ÷ wc -l, time | {sd / sw:.1f} |")
print(f"| headroom's data RSS ÷ file size | {md / file_mib:.2f} |")
goals = [
    (f"load time (with data) ≤ {goal_s:g} s", f"{s:.3f} s", s <= goal_s),
    ("faster than Python's DictReader", f"{s / sp:.2f}×", s < sp),
    ("data RSS ≤ 2 × file size", f"{md / file_mib:.2f}×", md <= 2 * file_mib),
    ("whole process RSS ≤ 2 × file size", f"{m / file_mib:.2f}×", m <= 2 * file_mib),
]
print("\n| goal | measured | |")
print("|---|---:|---|")
for goal, value, ok in goals:
    print(f"| {goal} | {value} | {'pass' if ok else 'FAIL'} |")
sys.exit(0 if all(ok for _, _, ok in goals) else 1)
PY
