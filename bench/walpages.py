#!/usr/bin/env python3
"""Which b-trees a SQLite database's WAL frames belong to: what each commit writes, by table and index.

usage: bench/walpages.py DB [DB-WAL-COPY]

Reads the frames of the WAL's current generation (the frames whose salts match the WAL header: a
WAL restarted since leaves older frames behind them, which are skipped), counts the frames and
the commits, and names each frame's page with SQLite's `dbstat` table of DB (opened read-only;
it walks every page of the file, so a large database takes a while). DB may be in use: the WAL
is read once, first, and `dbstat` sees the database as of its own read. Pass a copy of the WAL
taken while the server ran (`cp db-wal wal-copy`) to read that instead of DB's current one; the
page names then come from DB as it is now, which is right as long as no page was freed and
reused by another b-tree in between. Page 1 (the file header and the schema's root) is named
`sqlite_schema`; pages no b-tree holds (the free list) `free`.

Prints the frames per commit for each b-tree, to be divided by the captures per commit (the
server's `hookbin_requests_captured_total` over `hookbin_write_batches_total`) for frames per
capture. See bench/README.md ("Where the WAL's bytes go").
"""
import collections
import sqlite3
import struct
import sys

HEADER = 32  # WAL header bytes
FRAME_HEADER = 24


def frames(wal):
    """The WAL's current frames: (page number, is a commit) in order."""
    if len(wal) < HEADER:
        return
    page_size = struct.unpack(">I", wal[8:12])[0]
    salts = wal[16:24]
    at = HEADER
    while at + FRAME_HEADER + page_size <= len(wal):
        page, commit = struct.unpack(">II", wal[at : at + 8])
        if wal[at + 8 : at + 16] != salts:
            return
        yield page, commit != 0
        at += FRAME_HEADER + page_size


def page_names(conn):
    """Page number -> the name of the b-tree holding it, from `dbstat` (every page of the file)."""
    return {page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().split("\n\n")[1])
    db = sys.argv[1]
    with open(sys.argv[2] if len(sys.argv) == 3 else db + "-wal", "rb") as f:
        wal = f.read()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = page_names(conn)
    by_tree = collections.Counter()
    total = commits = 0
    for page, commit in frames(wal):
        by_tree[names.get(page, "free")] += 1
        total += 1
        commits += commit
    print(f"{total} frames in {commits} commits ({total / max(commits, 1):.2f} a commit)")
    for name, n in by_tree.most_common():
        print(f"  {name:28s} {n:8d} frames  {100 * n / total:5.1f}%  {n / max(commits, 1):7.2f} a commit")


if __name__ == "__main__":
    main()
