#!/usr/bin/env python3
"""Where the writer's WAL restarts spend their time, from a syscall trace (issue 15, goal 4).

Record, during a soak (bench/soak.sh), hookbin's writer and checkpoint threads only, with
tracepoints (no sampling: `perf record -F ... -p` stalled hookbin 0.5-0.8 s in a soak, and
--no-buildid spares the build-id pass over the binary at the end):

    pid=$(pgrep -f 'hookbin.*soak.db')
    w=$(grep -l hookbin-writer /proc/$pid/task/*/comm | cut -d/ -f5)
    c=$(grep -l hookbin-checkpo /proc/$pid/task/*/comm | cut -d/ -f5)
    ev=; for s in fsync fdatasync pwrite64 pread64 ftruncate sync_file_range; do
        ev="$ev -e syscalls:sys_enter_$s -e syscalls:sys_exit_$s"; done
    perf record --no-buildid --no-buildid-cache $ev -t $w,$c -o sc.data -- sleep 20

Then `bench/syscalls.py sc.data WRITER_TID CHECKPOINT_TID` prints, per thread, each system call's
count and time; the writer's restarts (its fsyncs come in clusters of three: the WAL before the
copy, the database after it, the WAL's new header) with each fsync's mean time; every sync of the
database file, by either thread, against the pages written to it since the previous one and the
runs of adjacent pages they lie in (a sync's time follows the runs: RESULTS 2026-12-04 16:29);
and, per WAL cycle (between two restarts), the database pages the checkpoint thread wrote and in
how many runs they lie: the scatter that makes the restart's database fsync longer as a soak ages
(bench/RESULTS.md 2026-12-04 13:39).
"""

import collections
import re
import statistics
import subprocess
import sys

CALL = re.compile(r"\s*(\d+)\s+([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)")
# fsyncs of one restart are within this many seconds of each other.
CLUSTER_S = 0.05


def calls(data):
    """(tid, start, seconds, name, args) of every completed call in the trace."""
    out = subprocess.run(
        ["perf", "script", "-i", data, "-F", "tid,time,event,trace"],
        capture_output=True, text=True, check=True,
    ).stdout
    pending, done = {}, []
    for line in out.splitlines():
        m = CALL.match(line)
        if not m:
            continue
        tid, t, kind, name, rest = m.groups()
        if kind == "enter":
            args = dict(kv.split(": ", 1) for kv in rest.split(", ") if ": " in kv)
            pending[tid] = (float(t), name, args)
        elif tid in pending:
            start, name, args = pending.pop(tid)
            done.append((tid, start, float(t) - start, name, args))
    return done


def per_call(cs):
    span = (cs[-1][1] - cs[0][1]) or 1.0
    by = collections.defaultdict(list)
    for c in cs:
        by[c[3]].append(c[2] * 1e3)
    for name, ms in sorted(by.items()):
        ms.sort()
        print(f"  {name:16s} {len(ms):7d} calls {len(ms) / span:8.1f}/s  {sum(ms) / span:7.2f} ms/s"
              f"  mean {statistics.mean(ms) * 1e3:7.1f} us  p99 {ms[int(len(ms) * 0.99)] * 1e3:7.1f} us"
              f"  max {ms[-1]:6.2f} ms")


def runs(pages):
    """How many runs of adjacent page numbers the sorted `pages` lie in."""
    return sum(1 for i, p in enumerate(pages) if i == 0 or p != pages[i - 1] + 1)


def busiest_fd(cs, name):
    """The file descriptor most of the calls `name` in `cs` went to (None: no such call)."""
    fds = collections.Counter(x[4].get("fd") for x in cs if x[3] == name).most_common(1)
    return fds[0][0] if fds else None


def page_of(args):
    """The 4 KiB page of the file a pwrite64's arguments write to."""
    return int(args["pos"], 16) // 4096


