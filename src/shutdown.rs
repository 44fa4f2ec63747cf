//! The one shutdown signal everything listens to: SIGINT/SIGTERM in production, any future in
//! tests.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Cloneable receiver side: `triggered()` resolves once shutdown has begun.
#[derive(Debug, Clone)]
pub struct ShutdownSignal {
    rx: watch::Receiver<bool>,
    /// Cancelled with the trigger; each connection waits on a child of its own
    /// ([`ShutdownSignal::for_connection`]).
    token: CancellationToken,
}

/// The sender side, owned by the server loop.
#[derive(Debug)]
pub struct ShutdownTrigger {
    tx: watch::Sender<bool>,
    token: CancellationToken,
}

pub fn channel() -> (ShutdownTrigger, ShutdownSignal) {
    let (tx, rx) = watch::channel(false);
    let token = CancellationToken::new();
    (
        ShutdownTrigger {
            tx,
            token: token.clone(),
        },
        ShutdownSignal { rx, token },
    )
}

impl ShutdownTrigger {
    pub fn trigger(&self) {
        self.tx.send_replace(true);
        self.token.cancel();
    }
}

impl ShutdownSignal {
    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    pub async fn triggered(&self) {
        let mut rx = self.rx.clone();
        // An error means the trigger is gone, which only happens once the server has stopped.
        let _ = rx.wait_for(|&t| t).await;
    }

    /// The signal for one connection, which polls it at every wake-up of its task: on a token
    /// of its own (a child of the trigger's), where [`ShutdownSignal::triggered`] takes a lock
    /// that every connection shares at each poll (0.15 us a capture, bench/RESULTS.md).
    pub fn for_connection(&self) -> ConnectionShutdown {
        ConnectionShutdown(self.token.child_token())
    }
}

/// [`ShutdownSignal::for_connection`].
#[derive(Debug)]
pub struct ConnectionShutdown(CancellationToken);

impl ConnectionShutdown {
    /// Resolves once shutdown has begun (at once if it already has).
    pub async fn triggered(&self) {
        self.0.cancelled().await;
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn os_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connections_hear_the_trigger_whenever_they_started() {
        let (trigger, signal) = channel();
        let before = signal.for_connection();
        let waiting = tokio::spawn(async move { before.triggered().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        trigger.trigger();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("a connection waiting before the trigger hears it")
            .unwrap();
        // One that starts after the stop hears it at once.
        signal.for_connection().triggered().await;
        assert!(signal.is_triggered());
        signal.triggered().await;
    }
}
