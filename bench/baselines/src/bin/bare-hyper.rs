//! The HTTP ceiling: reads the full request body and answers `200 ok`. Nothing else.

use hookbin_bench_baselines::{read_body, serve, text};
use hyper::StatusCode;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    serve(
        "bare-hyper",
        |req: hyper::Request<hyper::body::Incoming>| async move {
            match read_body(req.into_body()).await {
                Ok(_) => text(StatusCode::OK, "ok"),
                Err(_) => text(StatusCode::BAD_REQUEST, "bad body"),
            }
        },
    )
    .await
}
