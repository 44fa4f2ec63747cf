-- hookbin database schema, version 8 (`PRAGMA user_version`).
--
-- Embedded in the binary (src/storage/schema.rs) and applied in one transaction when the database
-- file is new; a file made by an older hookbin is brought up to this version by the migrations in
-- src/storage/schema.rs. The connection pragmas (WAL, foreign_keys, busy_timeout, synchronous) are
-- set per connection in code, because SQLite does not persist most of them in the file.

-- A bin: the unguessable capture URL `/r/{id}` and what it answers.
CREATE TABLE bins (
    id            TEXT    PRIMARY KEY NOT NULL,
    created_at    INTEGER NOT NULL,              -- unix milliseconds
    expires_at    INTEGER NOT NULL,              -- unix milliseconds; expired bins answer 404
    response      TEXT,                          -- custom ResponseSpec as JSON; NULL = default 200 ok
    request_count INTEGER NOT NULL DEFAULT 0,    -- kept by the writer so the per-bin cap costs no COUNT(*)
    -- The newest request id (bin_requests.seq) ever given in this bin, even if that request was
    -- deleted since: the next capture gets this + 1, so a request id (and an event stream's
    -- Last-Event-ID) always means the same request.
    last_request_id INTEGER NOT NULL DEFAULT 0,
    -- Body + header bytes of the bin's requests as received (a compressed body counts its
    -- body_size), kept by the writer for --max-bin-bytes.
    bytes_used    INTEGER NOT NULL DEFAULT 0,
    -- A private bin: SHA-256 of its view token (32 bytes); NULL for a public bin. Reads of a
    -- private bin need the token; the token itself is shown once, at creation, never stored.
    view_token_hash BLOB,
    -- Slots of the bin's ring: the request cap in force at its first capture; 0 until then. A
    -- request is stored in slot seq % ring, so that a full bin writes each capture over the
    -- request it evicts, index entry included (src/storage/sqlite/ring.rs).
    ring          INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- The reaper walks bins by expiry.
CREATE INDEX bins_by_expiry ON bins (expires_at);

-- One captured request. Columns the request list needs come first; `headers` and `body` come last
-- so that listing summaries never reads their overflow pages.
CREATE TABLE bin_requests (
    -- Internal row id, never shown: SQLite picks it. Not AUTOINCREMENT: its per-insert
    -- sqlite_sequence update cost 15% of capture throughput, and nothing relies on its order.
    id             INTEGER PRIMARY KEY,
    bin_id         TEXT    NOT NULL REFERENCES bins (id) ON DELETE CASCADE,
    -- The public request id: 1, 2, 3... within the bin, given by the writer, never reused (see
    -- bins.last_request_id). Per bin, so that a sender learns nothing about other bins' traffic.
    seq            INTEGER NOT NULL,
    slot           INTEGER NOT NULL,             -- seq % bins.ring
    received_at    INTEGER NOT NULL,             -- unix milliseconds
    method         TEXT    NOT NULL,
    path           TEXT    NOT NULL,             -- as received, percent-encoding kept, no query
    subpath        TEXT    NOT NULL,             -- after /r/{bin}: '' or '/...'
    query          TEXT    NOT NULL,             -- raw, without '?'
    content_type   TEXT,                         -- first Content-Type value (lossy text), for lists
    body_size      INTEGER NOT NULL,             -- full size, even when the stored body is truncated
    body_truncated INTEGER NOT NULL,             -- 0 or 1
    remote_addr    TEXT    NOT NULL,             -- client IP, no port
    http_version   TEXT    NOT NULL,             -- 'HTTP/1.0' or 'HTTP/1.1'
    headers        BLOB    NOT NULL,             -- ordered (name, value) pairs, see src/storage/headers.rs
    body           BLOB    NOT NULL,             -- the bytes exactly as received, or packed (body_codec)
    -- What hookbin answered, as sent: {"status", "headers": [[name, value]...], "body_size",
    -- "delay_ms"}, when the bin's `bin_responses` do not hold it (see `response_n`); NULL for
    -- requests captured before version 5. Last, like a column added by ALTER TABLE, so that old
    -- and new files have one shape; it is only read with the body.
    response       TEXT,
    -- How `body` holds the bytes: 0 as received, 1 compressed (one LZ4 block that unpacks to
    -- body_size bytes; never a truncated body). Compressed when that saves an eighth or more, so
    -- that more rows fit a page. Last, like `response`.
    body_codec     INTEGER NOT NULL DEFAULT 0,
    -- What hookbin answered, when it is one of the bin's `bin_responses`: its `n` there, and
    -- `response` is NULL. Since version 8; last, like `response`.
    response_n     INTEGER
);

-- Lookups by public id, newest-first listing, cursor pagination, per-bin eviction of the oldest,
-- and the foreign key's cascade all use this index. By slot, not by seq: a capture that
-- overwrites the request it evicts keeps the slot, and so leaves the index untouched.
CREATE UNIQUE INDEX bin_requests_by_bin ON bin_requests (bin_id, slot);

-- The answers hookbin sent to a bin's captures, each stored once (version 8): a bin answers its
-- captures with a handful of distinct responses (its default or custom one, a 413), and the
-- record of one, some 260 bytes, was half of a small capture's row. A bin keeps at most 16; a
-- capture whose answer is not among them once there are 16 stores it in its own row
-- (`bin_requests.response`). Removed with the bin, and when its requests are cleared.
CREATE TABLE bin_responses (
    bin_id TEXT    NOT NULL REFERENCES bins (id) ON DELETE CASCADE,
    n      INTEGER NOT NULL,                     -- 1, 2, ... within the bin
    record TEXT    NOT NULL,                     -- as bin_requests.response
    PRIMARY KEY (bin_id, n)
) WITHOUT ROWID;
