//! Live notifications of new captures, per bin, for the event stream.
//!
//! The writer publishes a summary after each committed capture. Receivers that fall behind get
//! `Lagged` and catch up from the database, so a slow browser never slows the writer down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::model::RequestSummary;

/// Events buffered per bin for slow receivers before they must catch up from the database.
const CHANNEL_CAPACITY: usize = 256;

pub type Event = Arc<RequestSummary>;

#[derive(Debug, Default)]
pub struct EventHub {
    channels: Mutex<HashMap<String, broadcast::Sender<Event>>>,
}

impl EventHub {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Tells the bin's listeners about a committed capture (a no-op when nobody listens).
    pub fn publish(&self, summary: RequestSummary) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = channels.get(&summary.bin_id) {
            let bin = summary.bin_id.clone();
            if tx.send(Arc::new(summary)).is_err() {
                // Every listener has gone; drop the channel until someone subscribes again.
                channels.remove(&bin);
            }
        }
    }

    /// Whether a stream listens to `bin` (so the writer can skip building unused summaries).
    pub fn is_watched(&self, bin: &str) -> bool {
        let channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.get(bin).is_some_and(|tx| tx.receiver_count() > 0)
    }

    pub fn subscribe(&self, bin: &str) -> broadcast::Receiver<Event> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels
            .entry(bin.to_owned())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe()
    }

    /// The bin is gone: its listeners see the channel close.
    pub fn close(&self, bin: &str) {
        self.channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(bin);
    }
}
