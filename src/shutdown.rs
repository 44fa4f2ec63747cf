//! The one shutdown signal everything listens to: SIGINT/SIGTERM in production, any future in
//! tests.

use tokio_util::sync::CancellationToken;

/// Cloneable receiver side: `triggered()` resolves once shutdown has begun.
#[derive(Debug, Clone)]
pub struct ShutdownSignal(CancellationToken);

/// The sender side, owned by the server loop. Dropping it signals a stop too (tests keep it
/// alive for as long as their server runs).
#[derive(Debug)]
pub struct ShutdownTrigger(CancellationToken);

pub fn channel() -> (ShutdownTrigger, ShutdownSignal) {
    let token = CancellationToken::new();
    (ShutdownTrigger(token.clone()), ShutdownSignal(token))
}

impl ShutdownTrigger {
    pub fn trigger(&self) {
        self.0.cancel();
    }
}

impl Drop for ShutdownTrigger {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl ShutdownSignal {
    pub fn is_triggered(&self) -> bool {
        self.0.is_cancelled()
    }

    pub async fn triggered(&self) {
        self.0.cancelled().await;
    }

    /// The signal for one connection, which polls it at every wake-up of its task: on a token
    /// of its own (a child of the trigger's), where [`ShutdownSignal::triggered`] waits on the
    /// one token every other task shares (its lock, at each poll, cost 0.15 us a capture as a
    /// watch channel, bench/RESULTS.md).
    pub fn for_connection(&self) -> ConnectionShutdown {
        ConnectionShutdown(self.0.child_token())
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

    #[tokio::test]
    async fn a_dropped_trigger_stops_everything() {
        let (trigger, signal) = channel();
        let connection = signal.for_connection();
        assert!(!signal.is_triggered());
        drop(trigger);
        assert!(signal.is_triggered());
        let heard = async {
            signal.triggered().await;
            connection.triggered().await;
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), heard)
            .await
            .expect("the task-wide and the connection signals both hear a dropped trigger");
    }
}
