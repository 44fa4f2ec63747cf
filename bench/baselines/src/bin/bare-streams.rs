//! The live-viewer ceiling for `bench/viewers.sh`: the least a server can do and still send
//! every capture of a bin to every open event stream of that bin. Nothing is stored.
//!
//! - `POST /api/bins`: `201 {"id":"..."}`, a new bin (20 characters, as hookbin's ids).
//! - `POST /r/{bin}`: reads the body, gives the capture the bin's next id (1, 2, 3, ...),
//!   appends its event to the bin's pending text (only while a stream is open), answers `200 ok`.
//! - `GET /api/bins/{bin}/stream`: `text/event-stream`; `retry: 2000` and a comment at once,
//!   then the events (`id: N`, `event: request`, `data: {...}`), as many bytes per event as
//!   hookbin's for the load generator's capture ([`TEMPLATE`]).
//!
//! Delivery: every `--gather-ms` (100, hookbin's `GATHER`) one task per bin takes the pending
//! text and broadcasts it as one `Bytes`, shared by every stream, never copied. Each stream
//! sends what it received at its own phase of the period (as hookbin's streams do, so that 500
//! streams do not write in one burst). Streams are served on threads of their own at nice 19, as
//! hookbin's are (`--stream-nice`). A stream further behind than `--buffer` periods of the
//! broadcast plus its queue of 16 writes (hookbin's `STREAM_QUEUE`) loses events: the load
//! generator counts it as incomplete.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use hookbin_bench_baselines::{arg_value, listen_addr, read_body};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{broadcast, mpsc};

/// hookbin's event (bbc2770) for the load generator's capture, read from its stream: `{id}` and
/// `{bin}` are filled in per capture, the rest (the time stamp too) is kept, so each event has
/// hookbin's bytes (253 at id 1).
const TEMPLATE: &str = concat!(
    "id: {id}\nevent: request\ndata: ",
    r#"{"body_size":1024,"body_truncated":false,"content_type":"application/json","id":"{id}","#,
    r#""method":"POST","path":"/r/{bin}","query":"","received_at":"2026-12-02T12:34:34.483Z","#,
    r#""remote_addr":"127.0.0.1","subpath":""}"#,
    "\n\n"
);

/// Writes waiting for one stream's client (hookbin's `STREAM_QUEUE`).
const STREAM_QUEUE: usize = 16;
const BIN_ID_LEN: usize = 20;

struct Bin {
    pending: Mutex<Pending>,
    events: broadcast::Sender<Bytes>,
    /// [`TEMPLATE`] with the bin filled in, split around the ids.
    parts: [String; 3],
}

struct Pending {
    next_id: u64,
    text: BytesMut,
}

type Bins = RwLock<HashMap<String, Arc<Bin>>>;

struct Config {
    gather: Duration,
    buffer: usize,
}

fn new_bin(bins: &Bins, config: &Config) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = format!("{:a>BIN_ID_LEN$}", NEXT.fetch_add(1, Ordering::Relaxed));
    let filled = TEMPLATE.replace("{bin}", &id);
    let mut parts = filled.split("{id}").map(str::to_owned);
    let bin = Arc::new(Bin {
        pending: Mutex::new(Pending {
            next_id: 1,
            text: BytesMut::new(),
        }),
        events: broadcast::channel(config.buffer).0,
        parts: [(); 3].map(|_| parts.next().unwrap_or_default()),
    });
    bins.write().unwrap().insert(id.clone(), bin.clone());
    // The bin's ticker: what the period's captures appended goes to every stream at once.
    let mut tick = tokio::time::interval(config.gather);
    tokio::spawn(async move {
        loop {
            tick.tick().await;
            let text = {
                let mut p = bin.pending.lock().unwrap();
                if p.text.is_empty() {
                    continue;
                }
                p.text.split().freeze()
            };
            let _ = bin.events.send(text);
        }
    });
    id
}

fn capture(bin: &Bin) {
    let mut p = bin.pending.lock().unwrap();
    let id = p.next_id;
    p.next_id += 1;
    // No stream, no event: nobody would read it.
    if bin.events.receiver_count() > 0 {
        let [a, b, c] = &bin.parts;
        let _ = write!(p.text, "{a}{id}{b}{id}{c}");
    }
}

/// A response body fed through a channel (hookbin's `ChannelBody`).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(Full::new(body.into()).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    res
}

