#!/usr/bin/env python3
"""WAL frames per capture of the writer's statements on other table layouts: a model, not hookbin.

usage: bench/layouts.py LAYOUT --bins N --fill ROWS --cap N --batch N --commits N [--dir D]

Builds a scratch database in D (default /tmp) with hookbin's tables as of schema version 6 or a
variant, fills every bin with ROWS requests (round-robin, in large transactions), then runs
COMMITS transactions of BATCH captures to bins picked at random, each as the writer does it
(`store_bin` in src/storage/sqlite/writer.rs: the bin's row read once, a full bin's oldest rows
overwritten in place, new ones inserted, the bin's counters updated once), and counts the WAL
frames they wrote by b-tree (bench/walpages.py's reader). Rows have the shape of run.sh's 1 KiB
JSON capture as hookbin stores it (a ~700-byte packed body, ~300 bytes of headers).

Layouts:
  current   schema version 6: bins keyed by their text id, requests indexed by (bin_id, seq)
  intkey    an integer bin number in the requests and their index (bin, seq), and the bin's
            counters in a narrow table of their own keyed by it
  ring      like current, but the index is (bin_id, slot) with slot = seq % cap, so a full bin's
            capture overwrites the row in the slot of the request it evicts and no index entry
            moves (reads find request seq at slot seq % cap): what schema version 7 did
  lazy:K    like current, but a full bin evicts nothing until it holds cap + K requests, then
            deletes its oldest K in one statement (reads would hide the surplus)
  clustered like ring, but with no index: a request's row id is its bin's number (bins get an
            integer, in the order they were made) times 2^32 plus its slot, so the table itself
            is ordered by (bin, slot), and a capture's row is found, overwritten or appended by
            its row id alone

It models the writes only: the random choice of bins is not loadgen's, so absolute figures run
6-50% above hookbin's (bench/RESULTS.md, 2026-12-03 09:30); compare layouts with each other.
"""
import argparse
import collections
import os
import random
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from walpages import frames, page_names  # noqa: E402

COLUMNS = ("seq, received_at, method, path, subpath, query, content_type, body_size, "
           "body_truncated, remote_addr, http_version, headers, body, response, body_codec")
# A full bin's overwrite of its evicted row: every column of COLUMNS, then the row id.
OVERWRITE = "UPDATE bin_requests SET " + ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(",")) + " WHERE id = ?"
REQUESTS = """CREATE TABLE bin_requests (id INTEGER PRIMARY KEY, {key}, seq INTEGER NOT NULL,
    received_at INTEGER NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL, subpath TEXT NOT NULL,
    query TEXT NOT NULL, content_type TEXT, body_size INTEGER NOT NULL,
    body_truncated INTEGER NOT NULL, remote_addr TEXT NOT NULL, http_version TEXT NOT NULL,
    headers BLOB NOT NULL, body BLOB NOT NULL, response TEXT,
    body_codec INTEGER NOT NULL DEFAULT 0{slot});
CREATE UNIQUE INDEX bin_requests_by_bin ON bin_requests ({key_name}, {order});"""
TEXT_BINS = """CREATE TABLE bins (id TEXT PRIMARY KEY NOT NULL, created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL, response TEXT, request_count INTEGER NOT NULL DEFAULT 0,
    last_request_id INTEGER NOT NULL DEFAULT 0, bytes_used INTEGER NOT NULL DEFAULT 0,
    view_token_hash BLOB) WITHOUT ROWID;
CREATE INDEX bins_by_expiry ON bins (expires_at);"""
INT_BINS = """CREATE TABLE bins (num INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL,
    created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, response TEXT, view_token_hash BLOB);
CREATE INDEX bins_by_expiry ON bins (expires_at);
CREATE TABLE bin_tallies (num INTEGER PRIMARY KEY, request_count INTEGER NOT NULL DEFAULT 0,
    last_request_id INTEGER NOT NULL DEFAULT 0, bytes_used INTEGER NOT NULL DEFAULT 0);"""
NOW = 1_780_000_000_000
ROW_BYTES = 1000


