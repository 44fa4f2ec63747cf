//! Server-rendered HTML pages (askama templates in `templates/`) and the static assets they use.
//!
//! Placeholder until the inspector UI lands: every page path answers 404.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};

use crate::http::ConnInfo;
use crate::http::body::Body;
use crate::http::error::ApiError;
use crate::state::AppState;

/// Everything that is not capture, API or operations: `/`, `/bins...`, `/static/...`.
pub async fn route(
    _state: &Arc<AppState>,
    _req: Request<Incoming>,
    _conn: &ConnInfo,
) -> Response<Body> {
    ApiError::route_not_found().into_response()
}