def restarts(writer):
    """The writer's fsyncs, grouped into restarts."""
    groups, cur = [], []
    for c in (c for c in writer if c[3] in ("fsync", "fdatasync")):
        if cur and c[1] - cur[-1][1] > CLUSTER_S:
            groups.append(cur)
            cur = []
        cur.append(c)
    if cur:
        groups.append(cur)
    return groups


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data, w, c = sys.argv[1:]
    cs = calls(data)
    writer = [x for x in cs if x[0] == w]
    ckpt = [x for x in cs if x[0] == c]
    for who, mine in (("writer", writer), ("checkpoint thread", ckpt)):
        print(f"{who} ({len(mine)} calls):")
        if mine:
            per_call(mine)
    groups = restarts(writer)
    if not groups:
        return
    print(f"writer restarts: {len(groups)}, each fsync in order (mean ms, max ms):")
    nth = collections.defaultdict(list)
    for g in groups:
        for i, f in enumerate(g):
            nth[i].append(f[2] * 1e3)
    for i, ms in sorted(nth.items()):
        print(f"  fsync {i + 1}: {len(ms)} times, mean {statistics.mean(ms):.3f}, max {max(ms):.2f}")
    database_syncs(writer, ckpt, groups)
    # The database file is the one the checkpoint thread writes most (it reads the WAL).
    db = busiest_fd(ckpt, "pwrite64")
    if db is None:
        return
    bounds = [g[0][1] for g in groups]
    cycles = []
    for a, b in zip(bounds, bounds[1:]):
        pages = sorted({page_of(x[4]) for x in ckpt
                        if x[3] == "pwrite64" and x[4].get("fd") == db and a <= x[1] < b})
        if pages:
            cycles.append((len(pages), runs(pages), pages[-1] - pages[0] + 1))
    if cycles:
        mean = lambda i: statistics.mean(x[i] for x in cycles)
        print(f"database pages the checkpoint thread wrote per WAL cycle ({len(cycles)} cycles): "
              f"{mean(0):.0f} pages in {mean(1):.0f} runs of adjacent pages "
              f"({mean(0) / mean(1):.2f} a run), spread over {mean(2):.0f} pages of the file")


def database_syncs(writer, ckpt, groups):
    """Each sync of the database file (by either thread) against what it had to write: the pages
    written to the database since the previous one, and in how many runs of adjacent pages."""
    # The checkpoint thread writes the database and reads the WAL.
    ckpt_db, ckpt_wal = busiest_fd(ckpt, "pwrite64"), busiest_fd(ckpt, "pread64")
    # The writer's restart syncs the WAL, then the database, then the WAL's new header.
    writer_db = collections.Counter(g[1][4].get("fd") for g in groups if len(g) >= 2).most_common(1)
    if ckpt_db is None or ckpt_wal is None or not writer_db:
        return
    writer_db = writer_db[0][0]
    events = sorted([("writer", x) for x in writer] + [("checkpoint", x) for x in ckpt],
                    key=lambda e: e[1][1])
    pages, rows = set(), []
    for who, (_, _, secs, name, args) in events:
        fd = args.get("fd")
        mine_db = fd == (writer_db if who == "writer" else ckpt_db)
        if name == "pwrite64" and mine_db:
            pages.add(page_of(args))
        elif name in ("fsync", "fdatasync") and (
                mine_db if who == "writer" else fd != ckpt_wal):
            # The checkpoint thread syncs the database through SQLite's descriptor and may
            # through one of hookbin's own: anything but the WAL is the database.
            rows.append((who, len(pages), runs(sorted(pages)), secs * 1e3))
            pages = set()
    if not rows:
        return
    print("database syncs (the pages written to it since the previous one, by either thread):")
    for who in ("writer", "checkpoint"):
        mine = [r for r in rows if r[0] == who]
        if mine:
            m = lambda i: statistics.mean(r[i] for r in mine)
            print(f"  by the {who:10s} {len(mine):5d} syncs: {m(1):6.0f} pages in {m(2):5.0f} runs,"
                  f" {m(3):.2f} ms on average")
    print("  by runs of pages to write:    syncs   mean ms")
    for lo, hi in ((0, 1), (1, 50), (50, 150), (150, 300), (300, 600), (600, 10**9)):
        ms = [r[3] for r in rows if lo <= r[2] < hi]
        if ms:
            label = f"{lo}-{hi - 1}" if hi < 10**9 else f"{lo}+"
            print(f"    {label:>9s} runs          {len(ms):6d}   {statistics.mean(ms):7.2f}")


if __name__ == "__main__":
    main()
