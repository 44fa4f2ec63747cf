//! A webhook receiver for tests: a plain TCP server on 127.0.0.1:0 that reads one HTTP/1.1
//! request per connection, records it, and answers with whatever the test's handler says. Tests
//! of `hookbin send` and `hookbin probe` point the real binary at it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::util::PATIENCE;

/// One request as the receiver got it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub target: String,
    /// Names as sent, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// The first header called `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(&Received, &[Received]) -> (u16, Vec<u8>) + Send + Sync;

/// A running receiver; stops (and joins its thread) on drop.
pub struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Starts a receiver; `handler` gets each request and the ones that arrived before it, and
    /// returns the status and body to answer with.
    pub fn start(
        handler: impl Fn(&Received, &[Received]) -> (u16, Vec<u8>) + Send + Sync + 'static,
    ) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a receiver");
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    // A thread per connection: a handler that holds one answer back (a slow
                    // receiver) does not hold back the next request.
                    let (received, handler) = (received.clone(), handler.clone());
                    std::thread::spawn(move || {
                        let _ = serve(conn, &received, handler.as_ref());
                    });
                }
            })
        };
        Receiver {
            addr,
            received,
            stop,
            thread: Some(thread),
        }
    }

    /// A receiver that answers every request with `status`.
    pub fn answering(status: u16) -> Receiver {
        Receiver::start(move |_, _| (status, format!("status {status}").into_bytes()))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    conn: TcpStream,
    received: &Mutex<Vec<Received>>,
    handler: &Handler,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(PATIENCE))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(()); // the wake-up connection, or a client that gave up
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request = Received {
        method,
        target,
        headers,
        body,
    };
    let before = {
        let mut all = received.lock().unwrap();
        let before = all.clone();
        all.push(request.clone());
        before
    };
    let (status, answer) = handler(&request, &before);
    let mut conn = conn;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    conn.write_all(
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            answer.len()
        )
        .as_bytes(),
    )?;
    conn.write_all(&answer)?;
    conn.flush()
}
