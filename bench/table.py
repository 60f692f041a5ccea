"""Turns bench/generator.sh's runs.tsv into Markdown tables, one per case.

Usage: python3 bench/table.py RUNS.tsv SECONDS

Each figure is the median over rounds. CPU per request is (user + system CPU seconds)
divided by requests completed; "÷ headroom" and "÷ wrk" divide a tool's CPU per request
by headroom's and wrk's from the same runs (above 1: that tool spends more).
"""

import csv
import statistics
import sys

CASES = {
    "closed": "Closed loop, 50 connections, as fast as possible",
    "open": "Open model, 5000 requests/s",
    "conns": "1000 connections, as fast as possible",
}
NOTES = {
    ("open", "hey"): "paces each of 50 workers at 100/s",
    ("open", "k6"): "dropped = dropped_iterations",
}


def main(path: str, seconds: float) -> None:
    runs = {}
    for row in csv.DictReader(open(path), delimiter="\t"):
        requests = int(float(row["requests"]))
        cpu_s = float(row["user_s"]) + float(row["sys_s"])
        runs.setdefault((row["case"], row["tool"]), []).append(
            {
                "rate": requests / seconds,
                "cpu_us": cpu_s * 1e6 / requests,
                "rss_mib": int(row["rss_kib"]) / 1024,
                "dropped": int(float(row["dropped"])),
            }
        )
    for case, title in CASES.items():
        tools = [t for (c, t) in runs if c == case]
        if not tools:
            continue
        med = {t: median_of(runs[(case, t)]) for t in tools}
        base_h = med.get("headroom", {}).get("cpu_us")
        base_w = med.get("wrk", {}).get("cpu_us")
        print(f"\n### {title} ({seconds:g} s runs, medians of {max(len(runs[(case, t)]) for t in tools)})\n")
        print("| tool | req/s | CPU µs/request | peak RSS MiB | dropped | ÷ headroom | ÷ wrk | note |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for t in tools:
            m = med[t]
            print(
                f"| {t} | {m['rate']:,.0f} | {m['cpu_us']:.1f} | {m['rss_mib']:.1f} "
                f"| {m['dropped']:,.0f} | {ratio(m['cpu_us'], base_h)} | {ratio(m['cpu_us'], base_w)} "
                f"| {NOTES.get((case, t), '')} |"
            )


def median_of(rows: list) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def ratio(value: float, base) -> str:
    return "—" if not base else f"{value / base:.2f}"


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
