//! Test doubles for the send module: a transport that answers from a script, a receiver that
//! answers with a function of the request, and a clock that moves only when slept on.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use super::deliver::Clock;
use super::plan::{Payload, Plan};
use super::transport::{Failure, Outgoing, Reply, Transport};

/// Answers from a script (a status, or a transport error) and records what it was sent.
pub struct Scripted {
    answers: RefCell<Vec<Result<Reply, Failure>>>,
    pub sent: RefCell<Vec<Outgoing>>,
}

impl Scripted {
    pub fn new(statuses: &[Result<u16, &str>]) -> Scripted {
        Scripted {
            answers: RefCell::new(
                statuses
                    .iter()
                    .rev()
                    .map(|s| match s {
                        Ok(status) => Ok(Reply {
                            status: *status,
                            elapsed: Duration::from_millis(7),
                            body_start: format!("answer {status}").into_bytes(),
                        }),
                        Err(e) => Err(Failure {
                            message: (*e).to_owned(),
                            // "setup: ..." stands for an error no retry can fix.
                            transient: !e.starts_with("setup"),
                        }),
                    })
                    .collect(),
            ),
            sent: RefCell::default(),
        }
    }

    /// The value of header `name` in the request of attempt `index` (0-based).
    pub fn header(&self, index: usize, name: &str) -> String {
        header(&self.sent.borrow()[index], name).unwrap_or_default()
    }
}

impl Transport for Scripted {
    async fn send(&self, req: &Outgoing, _timeout: Duration) -> Result<Reply, Failure> {
        self.sent.borrow_mut().push(req.clone());
        self.answers.borrow_mut().pop().expect("no more answers")
    }
}

/// A receiver: the status is a function of the request.
pub struct Receiver<F>(pub RefCell<F>);

impl<F: FnMut(&Outgoing) -> u16> Transport for Receiver<F> {
    async fn send(&self, req: &Outgoing, _timeout: Duration) -> Result<Reply, Failure> {
        let status = (self.0.borrow_mut())(req);
        Ok(Reply {
            status,
            elapsed: Duration::from_millis(3),
            body_start: Vec::new(),
        })
    }
}

/// A clock that only moves when slept on.
pub struct FakeClock {
    pub now: RefCell<i64>,
    pub slept: RefCell<Vec<Duration>>,
}

impl FakeClock {
    pub fn at(now: i64) -> FakeClock {
        FakeClock {
            now: RefCell::new(now),
            slept: RefCell::default(),
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> i64 {
        *self.now.borrow()
    }

    async fn sleep(&self, duration: Duration) {
        self.slept.borrow_mut().push(duration);
        *self.now.borrow_mut() += duration.as_secs() as i64;
    }
}

/// A header's value, by name in any case.
pub fn header(req: &Outgoing, name: &str) -> Option<String> {
    req.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
}

/// A plan for `http://127.0.0.1:9/hook` from message flags (`--data` read as `send` reads it).
pub fn plan(flags: &[&str]) -> Plan {
    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(flatten)]
        message: crate::cli::MessageArgs,
    }
    let argv = std::iter::once("hookbin").chain(flags.iter().copied());
    let args = <Wrapper as clap::Parser>::try_parse_from(argv)
        .expect("flags parse")
        .message;
    let payload = match &args.data {
        Some(spec) => Payload::Data(super::plan::read_data(spec, &mut &b""[..]).expect("data")),
        None => Payload::Default,
    };
    Plan::new("http://127.0.0.1:9/hook", &args, payload).expect("a valid plan")
}

pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(f)
}
