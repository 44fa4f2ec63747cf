//! The PostgreSQL storage ceiling: the least a capture server can do on PostgreSQL and still
//! answer 200 only after the request is committed (to the server's own durability settings, as
//! for hookbin).
//!
//! One writer task owns one connection. Handlers send their row over a bounded queue; the
//! writer takes one, drains whatever else is queued (up to MAX_BATCH), inserts them all with
//! ONE multi-row INSERT (`unnest` over arrays, as hookbin does) in one transaction, commits, and
//! only then replies to each handler (group commit). No bin check, no per-bin ids, no cap, no
//! NOTIFY, no index beyond the primary key.
//!
//! `GET /count` answers the number of stored rows (after the queue ahead of it has been
//! committed), so the harness can check stored == 2xx for this server too.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hookbin_bench_baselines::{arg_value, read_body, serve, text};
use hyper::{Method, StatusCode};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Client, NoTls};

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

async fn write_batch(client: &mut Client, rows: &[&Row]) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let stmt = tx
        .prepare(
            "INSERT INTO requests (method, path, headers, body, received_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::int8[])",
        )
        .await?;
    let methods: Vec<&str> = rows.iter().map(|r| r.method.as_str()).collect();
    let paths: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
    let headers: Vec<&[u8]> = rows.iter().map(|r| r.headers.as_slice()).collect();
    let bodies: Vec<&[u8]> = rows.iter().map(|r| &r.body[..]).collect();
    let at: Vec<i64> = rows.iter().map(|r| r.received_at).collect();
    tx.execute(&stmt, &[&methods, &paths, &headers, &bodies, &at])
        .await?;
    tx.commit().await
}

async fn writer(mut client: Client, mut rx: mpsc::Receiver<Op>) {
    let mut batch: Vec<Op> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
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
            write_batch(&mut client, &rows).await
        };
        let result = result.map_err(|e| e.to_string());
        for op in batch.drain(..) {
            match op {
                Op::Insert(_, reply) => {
                    let _ = reply.send(result.clone());
                }
                Op::Count(reply) => {
                    let count = client
                        .query_one("SELECT count(*) FROM requests", &[])
                        .await
                        .map(|r| r.get::<_, i64>(0))
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
    let url =
        arg_value("--db").unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let (client, connection) = match url.parse::<tokio_postgres::Config>() {
        Ok(config) => config.connect(NoTls).await.unwrap_or_else(|e| {
            eprintln!("error: cannot connect to {url}: {e}");
            std::process::exit(1)
        }),
        Err(e) => {
            eprintln!("error: {url}: {e}");
            std::process::exit(1)
        }
    };
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("pg-capture: connection lost: {e}");
        }
    });
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS requests (
                 id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                 method text NOT NULL,
                 path text NOT NULL,
                 headers bytea NOT NULL,
                 body bytea NOT NULL,
                 received_at bigint NOT NULL
             )",
        )
        .await
        .unwrap_or_else(|e| {
            eprintln!("error: cannot create the table: {e}");
            std::process::exit(1)
        });
    let sync = client
        .query_one("SHOW synchronous_commit", &[])
        .await
        .map(|r| r.get::<_, String>(0))
        .unwrap_or_default();
    println!(
        "pg-capture: synchronous_commit={sync} (the server's durability, as for hookbin) \
         group commit <= {MAX_BATCH} rows per INSERT, queue {QUEUE}"
    );
    let (tx, rx) = mpsc::channel::<Op>(QUEUE);
    tokio::spawn(writer(client, rx));

    serve(
        "pg-capture",
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
