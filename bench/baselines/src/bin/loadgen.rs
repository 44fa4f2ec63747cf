//! A paced load generator and event-stream counter for `bench/soak.sh`, `bench/viewers.sh` and
//! `bench/growth.sh` (wrk can only drive a closed loop, and wrk2, which paces, is not in Debian).
//!
//! `loadgen capture`: POSTs a 1 KiB JSON body (the same body as `bench/run.sh`) over `--conns`
//! keep-alive connections, either as fast as answers come back (`--rate 0`, a closed loop like
//! wrk) or at `--rate` requests per second in all. Paced requests are sent on a fixed schedule
//! per connection and their latency runs from the *scheduled* send time, so a server that falls
//! behind shows it in the latencies instead of slowing the load down (no coordinated omission).
//! Every `--interval` seconds it prints one CSV row (throughput, latency percentiles of that
//! interval, and optionally a process's RSS and files' sizes); at the end one `LOADGEN ...` line
//! for the whole run. With `--new-bin-every SECS` it creates bins as it goes (`POST
//! /api/bins`) and spreads captures over the bins younger than `--bin-life`, so bins are created
//! and expire all the time.
//!
//! `loadgen viewers`: opens `--streams` event streams (`GET /api/bins/{bin}/stream`) on one bin,
//! `--per-addr` of them from each source address 127.0.0.2, 127.0.0.3, ..., then runs the
//! capture load above on that bin, then waits until every stream has received every committed
//! capture, and checks that each stream got ids 1, 2, 3, ... with no gap and no duplicate.
//!
//! Traffic goes to the address given (the scripts give 127.0.0.1 only). Hand-rolled HTTP/1.1:
//! the requests are fixed, the answers are hookbin's, and a client library would cost the
//! load generator CPU that the server under test needs on a 2-core machine.

use std::collections::VecDeque;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn usage() -> ! {
    eprintln!(
        "usage: loadgen capture --addr HOST:PORT (--bin ID[,ID...] | --bins-file FILE |\n\
         \x20                    --new-bin-every SECS [--bin-life SECS])\n\
         \x20                    [--rate N] [--conns N] [--duration SECS] [--interval SECS]\n\
         \x20                    [--window SECS] [--csv FILE] [--pid PID] [--files A,B,...]\n\
         \x20      loadgen viewers --addr HOST:PORT --bin ID --streams N [--per-addr N]\n\
         \x20                    [--rate N] [--conns N] [--duration SECS] [--catch-up SECS]"
    );
    std::process::exit(2)
}

/// `--name VALUE` parsed as `T`, or `default`.
fn opt<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    match args.iter().position(|a| a == name) {
        None => default,
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("loadgen: bad or missing value for {name}");
                std::process::exit(2)
            }),
    }
}

fn opt_str(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(mode) = args.first().cloned() else {
        usage()
    };
    // Two workers, like the servers under test: the load generator shares the same 2 cores.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opt(&args, "--workers", 2))
        .thread_name("capture")
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = rt.block_on(async move {
        match mode.as_str() {
            "capture" => capture_main(&args).await,
            "viewers" => viewers_main(&args).await,
            _ => usage(),
        }
    });
    std::process::exit(code);
}

// ------------------------------------------------------------------------------------------
// Options and the load

#[derive(Clone)]
struct Load {
    addr: SocketAddr,
    /// Requests per second in all; 0 = closed loop.
    rate: f64,
    conns: usize,
    duration: Duration,
    interval: Duration,
    /// Also print a `WINDOW` line of percentiles every this long (a multiple of `interval`).
    window: Option<Duration>,
}

impl Load {
    fn from_args(args: &[String]) -> Load {
        let addr = opt_str(args, "--addr").unwrap_or_else(|| usage());
        Load {
            addr: addr.parse().unwrap_or_else(|e| {
                eprintln!("loadgen: bad --addr {addr}: {e}");
                std::process::exit(2)
            }),
            rate: opt(args, "--rate", 0.0),
            conns: opt(args, "--conns", 50usize).max(1),
            duration: Duration::from_secs_f64(opt(args, "--duration", 10.0)),
            interval: Duration::from_secs_f64(opt(args, "--interval", 1.0)),
            window: opt_str(args, "--window")
                .and_then(|w| w.parse::<f64>().ok())
                .map(Duration::from_secs_f64),
        }
    }
}

