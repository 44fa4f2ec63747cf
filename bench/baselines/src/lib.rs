//! Shared plumbing for the two ceiling servers used by `bench/run.sh`.
//!
//! Both use the same stack as hookbin: hyper 1.x HTTP/1.1 connections on a tokio
//! multi-thread runtime with the default worker count (`#[tokio::main]`).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

// hookbin's allocator (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Value of `--name VALUE` or `--name=VALUE` on the command line.
pub fn arg_value(name: &str) -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next();
        }
        if let Some(v) = arg
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
        {
            return Some(v.to_owned());
        }
    }
    None
}

/// `--listen ADDR`; default and `:PORT` shorthand mean 127.0.0.1 (`:0` picks a free port).
pub fn listen_addr() -> SocketAddr {
    let raw = arg_value("--listen").unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let raw = if raw.starts_with(':') {
        format!("127.0.0.1{raw}")
    } else {
        raw
    };
    raw.parse().unwrap_or_else(|e| {
        eprintln!("error: bad --listen {raw:?}: {e}");
        std::process::exit(2)
    })
}

pub type Resp = Response<Full<Bytes>>;

pub fn text(status: StatusCode, body: impl Into<Bytes>) -> Resp {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    resp
}

/// Reads the whole request body.
pub async fn read_body(body: Incoming) -> Result<Bytes, hyper::Error> {
    Ok(body.collect().await?.to_bytes())
}

/// Binds, prints `NAME: listening on http://ADDR` on stdout, and serves every connection
/// with `handler` until the process is killed.
pub async fn serve<F, Fut>(name: &str, handler: F) -> std::io::Result<()>
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let listener = TcpListener::bind(listen_addr()).await?;
    println!("{name}: listening on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("{name}: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let fut = handler(req);
                async move { Ok::<_, Infallible>(fut.await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
