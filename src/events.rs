//! Live notifications of new captures, per bin, for the event stream.
//!
//! The writer publishes the captures of each committed batch, and every bin's share of it goes
//! to that bin's streams as one [`Event`]. Receivers that fall behind get `Lagged` and catch up
//! from the database, so a slow browser never slows the writer down.
//!
//! One event per batch rather than per capture, with its text made once for every stream: 500
//! streams on a bin taking 450 captures/s spent the server's time waking each stream, rendering
//! the same JSON and writing to its socket once per capture per stream (issue 15; see
//! `bench/viewers.sh`). Now each stream wakes, clones the shared text and writes once per batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use tokio::sync::broadcast;

use crate::model::RequestSummary;

/// Events (batches) buffered per bin for slow receivers before they must catch up from the
/// database. 1024 was tried (a stream reads once per 100 ms write period, at low priority): at
/// 10,000 captures/s, an overload on 2 cores, hookbin's RSS reached 140 MiB (issue 15,
/// `bench/viewers.sh`), so 256 stays.
const CHANNEL_CAPACITY: usize = 256;

/// Captures of one bin committed together, oldest first (ids increasing).
#[derive(Debug)]
pub struct Batch {
    summaries: Vec<RequestSummary>,
    /// The whole batch as the stream sends it, made by the first stream that needs it.
    text: OnceLock<Bytes>,
}

pub type Event = Arc<Batch>;

impl Batch {
    /// The captures, oldest first; never empty.
    pub fn summaries(&self) -> &[RequestSummary] {
        &self.summaries
    }

    pub fn first_id(&self) -> i64 {
        self.summaries.first().map_or(0, |s| s.id.get())
    }

    pub fn last_id(&self) -> i64 {
        self.summaries.last().map_or(0, |s| s.id.get())
    }

    /// The batch's text, made by `render` on the first call only: every stream that sends the
    /// batch whole shares it.
    pub fn text(&self, render: impl FnOnce(&[RequestSummary]) -> Bytes) -> Bytes {
        self.text.get_or_init(|| render(&self.summaries)).clone()
    }
}

#[derive(Debug, Default)]
pub struct EventHub {
    channels: Mutex<HashMap<String, broadcast::Sender<Event>>>,
}

impl EventHub {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Tells each bin's listeners about its committed captures (given in commit order), as one
    /// event per bin; bins nobody listens to are skipped.
    pub fn publish(&self, summaries: Vec<RequestSummary>) {
        if summaries.is_empty() {
            return;
        }
        // Grouped by bin in order of appearance. A linear search: the writer builds summaries
        // only for watched bins, so a batch holds very few distinct bins.
        let mut groups: Vec<Vec<RequestSummary>> = Vec::new();
        for summary in summaries {
            match groups.iter_mut().find(|g| g[0].bin_id == summary.bin_id) {
                Some(group) => group.push(summary),
                None => groups.push(vec![summary]),
            }
        }
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        for summaries in groups {
            let bin = &summaries[0].bin_id;
            if let Some(tx) = channels.get(bin) {
                let bin = bin.clone();
                let batch = Arc::new(Batch {
                    summaries,
                    text: OnceLock::new(),
                });
                if tx.send(batch).is_err() {
                    // Every listener has gone; drop the channel until someone subscribes again.
                    channels.remove(&bin);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(bin: &str, id: i64) -> RequestSummary {
        RequestSummary::sample(bin, id)
    }

    fn ids(batch: &Batch) -> Vec<(String, i64)> {
        batch
            .summaries()
            .iter()
            .map(|s| (s.bin_id.clone(), s.id.get()))
            .collect()
    }

    #[test]
    fn a_commit_reaches_each_watched_bin_as_one_event_in_order() {
        let hub = EventHub::new();
        let mut a = hub.subscribe("a");
        let mut b = hub.subscribe("b");
        hub.publish(vec![
            summary("a", 7),
            summary("b", 1),
            summary("c", 4),
            summary("a", 8),
            summary("b", 2),
            summary("a", 9),
        ]);
        let got = a.try_recv().unwrap();
        assert_eq!(
            ids(&got),
            [("a".into(), 7), ("a".into(), 8), ("a".into(), 9)]
        );
        assert_eq!((got.first_id(), got.last_id()), (7, 9));
        assert!(a.try_recv().is_err(), "one event for the whole commit");
        assert_eq!(
            ids(&b.try_recv().unwrap()),
            [("b".into(), 1), ("b".into(), 2)]
        );
        // Nobody watches "c": nothing was kept for it.
        assert!(!hub.is_watched("c"));
        assert!(!hub.channels.lock().unwrap().contains_key("c"));
    }

    #[test]
    fn a_batch_is_rendered_once_for_every_stream() {
        let hub = EventHub::new();
        let mut one = hub.subscribe("a");
        let mut two = hub.subscribe("a");
        hub.publish(vec![summary("a", 1), summary("a", 2)]);
        let renders = std::sync::atomic::AtomicUsize::new(0);
        let render = |s: &[RequestSummary]| {
            renders.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Bytes::from(format!("{} events", s.len()))
        };
        let first = one.try_recv().unwrap().text(render);
        let second = two.try_recv().unwrap().text(render);
        assert_eq!(first, "2 events");
        assert_eq!(second, first);
        assert_eq!(renders.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[test]
    fn a_bin_whose_listeners_left_is_forgotten_at_its_next_event() {
        let hub = EventHub::new();
        drop(hub.subscribe("a"));
        assert!(!hub.is_watched("a"));
        hub.publish(vec![summary("a", 1)]);
        assert!(!hub.channels.lock().unwrap().contains_key("a"));
    }
}