/// The bins captures go to: one fixed bin, or bins made as the load runs.
struct Bins {
    live: Mutex<VecDeque<(Arc<str>, Instant)>>,
    next: AtomicU64,
    life: Duration,
}

impl Bins {
    /// Fixed bins: one id, or several separated by commas (captures go round-robin).
    fn fixed(ids: &str) -> Arc<Bins> {
        let now = Instant::now();
        Arc::new(Bins {
            live: Mutex::new(ids.split(',').map(|id| (Arc::from(id), now)).collect()),
            next: AtomicU64::new(0),
            life: Duration::MAX,
        })
    }

    /// The next bin, round-robin over the live ones; old ones are dropped (the newest never).
    fn pick(&self) -> Option<Arc<str>> {
        let mut live = self.live.lock().unwrap();
        while live.len() > 1 && live.front().is_some_and(|(_, t)| t.elapsed() > self.life) {
            live.pop_front();
        }
        let n = live.len() as u64;
        if n == 0 {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % n;
        live.get(i as usize).map(|(id, _)| id.clone())
    }

    fn add(&self, id: &str) {
        self.live
            .lock()
            .unwrap()
            .push_back((Arc::from(id), Instant::now()));
    }
}

/// The 1 KiB JSON body of `bench/run.sh`.
fn body() -> Vec<u8> {
    let prefix = r#"{"type":"invoice.paid","id":"evt_1PqRsTuVwXyZ0123","created":1700000000,"livemode":false,"data":{"object":{"id":"in_1PqRsT","amount_paid":4200,"currency":"eur","customer":"cus_Q1w2E3r4T5y6","note":""#;
    let suffix = r#""}}}"#;
    let mut b = prefix.as_bytes().to_vec();
    b.resize(1024 - suffix.len(), b'x');
    b.extend_from_slice(suffix.as_bytes());
    b
}

fn capture_request(host: SocketAddr, bin: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /r/{bin} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// What the senders record; swapped out every interval.
#[derive(Default)]
struct Tally {
    ok: u64,
    non2xx: u64,
    errors: u64,
    /// Microseconds.
    latencies: Vec<u32>,
}

struct Shared {
    interval: Mutex<Tally>,
    window: Mutex<Tally>,
    total: Mutex<Tally>,
    sent: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn record(&self, status: Option<u16>, latency: Duration) {
        let us = latency.as_micros().min(u32::MAX as u128) as u32;
        for t in [&self.interval, &self.window, &self.total] {
            let mut t = t.lock().unwrap();
            match status {
                Some(200..=299) => {
                    t.ok += 1;
                    t.latencies.push(us);
                }
                Some(_) => {
                    t.non2xx += 1;
                    t.latencies.push(us);
                }
                None => t.errors += 1,
            }
        }
    }
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs the load; returns the whole run's tally once every request in flight has its answer.
async fn run_load(load: &Load, bins: Arc<Bins>, mut sample: Sampler) -> (Tally, Duration) {
    let shared = Arc::new(Shared {
        interval: Mutex::new(Tally::default()),
        window: Mutex::new(Tally::default()),
        total: Mutex::new(Tally::default()),
        sent: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let body = Arc::new(body());
    let start = Instant::now() + Duration::from_millis(20);
    let mut tasks = Vec::new();
    for c in 0..load.conns {
        let (shared, bins, body, load) = (shared.clone(), bins.clone(), body.clone(), load.clone());
        tasks.push(tokio::spawn(async move {
            sender(c, &load, start, &shared, &bins, &body).await
        }));
    }
    // Interval rows, then stop.
    let end = start + load.duration;
    let mut tick = start + load.interval;
    let mut window_start = start;
    sample.header();
    while tick <= end + Duration::from_millis(1) {
        tokio::time::sleep_until(tick.into()).await;
        let t = std::mem::take(&mut *shared.interval.lock().unwrap());
        sample.row(tick - start, load.interval, t);
        if let Some(w) = load
            .window
            .filter(|w| tick + Duration::from_millis(1) >= window_start + *w)
        {
            let mut t = std::mem::take(&mut *shared.window.lock().unwrap());
            let line = summary_line(&mut t, tick - window_start, 0);
            let from = (window_start - start).as_secs_f64();
            println!(
                "WINDOW from_s={from:.0} to_s={:.0} {}",
                (tick - start).as_secs_f64(),
                line.trim_start_matches("LOADGEN sent=0 ")
            );
            window_start += w;
        }
        tick += load.interval;
    }
    shared.stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = start.elapsed();
    let total = std::mem::take(&mut *shared.total.lock().unwrap());
    (total, elapsed)
}

/// One connection's requests, on its share of the schedule.
async fn sender(c: usize, load: &Load, start: Instant, shared: &Shared, bins: &Bins, body: &[u8]) {
    // Connections start spread over one period, not all at once.
    let period = if load.rate > 0.0 {
        Some(Duration::from_secs_f64(load.conns as f64 / load.rate))
    } else {
        None
    };
    let mut due =
        start + period.map_or(Duration::ZERO, |p| p.mul_f64(c as f64 / load.conns as f64));
    let mut conn: Option<Conn> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        // Latency runs from the scheduled time when the schedule is behind (the server made it
        // late), else from the wake-up: tokio's timer wakes up to 1 ms late, which is not the
        // server's doing.
        let mut from = due;
        if period.is_some() && due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
            from = Instant::now();
        }
        if period.is_none() {
            from = Instant::now();
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let Some(bin) = bins.pick() else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if conn.is_none() {
            conn = Conn::open(load.addr, None).await.ok();
        }
        shared.sent.fetch_add(1, Ordering::Relaxed);
        let status = match conn.as_mut() {
            Some(k) => k
                .roundtrip(&capture_request(load.addr, &bin, body))
                .await
                .ok(),
            None => None,
        };
        if status.is_none() {
            conn = None;
        }
        shared.record(status, from.elapsed());
        if let Some(p) = period {
            due += p;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Interval rows: CSV to a file and a short line to stderr

struct Sampler {
    csv: Option<std::fs::File>,
    pid: Option<u32>,
    files: Vec<String>,
    quiet: bool,
}

impl Sampler {
    fn from_args(args: &[String], quiet: bool) -> Sampler {
        let csv = opt_str(args, "--csv").map(|p| {
            std::fs::File::create(&p).unwrap_or_else(|e| {
                eprintln!("loadgen: cannot create {p}: {e}");
                std::process::exit(1)
            })
        });
        Sampler {
            csv,
            pid: opt_str(args, "--pid").and_then(|p| p.parse().ok()),
            files: opt_str(args, "--files")
                .map(|f| f.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
            quiet,
        }
    }

    fn header(&mut self) {
        let mut h = "t_s,rps,ok,non2xx,errors,p50_ms,p99_ms,max_ms,rss_kb".to_owned();
        for f in &self.files {
            let name = std::path::Path::new(f)
                .file_name()
                .map_or(f.clone(), |n| n.to_string_lossy().into_owned());
            h.push_str(&format!(",{}_bytes", name.replace([',', ' '], "_")));
        }
        if let Some(csv) = self.csv.as_mut() {
            let _ = writeln!(csv, "{h}");
        }
    }

    fn row(&mut self, at: Duration, length: Duration, mut t: Tally) {
        t.latencies.sort_unstable();
        let ms = |us: u32| us as f64 / 1000.0;
        let rps = (t.ok + t.non2xx) as f64 / length.as_secs_f64();
        let rss = self.pid.map_or(0, rss_kb);
        let mut row = format!(
            "{:.1},{:.1},{},{},{},{:.3},{:.3},{:.3},{}",
            at.as_secs_f64(),
            rps,
            t.ok,
            t.non2xx,
            t.errors,
            ms(percentile(&t.latencies, 50.0)),
            ms(percentile(&t.latencies, 99.0)),
            ms(t.latencies.last().copied().unwrap_or(0)),
            rss
        );
        for f in &self.files {
            let size = std::fs::metadata(f).map_or(0, |m| m.len());
            row.push_str(&format!(",{size}"));
        }
        if let Some(csv) = self.csv.as_mut() {
            let _ = writeln!(csv, "{row}");
        }
        if !self.quiet {
            eprintln!("loadgen: {row}");
        }
    }
}

/// `VmRSS` of `pid` in KiB, 0 when it cannot be read.
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn summary_line(t: &mut Tally, elapsed: Duration, sent: u64) -> String {
    t.latencies.sort_unstable();
    let l = &t.latencies;
    format!(
        "LOADGEN sent={sent} ok2xx={} non2xx={} errors={} duration_us={} rps={:.1} p50_us={} \
         p90_us={} p99_us={} p999_us={} max_us={}",
        t.ok,
        t.non2xx,
        t.errors,
        elapsed.as_micros(),
        (t.ok + t.non2xx) as f64 / elapsed.as_secs_f64(),
        percentile(l, 50.0),
        percentile(l, 90.0),
        percentile(l, 99.0),
        percentile(l, 99.9),
        l.last().copied().unwrap_or(0)
    )
}

async fn capture_main(args: &[String]) -> i32 {
    let load = Load::from_args(args);
    let bins = match (opt_str(args, "--bin"), opt_str(args, "--new-bin-every")) {
        (Some(id), _) => Bins::fixed(&id),
        (None, None) if opt_str(args, "--bins-file").is_some() => {
            let path = opt_str(args, "--bins-file").unwrap_or_default();
            let ids = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                eprintln!("loadgen: cannot read {path}: {e}");
                std::process::exit(1)
            });
            let ids: Vec<&str> = ids.split_whitespace().collect();
            Bins::fixed(&ids.join(","))
        }
        (None, Some(every)) => {
            let every: f64 = every.parse().unwrap_or_else(|_| usage());
            let bins = Arc::new(Bins {
                live: Mutex::new(VecDeque::new()),
                next: AtomicU64::new(0),
                life: Duration::from_secs_f64(opt(args, "--bin-life", 50.0)),
            });
            let maker = bins.clone();
            let addr = load.addr;
            tokio::spawn(async move { make_bins(addr, every, &maker).await });
            bins
        }
        (None, None) => usage(),
    };
    let sampler = Sampler::from_args(args, args.iter().any(|a| a == "--quiet"));
    let (mut total, elapsed) = run_load(&load, bins, sampler).await;
    let sent = total.ok + total.non2xx + total.errors;
    println!("{}", summary_line(&mut total, elapsed, sent));
    0
}

/// Creates a bin every `every` seconds (the first at once) until the process ends.
async fn make_bins(addr: SocketAddr, every: f64, bins: &Bins) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(every));
    let mut conn: Option<Conn> = None;
    loop {
        tick.tick().await;
        if conn.is_none() {
            conn = Conn::open(addr, None).await.ok();
        }
        let Some(c) = conn.as_mut() else { continue };
        let req = format!("POST /api/bins HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
        match c.roundtrip(req.as_bytes()).await {
            Ok(201) => match json_str(&c.body, "id") {
                Some(id) => bins.add(&id),
                None => eprintln!("loadgen: POST /api/bins answered no id"),
            },
            Ok(code) => eprintln!(
                "loadgen: POST /api/bins answered {code}: {}",
                String::from_utf8_lossy(&c.body)
            ),
            Err(e) => {
                eprintln!("loadgen: POST /api/bins failed: {e}");
                conn = None;
            }
        }
    }
}

fn json_str(body: &[u8], key: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let at = text.find(&format!("\"{key}\""))?;
    let rest = &text[at + key.len() + 2..];
    let rest = &rest[rest.find('"')? + 1..];
    Some(rest[..rest.find('"')?].to_owned())
}

// ------------------------------------------------------------------------------------------
// A keep-alive HTTP/1.1 connection for fixed requests

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// The last answer's body.
    body: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

impl Conn {
    async fn open(addr: SocketAddr, from: Option<Ipv4Addr>) -> std::io::Result<Conn> {
        let socket = TcpSocket::new_v4()?;
        if let Some(ip) = from {
            socket.bind(SocketAddr::V4(SocketAddrV4::new(ip, 0)))?;
        }
        let stream = socket.connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(4096),
            body: Vec::new(),
        })
    }

    /// Reads until a whole response head is buffered; its length and the status.
    async fn head(&mut self) -> std::io::Result<(usize, u16)> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let status = std::str::from_utf8(&self.buf[..end])
                    .ok()
                    .and_then(|h| h.split(' ').nth(1))
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| std::io::Error::other("bad status line"))?;
                return Ok((end + 4, status));
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// Sends `req` and reads the whole answer (Content-Length bodies only); its status.
    async fn roundtrip(&mut self, req: &[u8]) -> std::io::Result<u16> {
        self.stream.write_all(req).await?;
        let (head_len, status) = self.head().await?;
        let head = String::from_utf8_lossy(&self.buf[..head_len]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| std::io::Error::other("answer without Content-Length"))?;
        while self.buf.len() < head_len + length {
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        self.body.clear();
        self.body
            .extend_from_slice(&self.buf[head_len..head_len + length]);
        self.buf.drain(..head_len + length);
        if head.contains("\r\nconnection: close") {
            return Err(std::io::Error::other("server closed the connection"));
        }
        Ok(status)
    }
}

// ------------------------------------------------------------------------------------------
// Event streams

/// What one stream received.
#[derive(Default)]
struct StreamTally {
    events: AtomicU64,
    /// Bytes of the response body (chunk data: events, comments), as read.
    bytes: AtomicU64,
    last_id: AtomicU64,
    /// Events whose id was not the previous one + 1 (a gap or a duplicate).
    out_of_order: AtomicU64,
    failed: AtomicBool,
}

async fn viewers_main(args: &[String]) -> i32 {
    let load = Load::from_args(args);
    let bin = opt_str(args, "--bin").unwrap_or_else(|| usage());
    let streams: usize = opt(args, "--streams", 500);
    let per_addr: usize = opt(args, "--per-addr", 10usize).max(1);
    let catch_up = Duration::from_secs_f64(opt(args, "--catch-up", 60.0));
    let sampler = Sampler::from_args(args, args.iter().any(|a| a == "--quiet"));

    let tallies: Vec<Arc<StreamTally>> = (0..streams).map(|_| Arc::default()).collect();
    let opened = Arc::new(tokio::sync::Semaphore::new(0));
    // The stream readers run on threads of their own: on the senders' runtime, a sender whose
    // answer had come waited in the run queue behind every reader with text to parse, and that
    // wait counted as the server's latency. The threads still share the machine's cores (as
    // the server's do): their CPU time is printed apart (`reader_cpu_ms`).
    let readers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opt(args, "--reader-workers", 2))
        .thread_name("viewers")
        .enable_all()
        .build()
        .expect("tokio runtime");
    let cpu_before = thread_cpu_ms();
    for (i, tally) in tallies.iter().enumerate() {
        // 127.0.0.2, 127.0.0.3, ...: --per-addr streams from each.
        let host = 2 + (i / per_addr) as u32;
        let from = Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 0)) + host);
        let (tally, opened, bin) = (tally.clone(), opened.clone(), bin.clone());
        let addr = load.addr;
        readers.spawn(async move {
            if let Err(e) = watch(addr, from, &bin, &tally, &opened).await {
                tally.failed.store(true, Ordering::Relaxed);
                eprintln!("loadgen: stream from {from} failed: {e}");
                opened.add_permits(1);
            }
        });
    }
    // Every stream open (its first comment received) before the first capture.
    let all_open =
        tokio::time::timeout(Duration::from_secs(30), opened.acquire_many(streams as u32)).await;
    if all_open.is_err() {
        eprintln!("loadgen: not every stream opened within 30 s");
    }
    let failed_open = tallies
        .iter()
        .filter(|t| t.failed.load(Ordering::Relaxed))
        .count();
    eprintln!(
        "loadgen: {} streams open ({failed_open} failed)",
        streams - failed_open
    );

    let (mut total, elapsed) = run_load(&load, Bins::fixed(&bin), sampler).await;
    let sent = total.ok + total.non2xx + total.errors;
    println!("{}", summary_line(&mut total, elapsed, sent));
    // The bin was empty and every capture went to it: ids 1..=ok2xx were committed (a 2xx is
    // sent only after the commit, and every request was answered before run_load returned).
    let want = total.ok;
    let caught_up = Instant::now() + catch_up;
    let behind = || {
        tallies
            .iter()
            .filter(|t| {
                !t.failed.load(Ordering::Relaxed) && t.last_id.load(Ordering::Relaxed) < want
            })
            .count()
    };
    while behind() > 0 && Instant::now() < caught_up {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waited = (Instant::now() + catch_up).saturating_duration_since(caught_up);
    let events: Vec<u64> = tallies
        .iter()
        .map(|t| t.events.load(Ordering::Relaxed))
        .collect();
    let bytes: u64 = tallies
        .iter()
        .map(|t| t.bytes.load(Ordering::Relaxed))
        .sum();
    let complete = tallies
        .iter()
        .filter(|t| {
            !t.failed.load(Ordering::Relaxed)
                && t.out_of_order.load(Ordering::Relaxed) == 0
                && t.events.load(Ordering::Relaxed) == want
                && t.last_id.load(Ordering::Relaxed) == want
        })
        .count();
    let cpu = thread_cpu_ms();
    let spent = |name: &str| {
        cpu.get(name).copied().unwrap_or(0) - cpu_before.get(name).copied().unwrap_or(0)
    };
    println!(
        "STREAMS streams={streams} complete={complete} failed={} out_of_order={} expected_events={want} \
         min_events={} max_events={} events={} bytes={bytes} catch_up_ms={} reader_cpu_ms={} \
         sender_cpu_ms={}",
        tallies
            .iter()
            .filter(|t| t.failed.load(Ordering::Relaxed))
            .count(),
        tallies
            .iter()
            .map(|t| t.out_of_order.load(Ordering::Relaxed))
            .sum::<u64>(),
        events.iter().min().copied().unwrap_or(0),
        events.iter().max().copied().unwrap_or(0),
        events.iter().sum::<u64>(),
        waited.as_millis(),
        spent("viewers"),
        spent("capture")
    );
    readers.shutdown_background();
    0
}