class Layout:
    def __init__(self, name, cap):
        self.name, self.cap = name, cap
        self.int_key = name == "intkey"
        self.ring = name == "ring"
        self.lazy = int(name.split(":")[1]) if name.startswith("lazy:") else 0
        self.clustered = name == "clustered"
        self.key_name = "bin" if self.int_key else "bin_id"

    def row_id(self, num, seq):
        """The clustered layout's row id of request seq of bin number num."""
        return (num << 32) | (seq % self.cap)

    def schema(self):
        if self.clustered:
            return (TEXT_BINS.replace("view_token_hash BLOB)", "view_token_hash BLOB, num INTEGER NOT NULL UNIQUE)")
                    + "\n" + REQUESTS.split(";")[0].replace("{key}, ", "").replace("{slot}", "") + ";")
        bins = INT_BINS if self.int_key else TEXT_BINS
        key = "bin INTEGER NOT NULL" if self.int_key else "bin_id TEXT NOT NULL"
        return bins + "\n" + REQUESTS.format(
            key=key, key_name=self.key_name, order="slot" if self.ring else "seq",
            slot=", slot INTEGER" if self.ring else "")

    def insert_sql(self):
        if self.clustered:
            return f"INSERT INTO bin_requests (id, {COLUMNS}) VALUES ({', '.join('?' * 16)})"
        cols = f"{self.key_name}, {COLUMNS}" + (", slot" if self.ring else "")
        return f"INSERT INTO bin_requests ({cols}) VALUES ({', '.join('?' * (len(cols.split(','))))})"

    def row(self, seq):
        body = os.urandom(350) + b"x" * 350
        headers = os.urandom(150) + b"h" * 150
        row = (seq, NOW + seq, "POST", "/r/" + "b" * 20, "", "", "application/json", 1024, 0,
               "127.0.0.1", "HTTP/1.1", headers, body,
               '{"status":200,"headers":[],"body_size":2,"delay_ms":0}', 1)
        return row + ((seq % self.cap,) if self.ring else ())

    def insert_args(self, key, seq, row):
        if self.clustered:
            return (self.row_id(key[0], seq),) + row
        return (key,) + row

    def add_bin(self, conn, num, bin_id):
        if self.int_key:
            conn.execute("INSERT INTO bins (num, id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                         (num, bin_id, NOW, NOW + 3_600_000 + num))
            conn.execute("INSERT INTO bin_tallies (num) VALUES (?)", (num,))
        elif self.clustered:
            conn.execute("INSERT INTO bins (id, created_at, expires_at, num) VALUES (?, ?, ?, ?)",
                         (bin_id, NOW, NOW + 3_600_000 + num, num))
        else:
            conn.execute("INSERT INTO bins (id, created_at, expires_at) VALUES (?, ?, ?)",
                         (bin_id, NOW, NOW + 3_600_000 + num))

    def read_bin(self, conn, num, bin_id):
        if self.int_key:
            conn.execute("SELECT num, expires_at FROM bins WHERE id = ?", (bin_id,)).fetchone()
            conn.execute("SELECT request_count, last_request_id, bytes_used FROM bin_tallies "
                         "WHERE num = ?", (num,)).fetchone()
        else:
            conn.execute("SELECT expires_at, request_count, last_request_id, bytes_used FROM bins "
                         "WHERE id = ?", (bin_id,)).fetchone()

    def set_counts(self, conn, key, count, last):
        if self.clustered:
            key = key[1]
        table, col = ("bin_tallies", "num") if self.int_key else ("bins", "id")
        conn.execute(f"UPDATE {table} SET request_count = ?, last_request_id = ?, bytes_used = ? "
                     f"WHERE {col} = ?", (count, last, count * ROW_BYTES, key))

    def oldest(self, conn, key, last, n):
        """Row ids of the n requests a full bin overwrites for its next n (seq last + 1...)."""
        if n <= 0:
            return []
        if self.clustered:  # key is (bin number, text id): the slots are known, nothing is read
            return [self.row_id(key[0], last + 1 + j) for j in range(n)]
        if self.ring:
            return [conn.execute(f"SELECT id FROM bin_requests WHERE {self.key_name} = ? AND slot = ?",
                                 (key, (last + 1 + j) % self.cap)).fetchone()[0] for j in range(n)]
        return [r[0] for r in conn.execute(
            f"SELECT id FROM bin_requests INDEXED BY bin_requests_by_bin WHERE {self.key_name} = ? "
            "AND seq > 0 AND seq < ? LIMIT ?", (key, last + 1, n))]


def remove_db(db):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


def main():
    p = argparse.ArgumentParser(description="WAL frames per capture of other table layouts")
    p.add_argument("layout")
    p.add_argument("--bins", type=int, required=True)
    p.add_argument("--fill", type=int, required=True, help="requests per bin before measuring")
    p.add_argument("--cap", type=int, required=True, help="requests a bin keeps")
    p.add_argument("--batch", type=int, required=True, help="captures per commit")
    p.add_argument("--commits", type=int, required=True)
    p.add_argument("--dir", default="/tmp")
    a = p.parse_args()
    layout = Layout(a.layout, a.cap)
    db = os.path.join(a.dir, f"layouts-{a.layout.replace(':', '-')}.db")
    remove_db(db)
    rnd = random.Random(7)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # frames are what is counted, not time
    conn.execute("PRAGMA cache_size = -16384")  # the writer's 16 MiB
    conn.executescript(layout.schema())
    ids = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(20))
           for _ in range(a.bins)]
    keys = list(range(1, a.bins + 1)) if layout.int_key else ids
    if layout.clustered:
        keys = list(enumerate(ids, 1))
    insert = layout.insert_sql()
    conn.execute("BEGIN")
    for num, bin_id in enumerate(ids, 1):
        layout.add_bin(conn, num, bin_id)
    conn.execute("COMMIT")
    for seq in range(1, a.fill + 1):
        conn.execute("BEGIN")
        for key in keys:
            conn.execute(insert, layout.insert_args(key, seq, layout.row(seq)))
        conn.execute("COMMIT")
    count = [min(a.fill, a.cap)] * a.bins  # a fill beyond the cap is not modelled
    last = [a.fill] * a.bins
    for i, key in enumerate(keys):
        layout.set_counts(conn, key, count[i], last[i])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    for _ in range(a.commits):
        conn.execute("BEGIN IMMEDIATE")
        picks = collections.Counter(rnd.randrange(a.bins) for _ in range(a.batch))
        for i, m in picks.items():
            key = keys[i]
            layout.read_bin(conn, i + 1, ids[i])
            if layout.lazy:
                overwrite = []
                if count[i] + m > a.cap + layout.lazy:
                    conn.execute(f"DELETE FROM bin_requests WHERE {layout.key_name} = ? AND seq <= ?",
                                 (key, last[i] + m - a.cap))
                    count[i] = a.cap - m
            else:
                overwrite = layout.oldest(conn, key, last[i], count[i] + m - a.cap)
            for j in range(m):
                last[i] += 1
                row = layout.row(last[i])
                if j < len(overwrite):
                    conn.execute(OVERWRITE, row[:15] + (overwrite[j],))
                else:
                    conn.execute(insert, layout.insert_args(key, last[i], row))
            count[i] += m - len(overwrite)
            layout.set_counts(conn, key, count[i], last[i])
        conn.execute("COMMIT")
    names = page_names(conn)
    with open(db + "-wal", "rb") as f:
        by_tree = collections.Counter(names.get(page, "free") for page, _ in frames(f.read()))
    captures = a.commits * a.batch
    total = sum(by_tree.values())
    index_pages = conn.execute("SELECT count(*) FROM dbstat WHERE name = 'bin_requests_by_bin'").fetchone()[0]
    # (the clustered layout has no such index: 0)
    print(f"{a.layout:8s} bins {a.bins} fill {a.fill} cap {a.cap} batch {a.batch}: "
          f"{total / captures:.3f} frames a capture; the requests' index {index_pages} pages")
    for name, n in by_tree.most_common():
        print(f"    {name:24s} {n / captures:.3f}")
    conn.close()
    remove_db(db)


if __name__ == "__main__":
    main()
