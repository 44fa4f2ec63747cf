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
//!
//! Each watched bin also keeps its latest batches ([`EventHub::recent_after`]), bounded by
//! bytes and age rather than by count: a stream that fell behind the channel (`Lagged`) takes
//! what it missed from there, the same shared text, and only one that fell further behind
//! than that reads the database. The channel's 256 batches are a fraction of a second at
//! 10,000 captures/s, and 500 streams each reading and rendering their own catch-up from the
//! database took more CPU than the live path they replaced (issue 15, `bench/viewers.sh`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::broadcast;

use crate::model::RequestSummary;

/// Events (batches) buffered per bin for slow receivers before they must catch up from the
/// database. 1024 was tried (a stream reads once per 100 ms write period, at low priority): at
/// 10,000 captures/s, an overload on 2 cores, hookbin's RSS reached 140 MiB (issue 15,
/// `bench/viewers.sh`), so 256 stays.
const CHANNEL_CAPACITY: usize = 256;

/// The latest batches a watched bin keeps for streams that fell behind the channel: at most
/// this many bytes (summaries and their text, as estimated by `Batch::weight`; per bin, so n
/// busy watched bins hold up to n times this). 16 MiB is ~2.5 s at 10,000 captures/s: 500
/// streams there all caught up from it, none from the database (issue 15, `bench/viewers.sh`)...
pub(crate) const RECENT_BYTES: usize = 16 * 1024 * 1024;
/// ...and, when the bin publishes, none older than this: a bin taking a few captures a second
/// keeps seconds of them, not minutes.
const RECENT_AGE: Duration = Duration::from_secs(10);
/// Batches handed out per call of [`EventHub::recent_after`]: the writer adds each batch under
/// the same lock, and a stream's thread runs at the lowest priority, so it holds it briefly.
const RECENT_PIECE: usize = 256;

/// Captures of one bin committed together, oldest first (ids increasing).
#[derive(Debug)]
pub struct Batch {
    summaries: Vec<RequestSummary>,
    /// The whole batch as the stream sends it, made by the first stream that needs it.
    text: OnceLock<Bytes>,
    /// What the batch holds in memory once its text is made, roughly: the recent buffer's unit.
    weight: usize,
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

    fn new(summaries: Vec<RequestSummary>) -> Batch {
        // Each summary's strings, twice (the summary and its JSON text), and ~500 bytes of
        // fixed fields, field names and allocation overhead (mimalloc rounds up each of the
        // summary's seven strings).
        let weight = summaries
            .iter()
            .map(|s| {
                let strings = s.bin_id.len()
                    + s.method.len()
                    + s.path.len()
                    + s.subpath.len()
                    + s.query.len()
                    + s.content_type.as_ref().map_or(0, String::len)
                    + s.remote_addr.len();
                2 * strings + 512
            })
            .sum();
        Batch {
            summaries,
            text: OnceLock::new(),
            weight,
        }
    }

    /// The batch's text, made by `render` on the first call only: every stream that sends the
    /// batch whole shares it.
    pub fn text(&self, render: impl FnOnce(&[RequestSummary]) -> Bytes) -> Bytes {
        self.text.get_or_init(|| render(&self.summaries)).clone()
    }
}

#[derive(Debug, Default)]
pub struct EventHub {
    channels: Mutex<HashMap<String, Channel>>,
}

#[derive(Debug)]
struct Channel {
    tx: broadcast::Sender<Event>,
    recent: Arc<Mutex<Recent>>,
}

/// A bin's latest batches, every one published since the newest it dropped: oldest first.
#[derive(Debug, Default)]
struct Recent {
    batches: VecDeque<(Instant, Event)>,
    bytes: usize,
    /// The last id of the newest batch dropped (0: none yet). Ids are published in increasing
    /// order, so every id above it that was published is here.
    dropped_through: i64,
}

impl Recent {
    fn push(&mut self, batch: Event, now: Instant) {
        self.bytes += batch.weight;
        self.batches.push_back((now, batch));
        while let Some((at, oldest)) = self.batches.front() {
            // The newest batch stays whatever its size: it is the one a stream that falls
            // behind next needs first.
            if self.batches.len() == 1
                || (self.bytes <= RECENT_BYTES && now.duration_since(*at) <= RECENT_AGE)
            {
                break;
            }
            self.bytes -= oldest.weight;
            self.dropped_through = self.dropped_through.max(oldest.last_id());
            self.batches.pop_front();
        }
    }