/// CPU time (user + system, ms) of this process's threads so far, by thread name.
fn thread_cpu_ms() -> std::collections::HashMap<String, u64> {
    let tick_ms = 1000 / 100; // USER_HZ: 100 on Linux
    let mut by_name = std::collections::HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return by_name;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // "tid (name) state ...": the name may hold spaces; fields 14 and 15 are utime, stime.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ticks: u64 =
            fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
        *by_name.entry(stat[open + 1..close].to_owned()).or_insert(0) += ticks * tick_ms;
    }
    by_name
}

/// Opens one stream from `from` and counts its `request` events until the process ends.
async fn watch(
    addr: SocketAddr,
    from: Ipv4Addr,
    bin: &str,
    tally: &StreamTally,
    opened: &tokio::sync::Semaphore,
) -> std::io::Result<()> {
    let mut conn = Conn::open(addr, Some(from)).await?;
    let req = format!(
        "GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    );
    conn.stream.write_all(req.as_bytes()).await?;
    let (head_len, status) = conn.head().await?;
    if status != 200 {
        return Err(std::io::Error::other(format!(
            "answered {status}: {}",
            String::from_utf8_lossy(&conn.buf)
        )));
    }
    let mut buf = std::mem::take(&mut conn.buf);
    buf.drain(..head_len);
    let mut chunks = Chunked::default();
    let mut events = Sse::default();
    let mut announced = false;
    loop {
        // Parsed where it was read: only an incomplete line or chunk-size line is kept (moved
        // to the front) for the next read.
        let used = chunks.decode(&buf, |data| events.feed(data))?;
        buf.drain(..used);
        events.publish(tally);
        if !announced && events.bytes > 0 {
            // The first bytes are the server's "stream open" comment.
            announced = true;
            opened.add_permits(1);
        }
        if chunks.done {
            return Err(std::io::Error::other("the server ended the stream"));
        }
        // Room for what a 25 ms write of 500 streams' server brings, in one read.
        if buf.capacity() - buf.len() < READ_MIN {
            buf.reserve(READ_SIZE);
        }
        if conn.stream.read_buf(&mut buf).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
}

/// Each stream's read buffer: a read takes what the socket holds, up to this.
const READ_SIZE: usize = 256 * 1024;
const READ_MIN: usize = 64 * 1024;

/// Decodes `Transfer-Encoding: chunked` incrementally.
#[derive(Default)]
struct Chunked {
    /// Data bytes left in the current chunk, then its CRLF (2 bytes) to skip.
    left: usize,
    in_chunk: bool,
    done: bool,
}

impl Chunked {
    /// Gives every decodable data byte of `buf` to `data`, in order; the count of bytes of
    /// `buf` used (an incomplete size line or chunk CRLF is left).
    fn decode(&mut self, buf: &[u8], mut data: impl FnMut(&[u8])) -> std::io::Result<usize> {
        let mut at = 0;
        loop {
            if self.in_chunk {
                let take = self.left.min(buf.len() - at);
                data(&buf[at..at + take]);
                at += take;
                self.left -= take;
                if self.left > 0 {
                    break;
                }
                // The chunk's trailing CRLF.
                if buf.len() - at < 2 {
                    break;
                }
                at += 2;
                self.in_chunk = false;
            }
            let Some(eol) = find(&buf[at..], b"\r\n") else {
                break;
            };
            let line = std::str::from_utf8(&buf[at..at + eol]).unwrap_or("");
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size line {line:?}")))?;
            at += eol + 2;
            if size == 0 {
                self.done = true;
                break;
            }
            self.left = size;
            self.in_chunk = true;
        }
        Ok(at)
    }
}

/// Parses server-sent events line by line and checks their ids: counted here, published to
/// the stream's tally after each read (one set of atomic stores per read, not per event).
#[derive(Default)]
struct Sse {
    /// A line cut by the end of a read (or of a chunk), until its end comes.
    partial: Vec<u8>,
    id: Option<u64>,
    is_request: bool,
    events: u64,
    last_id: u64,
    out_of_order: u64,
    /// Data bytes seen.
    bytes: u64,
}

impl Sse {
    fn feed(&mut self, mut data: &[u8]) {
        self.bytes += data.len() as u64;
        // memchr: 500 streams at a few thousand events/s are GB/s of text to split into lines.
        while let Some(nl) = memchr::memchr(b'\n', data) {
            if self.partial.is_empty() {
                self.line(&data[..nl]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&data[..nl]);
                self.line(&line);
                line.clear();
                self.partial = line;
            }
            data = &data[nl + 1..];
        }
        self.partial.extend_from_slice(data);
    }

    fn line(&mut self, line: &[u8]) {
        if line.is_empty() {
            // End of an event.
            if self.is_request {
                let id = self.id.unwrap_or(0);
                if id != self.last_id + 1 {
                    self.out_of_order += 1;
                }
                self.last_id = id.max(self.last_id);
                self.events += 1;
            }
            self.id = None;
            self.is_request = false;
        } else if let Some(v) = line.strip_prefix(b"id: ") {
            self.id = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
        } else if line == b"event: request" {
            self.is_request = true;
        }
    }

    fn publish(&self, tally: &StreamTally) {
        tally.events.store(self.events, Ordering::Relaxed);
        tally.bytes.store(self.bytes, Ordering::Relaxed);
        tally
            .out_of_order
            .store(self.out_of_order, Ordering::Relaxed);
        tally.last_id.store(self.last_id, Ordering::Relaxed);
    }
}
