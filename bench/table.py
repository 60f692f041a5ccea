"""Turns bench/generator.sh's runs.tsv into Markdown tables, one per case.

Usage: python3 bench/table.py RUNS.tsv SECONDS

Each figure is the median over rounds. CPU per request is (user + system CPU seconds)
divided by requests completed; "÷ headroom" divides a tool's CPU per request by
headroom's, "÷ REF" by the case's reference peer's (wrk, oha or h2load), both from the
same runs (above 1: that tool spends more). A last table checks headroom against the
aims and the limits required (issues 10 and 21), with the median of each round's own
ratio: tools alternate within a round, so a round's ratio is two runs a few seconds
apart, and a slow spell of a shared machine that lands on one tool's run in one round
moves one ratio of the median instead of one tool's median.
"""

import csv
import statistics
import sys

CASES = {
    "closed": "Closed loop, 50 connections, as fast as possible",
    "open": "Open model, 5000 requests/s",
    "conns": "1000 connections, as fast as possible",
    "tls": "HTTPS/1.1 keep-alive, 50 connections, as fast as possible",
    "h2c": "h2c (prior knowledge), 10 connections × 10 streams",
    "h2tls": "HTTP/2 over TLS, 10 connections × 10 streams",
    "handshake": "A full TLS handshake per request, 20 workers",
    "tlsconns": "1000 TLS connections, as fast as possible",
    "h2caddy": "HTTP/2 over TLS against Caddy, 10 connections × 10 streams (HTTP/3's reference)",
    "h3": "HTTP/3 against Caddy, 10 connections × 10 streams",
    "h3new": "HTTP/3 against Caddy, a full QUIC handshake per request, 20 workers",
}
# The peer each case's "÷" column and goal compare against.
REFERENCE = {
    "closed": "wrk",
    "open": "oha",
    "conns": "wrk",
    "tls": "wrk",
    "h2c": "h2load",
    "h2tls": "h2load",
    "handshake": "oha",
    "tlsconns": "wrk",
    "h2caddy": "h2load",
    "h3": "oha",
    "h3new": "oha",
}
# Issue 10 (issue 21 for the closed loop's aim): headroom's CPU per request ÷ the
# reference peer's, (aim, required).
CPU_GOALS = {
    "closed": (0.9, 1.0),
    "open": (0.5, 0.5),
    "tls": (1.0, 1.15),
    "h2c": (1.0, 1.3),
    "h2tls": (1.0, 1.3),
    "handshake": (0.8, 1.0),
    # Issue 32: at most 0.8× oha's (oha built with its `http3` feature). oha has no
    # new-connection mode over HTTP/3, so h3new has no peer: its handshakes per second
    # per core stand beside the TLS handshake case's.
    "h3": (0.8, 0.8),
}
# Issue 32: headroom over HTTP/3 against headroom's own HTTP/2 over TLS, same server and
# same round: (case, its HTTP/2 case, limit).
SELF_GOALS = [("h3", "h2caddy", 2.0)]
# Cases with a handshake per request: their table gives handshakes per CPU-second.
HANDSHAKE_CASES = {"handshake", "h3new"}
# Issue 10: headroom's peak RSS, MiB.
RSS_GOALS = {"tlsconns": 40.0}
NOTES = {
    ("open", "hey"): "paces each of 50 workers at 100/s",
    ("open", "k6"): "dropped = dropped_iterations",
    ("h2c", "h2load"): "latency from stream open: no queueing delay",
    ("h2tls", "h2load"): "latency from stream open: no queueing delay",
    ("h2c", "oha"): "-c 10 -p 10",
        ("h2tls", "oha"): "-c 10 -p 10",
    ("h2caddy", "oha"): "-c 10 -p 10",
    ("h3", "oha"): "--http-version 3 -c 10 -p 10",
}


