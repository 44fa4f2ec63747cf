#!/usr/bin/env python3
"""The soak's 5 s rows, split by what hookbin's writer was doing in them (bench/soak.sh).

Usage: soakrows.py WORK_DIR [SOAK_START_EPOCH] [--rows]

Reads WORK_DIR/soak.csv (a row every 5 s, t_s counted from the start of the paced load) and
WORK_DIR/hookbin.log, which must have been written with the reaper's and the writer's debug lines
(BENCH_RUST_LOG="hookbin=info,hookbin::storage::sqlite::writer=debug,hookbin::reaper=debug"):
"reap step ... took_us=" and "writer checkpoint ... took_us=" (a WAL restart). Each event goes to
the row whose 5 s it ended in. The start of the paced load is WORK_DIR/soak_start (soak.sh writes
it) unless given, so a work dir kept with BENCH_KEEP=1 can be looked at again.

Prints, for the rows before the first reap step and, after it, for the rows with reap steps and
those without: how many, the median and mean of their p99 and p50, and the writer's restarts in
them (count and ms a row). That separates what the reaper costs the captures from a creep of
everything else. --rows also prints every row.
"""
import csv
import datetime
import os
import re
import statistics
import sys


def events(log):
    """(epoch, kind, took_us) of every reap step and writer restart in the log."""
    found = []
    took = re.compile(r"took_us=(\d+)")
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "reap step" in line:
                kind = "reap"
            elif "writer checkpoint" in line and "frames=-1" not in line:
                kind = "restart"
            else:
                continue
            us = took.search(line)
            if not us:
                continue
            stamp = line.split(" ", 1)[0].replace("Z", "+00:00")
            when = datetime.datetime.fromisoformat(stamp).timestamp()
            found.append((when, kind, int(us.group(1))))
    return found


def main():
    args = [a for a in sys.argv[1:] if a != "--rows"]
    if not args:
        sys.exit(__doc__)
    work = args[0]
    if len(args) > 1:
        start = float(args[1])
    else:
        with open(os.path.join(work, "soak_start"), encoding="utf-8") as f:
            start = float(f.read())
    rows = list(csv.DictReader(open(os.path.join(work, "soak.csv"), encoding="utf-8")))
    step = float(rows[1]["t_s"]) - float(rows[0]["t_s"]) if len(rows) > 1 else 5.0
    per_row = {}
    for when, kind, us in events(os.path.join(work, "hookbin.log")):
        # The row that ends at t covers (t - step, t].
        t = round((int((when - start) // step) + 1) * step)
        n, total = per_row.setdefault(t, {}).get(kind, (0, 0))
        per_row[t][kind] = (n + 1, total + us)
    table = []
    for r in rows:
        t = round(float(r["t_s"]))
        ev = per_row.get(t, {})
        table.append((t, float(r["p50_ms"]), float(r["p99_ms"]), ev.get("reap", (0, 0)), ev.get("restart", (0, 0))))
    reaped = [t for t, _, _, reap, _ in table if reap[0]]
    first = min(reaped) if reaped else None
    groups = {
        "before the first reap": [x for x in table if first is None or x[0] < first],
        "after: rows with reap steps": [x for x in table if first is not None and x[0] >= first and x[3][0]],
        "after: rows without": [x for x in table if first is not None and x[0] >= first and not x[3][0]],
    }
    if "--rows" in sys.argv:
        print(f"{'t':>5} {'p50':>6} {'p99':>6} {'reaps':>5} {'ms':>6} {'restarts':>8} {'ms':>6}")
        for t, p50, p99, reap, rst in table:
            print(f"{t:5d} {p50:6.2f} {p99:6.2f} {reap[0]:5d} {reap[1] / 1000:6.1f} {rst[0]:8d} {rst[1] / 1000:6.1f}")
    print(f"  {'5 s rows':<29} {'rows':>4} {'p99 median':>10} {'mean':>6} {'p50 median':>10} {'restarts/row':>12} {'ms each':>7}")
    for name, xs in groups.items():
        if not xs:
            print(f"  {name:<29} {0:4d}")
            continue
        n_rst = sum(x[4][0] for x in xs)
        ms_rst = sum(x[4][1] for x in xs) / 1000
        print(f"  {name:<29} {len(xs):4d} {statistics.median(x[2] for x in xs):10.2f} "
              f"{statistics.mean(x[2] for x in xs):6.2f} {statistics.median(x[1] for x in xs):10.2f} "
              f"{n_rst / len(xs):12.1f} {(ms_rst / n_rst if n_rst else 0):7.2f}")


if __name__ == "__main__":
    main()