fn stream(bin: &Bin, config: &Config) -> Response<Body> {
    // Where in each period this stream sends (golden-ratio steps, as hookbin's `next_phase`).
    static OPENED: AtomicU64 = AtomicU64::new(0);
    let n = OPENED.fetch_add(1, Ordering::Relaxed);
    let phase = config
        .gather
        .mul_f64((n as f64 * 0.618_033_988_749_895).fract());
    let mut events = bin.events.subscribe();
    let (tx, rx) = mpsc::channel::<Bytes>(STREAM_QUEUE);
    tokio::spawn(async move {
        if tx
            .send(Bytes::from_static(b"retry: 2000\n: stream open\n\n"))
            .await
            .is_err()
        {
            return;
        }
        loop {
            let text = match events.recv().await {
                Ok(text) => text,
                // Events lost: the stream is incomplete, and goes on.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            tokio::time::sleep(phase).await;
            if tx.send(text).await.is_err() {
                return;
            }
            // A stream behind sends all it has now (hyper writes up to 16 queued frames with
            // one writev).
            while let Ok(text) = events.try_recv() {
                if tx.send(text).await.is_err() {
                    return;
                }
            }
        }
    });
    let mut res = Response::new(ChannelBody(rx).boxed_unsync());
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

async fn handle(req: Request<Incoming>, bins: &Bins, config: &Config) -> Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let find = |id: &str| bins.read().unwrap().get(id).cloned();
    match (method, segments.as_slice()) {
        (Method::POST, ["api", "bins"]) => {
            let id = new_bin(bins, config);
            text(StatusCode::CREATED, format!("{{\"id\":\"{id}\"}}"))
        }
        (Method::GET, ["api", "bins", id, "stream"]) => match find(id) {
            Some(bin) => stream(&bin, config),
            None => text(StatusCode::NOT_FOUND, "no such bin"),
        },
        (_, ["r", id, ..]) => {
            let Some(bin) = find(id) else {
                return text(StatusCode::NOT_FOUND, "no such bin");
            };
            match read_body(req.into_body()).await {
                Ok(_) => {
                    capture(&bin);
                    text(StatusCode::OK, "ok")
                }
                Err(_) => text(StatusCode::BAD_REQUEST, "bad body"),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// hookbin's layout (`server::StreamRuntime`): a connection whose first request is a `GET` (here
/// only streams are) is served on a runtime of its own, whose threads run at `--stream-nice`
/// (19, as hookbin's), so the kernel runs the captures first.
async fn accept(bins: Arc<Bins>, config: Arc<Config>, streams: Handle) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen_addr()).await?;
    println!(
        "bare-streams: listening on http://{}",
        listener.local_addr()?
    );
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("bare-streams: accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let (bins, config, streams) = (bins.clone(), config.clone(), streams.clone());
        tokio::spawn(async move {
            let mut head = [0u8; 4];
            let is_get = matches!(socket.peek(&mut head).await, Ok(4) if &head == b"GET ");
            if !is_get {
                return serve_connection(socket, bins, config).await;
            }
            // Registered with the stream runtime, whose threads then wait for its readiness.
            let socket = socket.into_std().and_then(|s| {
                let _entered = streams.enter();
                TcpStream::from_std(s)
            });
            match socket {
                Ok(socket) => drop(streams.spawn(serve_connection(socket, bins, config))),
                Err(e) => eprintln!("bare-streams: cannot move a stream's connection: {e}"),
            }
        });
    }
}

async fn serve_connection(socket: TcpStream, bins: Arc<Bins>, config: Arc<Config>) {
    let svc = service_fn(move |req| {
        let (bins, config) = (bins.clone(), config.clone());
        async move { Ok::<_, Infallible>(handle(req, &bins, &config).await) }
    });
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(socket), svc)
        .await;
}

/// Sets the calling thread's nice value (on Linux, `setpriority` with a thread id applies to
/// that thread only).
fn set_nice(nice: i32) {
    // SAFETY: plain system calls on the calling thread, no memory passed.
    let failed =
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) != 0 };
    if failed {
        eprintln!("bare-streams: cannot set a stream thread's nice value to {nice}");
    }
}

fn main() -> std::io::Result<()> {
    let num = |name: &str, default: i64| {
        arg_value(name).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("error: bad {name} {v:?}");
                std::process::exit(2)
            })
        })
    };
    let config = Arc::new(Config {
        gather: Duration::from_millis(num("--gather-ms", 100).max(1) as u64),
        buffer: num("--buffer", 16).max(1) as usize,
    });
    let nice = num("--stream-nice", 19) as i32;
    println!(
        "bare-streams: events broadcast every {} ms, broadcast buffer {} periods, stream queue \
         {STREAM_QUEUE} writes, stream threads at nice {nice}, {} bytes an event at id 1",
        config.gather.as_millis(),
        config.buffer,
        TEMPLATE
            .replace("{bin}", &"a".repeat(BIN_ID_LEN))
            .replace("{id}", "1")
            .len()
    );
    // Both runtimes with as many threads as cores, as hookbin's.
    let streams = tokio::runtime::Builder::new_multi_thread()
        .thread_name("streams")
        .on_thread_start(move || set_nice(nice))
        .enable_all()
        .build()?;
    let main = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    main.block_on(accept(Arc::default(), config, streams.handle().clone()))
}