def main(path: str, seconds: float) -> None:
    runs = {}
    for row in csv.DictReader(open(path), delimiter="\t"):
        requests = int(float(row["requests"]))
        cpu_s = float(row["user_s"]) + float(row["sys_s"])
        runs.setdefault((row["case"], row["tool"]), []).append(
            {
                "round": int(row["round"]),
                "rate": requests / seconds,
                "cpu_us": cpu_s * 1e6 / requests,
                "rss_mib": int(row["rss_kib"]) / 1024,
                "dropped": int(float(row["dropped"])),
            }
        )
    goals = []
    for case, title in CASES.items():
        tools = [t for (c, t) in runs if c == case]
        if not tools:
            continue
        ref = REFERENCE[case]
        med = {t: median_of(runs[(case, t)]) for t in tools}
        base_h = med.get("headroom", {}).get("cpu_us")
        base_r = med.get(ref, {}).get("cpu_us")
        rounds = max(len(runs[(case, t)]) for t in tools)
        print(f"\n### {title} ({seconds:g} s runs, medians of {rounds})\n")
        print(f"| tool | req/s | CPU µs/request | peak RSS MiB | dropped | ÷ headroom | ÷ {ref} | note |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for t in tools:
            m = med[t]
            print(
                f"| {t} | {m['rate']:,.0f} | {m['cpu_us']:.1f} | {m['rss_mib']:.1f} "
                f"| {m['dropped']:,.0f} | {ratio(m['cpu_us'], base_h)} | {ratio(m['cpu_us'], base_r)} "
                f"| {NOTES.get((case, t), '')} |"
            )
        if case in CPU_GOALS and base_h:
            aim, required = CPU_GOALS[case]
            value = paired(runs[(case, "headroom")], runs.get((case, ref), []))
            goals.append((f"{case}: CPU ÷ {ref}", value, aim, required, "×"))
        if case in HANDSHAKE_CASES:
            handshakes(case, tools, med)
        if case in RSS_GOALS and base_h:
            limit = RSS_GOALS[case]
            goals.append((f"{case}: peak RSS MiB", med["headroom"]["rss_mib"], limit, limit, ""))
    for case, h2, limit in SELF_GOALS:
        value = paired(runs.get((case, "headroom"), []), runs.get((h2, "headroom"), []))
        if value is not None:
            goals.append((f"{case}: CPU ÷ headroom's {h2}", value, limit, limit, "×"))
    if goals:
        print("\n### headroom against the goals (median of each round's ratio)\n")
        print("| measure | headroom | aim | required | verdict |")
        print("|---|---:|---:|---:|---|")
        for name, value, aim, required, unit in goals:
            print(f"| {name} | {fmt(value, unit)} | ≤ {aim:g}{unit} | ≤ {required:g}{unit} | {verdict(value, aim, required)} |")
    floor(runs)


def handshakes(case: str, tools: list, med: dict) -> None:
    """Handshakes per CPU-second of the generator: one request, one new connection."""
    print(f"\nHandshakes per second per core of the generator ({case}): " + ", ".join(
        f"{t} {1e6 / med[t]['cpu_us']:,.0f}" for t in tools))


def floor(runs: dict) -> None:
    """The closed loop's floor: where a tokio client that measures nothing stands
    against wrk, and what headroom costs above it (medians of each round's ratio)."""
    ours, bare, ref = (runs.get(("closed", t), []) for t in ("headroom", "floor", "wrk"))
    if not bare:
        return
    print("\n### The closed loop's floor (bench/floor, median of each round's ratio)\n")
    print("| measure | ratio |")
    print("|---|---:|")
    print(f"| floor ÷ wrk | {fmt(paired(bare, ref), '×')} |")
    print(f"| headroom ÷ floor (the cost of measuring) | {fmt(paired(ours, bare), '×')} |")


def median_of(rows: list) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "round"}


def paired(ours: list, theirs: list):
    """The median over rounds of each round's CPU-per-request ratio (None if no round has both)."""
    by_round = {r["round"]: r["cpu_us"] for r in theirs}
    ratios = [r["cpu_us"] / by_round[r["round"]] for r in ours if r["round"] in by_round]
    return statistics.median(ratios) if ratios else None


def ratio(value: float, base) -> str:
    return "—" if not base else f"{value / base:.2f}"


def fmt(value, unit: str) -> str:
    return "—" if value is None else f"{value:.2f}{unit}"


def verdict(value, aim: float, required: float) -> str:
    if value is None:
        return "no reference peer in this run"
    if value <= aim:
        return "meets the aim"
    if value <= required:
        return "meets the requirement, not the aim"
    return "**over the requirement**"


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
