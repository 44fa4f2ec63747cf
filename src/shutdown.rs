//! The one shutdown signal everything listens to: SIGINT/SIGTERM in production, any future in
//! tests.

use tokio::sync::watch;

/// Cloneable receiver side: `triggered()` resolves once shutdown has begun.
#[derive(Debug, Clone)]
pub struct ShutdownSignal(watch::Receiver<bool>);

/// The sender side, owned by the server loop.
#[derive(Debug)]
pub struct ShutdownTrigger(watch::Sender<bool>);

pub fn channel() -> (ShutdownTrigger, ShutdownSignal) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger(tx), ShutdownSignal(rx))
}

impl ShutdownTrigger {
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }
}

impl ShutdownSignal {
    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }

    pub async fn triggered(&self) {
        let mut rx = self.0.clone();
        // An error means the trigger is gone, which only happens once the server has stopped.
        let _ = rx.wait_for(|&t| t).await;
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
