-- hookbin database schema for PostgreSQL, version 2 (the `schema_version` table).
--
-- Embedded in the binary (src/storage/postgres/schema.rs) and applied in one transaction when the
-- database has no hookbin tables yet; a database made by an older hookbin is brought up to this
-- version by the migrations in src/storage/postgres/schema.rs, under an advisory lock, so that
-- several nodes starting at once migrate it exactly once. The same tables as schema.sql (SQLite),
-- in PostgreSQL's types.
--
-- On Citus (docs/scale-out.md): bin_requests is distributed by bin_id (every query names one bin,
-- and its primary key starts with bin_id), bins too, co-located with it.

-- A bin: the unguessable capture URL `/r/{id}` and what it answers.
CREATE TABLE bins (
    id              text    PRIMARY KEY,
    created_at      bigint  NOT NULL,            -- unix milliseconds
    expires_at      bigint  NOT NULL,            -- unix milliseconds; expired bins answer 404
    response        text,                        -- custom ResponseSpec as JSON; NULL = default 200 ok
    request_count   bigint  NOT NULL DEFAULT 0,  -- kept by the writers so the per-bin cap costs no count(*)
    -- The newest request id (bin_requests.seq) ever given in this bin, even if that request was
    -- deleted since: the next capture gets this + 1. Writers lock the bin's row (FOR UPDATE)
    -- while they number its captures, so two nodes never give the same id.
    last_request_id bigint  NOT NULL DEFAULT 0,
    -- Stored bytes of the bin's requests (body + headers columns), kept by the writers for
    -- --max-bin-bytes, like request_count for the per-bin cap.
    bytes_used      bigint  NOT NULL DEFAULT 0,
    -- A private bin: SHA-256 of its view token (32 bytes); NULL for a public bin. The token
    -- itself is shown once, at creation, never stored.
    view_token_hash bytea
);

-- The reaper walks bins by expiry.
CREATE INDEX bins_by_expiry ON bins (expires_at);

-- One captured request. The public id is (bin_id, seq): 1, 2, 3... within the bin.
--
-- No foreign key to bins (there was one up to version 1): its check is a query per inserted row,
-- which cost more than the rest of the insert (19 of 33 us per row, measured). What it promised
-- holds by construction instead: a writer inserts only while it holds the bin's row locked
-- (FOR UPDATE) and sees it live, and every deletion of a bin (DELETE /api/bins/{id}, the reaper)
-- deletes the bin's row first and its requests in a later statement of the same transaction,
-- so it waits for such a writer and then sees what it committed: no request outlives its bin.
-- Delete bins only through hookbin (or delete their requests too).
CREATE TABLE bin_requests (
    bin_id         text     NOT NULL,
    seq            bigint   NOT NULL,
    received_at    bigint   NOT NULL,            -- unix milliseconds
    method         text     NOT NULL,
    path           text     NOT NULL,            -- as received, percent-encoding kept, no query
    subpath        text     NOT NULL,            -- after /r/{bin}: '' or '/...'
    query          text     NOT NULL,            -- raw, without '?'
    content_type   text,                         -- first Content-Type value (lossy text), for lists
    body_size      bigint   NOT NULL,            -- full size, even when the stored body is truncated
    body_truncated boolean  NOT NULL,
    remote_addr    text     NOT NULL,            -- client IP, no port
    http_version   text     NOT NULL,            -- 'HTTP/1.0' or 'HTTP/1.1'
    headers        bytea    NOT NULL,            -- ordered (name, value) pairs, see src/storage/headers.rs
    body           bytea    NOT NULL,            -- raw bytes exactly as received
    -- What hookbin answered, as sent: {"status", "headers": [[name, value]...], "body_size",
    -- "delay_ms"} (the same JSON as SQLite's column).
    response       text,
    -- Lookups by public id, newest-first listing, cursor pagination, eviction of the oldest and
    -- the cascade all use this index.
    PRIMARY KEY (bin_id, seq)
);
