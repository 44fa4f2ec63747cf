//! `hookbin send` and `hookbin probe`: the client half of the webhook loop. `send` delivers one
//! request signed exactly as the provider would sign it; `probe` checks that a receiver takes
//! the real thing and refuses forgeries. Both run where the developer is, like `hookbin
//! forward`: the server never sends requests anywhere.
//!
//! - [`plan`]: the flags, checked, as one request to sign (target, method, body, headers).
//! - [`crate::signing`]: the signatures, by the rules the verifier checks with.
//! - [`deliver`]: `send`'s attempts and retry schedule, and its output lines.
//! - [`mod@probe`]: the probe's cases, table and JSON.
//! - [`transport`]: the HTTP boundary (a trait, the real client, fetching `--from`).
//!
//! The secret goes into a [`crate::signing::Signer`] and nowhere else: no message, line or
//! `Debug` output carries it.

pub mod deliver;
#[cfg(test)]
mod fakes;
pub mod plan;
pub mod probe;
pub mod transport;

use std::io::{Read, Write};

use crate::cli::{MessageArgs, ProbeArgs, SendArgs};
use crate::signing;
use deliver::{Delivery, SystemClock};
use plan::{Payload, Plan};
use transport::{FetchError, Http};

/// Bad flags or input: exit 2 with this one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Why `send` or `probe` stopped before judging the receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// `--from` could not be fetched.
    #[error("{0}")]
    Fetch(String),
}

impl RunError {
    /// 2 for bad usage, 1 for a failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Usage(_) => 2,
            RunError::Fetch(_) => 1,
        }
    }
}

/// `hookbin send`: `Ok(true)` when an attempt got a `2xx`. Attempt lines go to `out`; notes
/// (retry waits, an `--id` the scheme does not carry) to `notes`.
pub async fn send(
    args: &SendArgs,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<bool, RunError> {
    let (plan, transport) = prepare(&args.url, &args.message, stdin).await?;
    let scheme = plan.scheme();
    if let Some(ts) = args.timestamp {
        plan::check_timestamp(ts)?;
    }
    let id = match &args.id {
        Some(id) => {
            plan::check_id(scheme, id)?;
            if signing::id_header(scheme).is_none() {
                let _ = writeln!(
                    notes,
                    "hookbin send: note: {} carries no event id header; --id is not sent",
                    scheme.name()
                );
            }
            id.clone()
        }
        None => plan::fresh_id(scheme, &mut random_bytes),
    };
    let schedule = args.retry.as_ref().map_or(&[][..], |s| &s.0[..]);
    let delivery = Delivery {
        plan: &plan,
        id: &id,
        timestamp: args.timestamp,
        schedule,
        timeout: args.timeout,
    };
    Ok(deliver::deliver(&delivery, &transport, &SystemClock, out, notes).await)
}

/// `hookbin probe`: the report, whose `passed` decides the exit status.
pub async fn probe(args: &ProbeArgs, stdin: &mut dyn Read) -> Result<probe::Report, RunError> {
    let (plan, transport) = prepare(&args.url, &args.message, stdin).await?;
    Ok(probe::probe(
        &plan,
        &args.message.secret,
        &transport,
        &SystemClock,
        &mut random_bytes,
        args.timeout,
    )
    .await)
}

/// Checks every flag, then reads the payload (`--data`, or `--from` over the network), and
/// sets up the client.
async fn prepare(
    url: &str,
    args: &MessageArgs,
    stdin: &mut dyn Read,
) -> Result<(Plan, Http), RunError> {
    let payload = match &args.data {
        Some(spec) => Payload::Data(plan::read_data(spec, stdin)?),
        None => Payload::Default,
    };
    let plan = Plan::new(url, args, payload)?;
    let transport = Http::new(args.ca_cert.as_deref()).map_err(UsageError)?;
    let plan = match &args.from {
        None => plan,
        Some(from) => {
            let captured =
                transport::fetch_captured(from, &transport)
                    .await
                    .map_err(|e| match e {
                        FetchError::Url { .. } => RunError::Usage(UsageError(e.to_string())),
                        FetchError::Failed { .. } => RunError::Fetch(e.to_string()),
                    })?;
            plan.with_payload(Payload::Captured(Box::new(captured)))?
        }
    };
    Ok((plan, transport))
}

/// Random bytes from the operating system (ids, the probe's wrong secret).
fn random_bytes(buf: &mut [u8]) {
    use rand::TryRng as _;
    rand::rngs::SysRng
        .try_fill_bytes(buf)
        .expect("the operating system's random number generator failed");
}
