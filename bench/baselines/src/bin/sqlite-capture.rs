//! The storage ceiling: the least a capture server can do and still answer 200 only after
//! the request is durable (to the same degree as hookbin: WAL, synchronous=NORMAL).
//!
//! One writer thread owns the SQLite connection. Handlers send their row over a bounded
//! queue; the writer takes one, drains whatever else is queued (up to MAX_BATCH), inserts
//! them all in ONE transaction, commits, and only then replies to each handler (group
//! commit). No bin check, no per-bin cap, no indexes beyond the rowid.
//!
//! `GET /count` answers the number of stored rows (after the queue ahead of it has been
//! committed), so the harness can check stored == 2xx for this server too.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hookbin_bench_baselines::{arg_value, read_body, serve, text};
use hyper::{Method, StatusCode};
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

const MAX_BATCH: usize = 512;
const QUEUE: usize = 1024;

struct Row {
    method: String,
    path: String,
    headers: Vec<u8>,
    body: Bytes,
    received_at: i64,
}

enum Op {
    Insert(Row, oneshot::Sender<Result<(), String>>),
    Count(oneshot::Sender<Result<i64, String>>),
}

fn open(path: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    conn.execute_batch(
        "PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS requests (
             id INTEGER PRIMARY KEY,
             method TEXT NOT NULL,
             path TEXT NOT NULL,
             headers BLOB NOT NULL,
             body BLOB NOT NULL,
             received_at INTEGER NOT NULL
         );",
    )?;
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    let sync = match sync {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        3 => "EXTRA",
        _ => "?",
    };
    println!(
        "sqlite-capture: db={path} journal_mode={mode} synchronous={sync} (hookbin's default durability) \
         group commit <= {MAX_BATCH} rows per transaction, queue {QUEUE}"
    );
    Ok(conn)
}

fn write_batch(conn: &mut Connection, rows: &[&Row]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO requests (method, path, headers, body, received_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for row in rows {
            stmt.execute(rusqlite::params![
                row.method,
                row.path,
                row.headers,
                &row.body[..],
                row.received_at
            ])?;
        }
    }
    tx.commit()
}

fn writer(mut conn: Connection, mut rx: mpsc::Receiver<Op>) {
    let mut batch: Vec<Op> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let rows: Vec<&Row> = batch
            .iter()
            .filter_map(|op| match op {
                Op::Insert(row, _) => Some(row),
                Op::Count(_) => None,
            })
            .collect();
        let result = if rows.is_empty() {
            Ok(())
        } else {
            write_batch(&mut conn, &rows)
        };
        let result = result.map_err(|e| e.to_string());
        for op in batch.drain(..) {
            match op {
                Op::Insert(_, reply) => {
                    let _ = reply.send(result.clone());
                }
                Op::Count(reply) => {
                    let count = conn
                        .query_row("SELECT count(*) FROM requests", [], |r| r.get(0))
                        .map_err(|e| e.to_string());
                    let _ = reply.send(count);
                }
            }
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let path = arg_value("--db").unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!("sqlite-capture-{}.db", std::process::id()))
            .to_string_lossy()
            .into_owned()
    });
    let conn = open(&path).unwrap_or_else(|e| {
        eprintln!("error: cannot open {path}: {e}");
        std::process::exit(1)
    });
    let (tx, rx) = mpsc::channel::<Op>(QUEUE);
    // The writer is a plain OS thread that owns the connection.
    std::thread::Builder::new()
        .name("sqlite-writer".into())
        .spawn(move || writer(conn, rx))?;

    serve(
        "sqlite-capture",
        move |req: hyper::Request<hyper::body::Incoming>| {
            let tx = tx.clone();
            async move {
                if req.method() == Method::GET && req.uri().path() == "/count" {
                    let (reply, wait) = oneshot::channel();
                    if tx.send(Op::Count(reply)).await.is_err() {
                        return text(StatusCode::SERVICE_UNAVAILABLE, "writer gone");
                    }
                    return match wait.await {
                        Ok(Ok(n)) => text(StatusCode::OK, n.to_string()),
                        _ => text(StatusCode::INTERNAL_SERVER_ERROR, "count failed"),
                    };
                }
                let received_at = now_ms();
                let (parts, body) = req.into_parts();
                let body = match read_body(body).await {
                    Ok(b) => b,
                    Err(_) => return text(StatusCode::BAD_REQUEST, "bad body"),
                };
                let mut headers = Vec::with_capacity(256);
                for (name, value) in &parts.headers {
                    headers.extend_from_slice(name.as_str().as_bytes());
                    headers.extend_from_slice(b": ");
                    headers.extend_from_slice(value.as_bytes());
                    headers.extend_from_slice(b"\r\n");
                }
                let row = Row {
                    method: parts.method.as_str().to_owned(),
                    path: parts
                        .uri
                        .path_and_query()
                        .map(|p| p.as_str())
                        .unwrap_or("/")
                        .to_owned(),
                    headers,
                    body,
                    received_at,
                };
                let (reply, wait) = oneshot::channel();
                if tx.send(Op::Insert(row, reply)).await.is_err() {
                    return text(StatusCode::SERVICE_UNAVAILABLE, "writer gone");
                }
                match wait.await {
                    Ok(Ok(())) => text(StatusCode::OK, "ok"),
                    _ => text(StatusCode::INTERNAL_SERVER_ERROR, "commit failed"),
                }
            }
        },
    )
    .await
}