    /// Up to `max` batches holding ids after `after`, oldest first; when some of those ids were
    /// already dropped, `Err` with the last id dropped: everything after it is here.
    fn after(&self, after: i64, max: usize) -> Result<Vec<Event>, i64> {
        if self.dropped_through > after {
            return Err(self.dropped_through);
        }
        let start = self.batches.partition_point(|(_, b)| b.last_id() <= after);
        Ok(self
            .batches
            .range(start..)
            .take(max)
            .map(|(_, b)| b.clone())
            .collect())
    }
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
        let now = Instant::now();
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        for summaries in groups {
            let bin = &summaries[0].bin_id;
            if let Some(channel) = channels.get(bin) {
                let bin = bin.clone();
                let batch = Arc::new(Batch::new(summaries));
                // Kept before it is sent: a stream that finds it missed the batch finds it here.
                channel
                    .recent
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(batch.clone(), now);
                if channel.tx.send(batch).is_err() {
                    // Every listener has gone; drop the channel until someone subscribes again.
                    channels.remove(&bin);
                }
            }
        }
    }

    /// Whether any bin has a channel (so a writer can skip asking [`EventHub::is_watched`] of
    /// every capture in a batch). Asked after the batch's commit, like `is_watched`: a stream
    /// that subscribes later reads that commit from the database.
    pub fn watches_any(&self) -> bool {
        !self
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Whether a stream listens to `bin` (so the writer can skip building unused summaries).
    pub fn is_watched(&self, bin: &str) -> bool {
        let channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.get(bin).is_some_and(|c| c.tx.receiver_count() > 0)
    }

    pub fn subscribe(&self, bin: &str) -> broadcast::Receiver<Event> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels
            .entry(bin.to_owned())
            .or_insert_with(|| Channel {
                tx: broadcast::channel(CHANNEL_CAPACITY).0,
                recent: Arc::default(),
            })
            .tx
            .subscribe()
    }

    /// For a stream of `bin` that fell behind its channel and has sent every id up to `after`:
    /// the next batches (at most `RECENT_PIECE`) holding ids after it, oldest first, from the
    /// bin's recent buffer; empty when it has them all. When the buffer no longer holds all of
    /// them, `Err(through)`: the ids after `after` up to `through` are only in the database (if
    /// still there), the later ones here; `through` is `i64::MAX` when the bin has no channel.
    pub fn recent_after(&self, bin: &str, after: i64) -> Result<Vec<Event>, i64> {
        // Two short locks rather than one long one: the writer publishes under the first.
        let recent = self
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(bin)
            .ok_or(i64::MAX)?
            .recent
            .clone();
        recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .after(after, RECENT_PIECE)
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

    fn recent_ids(hub: &EventHub, bin: &str, after: i64) -> Result<Vec<i64>, i64> {
        hub.recent_after(bin, after).map(|batches| {
            batches
                .iter()
                .flat_map(|b| b.summaries().iter().map(|s| s.id.get()))
                .collect()
        })
    }

    #[test]
    fn a_receiver_that_lagged_finds_what_it_missed_in_the_recent_batches() {
        let hub = EventHub::new();
        let mut slow = hub.subscribe("a");
        for id in 1..=(CHANNEL_CAPACITY as i64 + 10) {
            hub.publish(vec![summary("a", id)]);
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(10))
        ));
        // Everything after the last id it sent, in order, in pieces of RECENT_PIECE batches.
        let first = recent_ids(&hub, "a", 0).unwrap();
        assert_eq!(first, (1..=RECENT_PIECE as i64).collect::<Vec<_>>());
        let rest = recent_ids(&hub, "a", RECENT_PIECE as i64).unwrap();
        assert_eq!(
            rest,
            (RECENT_PIECE as i64 + 1..=CHANNEL_CAPACITY as i64 + 10).collect::<Vec<_>>()
        );
        assert_eq!(
            recent_ids(&hub, "a", CHANNEL_CAPACITY as i64 + 10),
            Ok(vec![])
        );
        // Within a batch: the whole batch comes (the stream skips what it sent).
        hub.publish(vec![summary("a", 267), summary("a", 268)]);
        assert_eq!(recent_ids(&hub, "a", 267), Ok(vec![267, 268]));
        // No channel, nothing kept: everything from the database.
        assert_eq!(recent_ids(&hub, "nobody", 0), Err(i64::MAX));
    }

    #[test]
    fn the_recent_batches_are_bounded_by_bytes_and_age_and_say_what_they_dropped() {
        let mut recent = Recent::default();
        let now = Instant::now();
        let big = |id: i64| {
            let mut s = summary("a", id);
            s.query = "x".repeat(RECENT_BYTES / 8);
            Arc::new(Batch::new(vec![s]))
        };
        for id in 1..=5 {
            recent.push(big(id), now);
        }
        // Four of them weigh more than RECENT_BYTES: the oldest went.
        assert_eq!(recent.batches.len(), 3);
        assert!(recent.bytes <= RECENT_BYTES);
        assert_eq!(recent.dropped_through, 2);
        // Id 2 is gone: the database has to give up to it, the rest is here.
        assert_eq!(recent.after(1, 10).unwrap_err(), 2);
        assert_eq!(recent.after(0, 10).unwrap_err(), 2);
        assert_eq!(recent.after(2, 10).unwrap().len(), 3);
        assert_eq!(recent.after(4, 1).unwrap()[0].last_id(), 5);
        // Old batches go when a new one comes; the newest stays even when alone and huge.
        let later = now + RECENT_AGE + Duration::from_secs(1);
        let mut huge = summary("a", 6);
        huge.query = "x".repeat(RECENT_BYTES / 2 + 1);
        recent.push(Arc::new(Batch::new(vec![huge])), later);
        assert_eq!(recent.batches.len(), 1);
        assert_eq!(recent.dropped_through, 5);
        assert_eq!(recent.after(5, 10).unwrap()[0].last_id(), 6);
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
