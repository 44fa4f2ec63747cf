//! Live notifications of new captures, per bin, for the event stream.
//!
//! The writer publishes the captures of each committed batch. A watched bin's captures go to
//! its streams as [`Event`]s: at once when the bin sent nothing for a [`PERIOD`] (an idle bin's
//! capture shows without delay), else held and sent together when the period since the bin's
//! last event is over, by the hub's flusher thread. Receivers that fall behind get `Lagged`
//! and catch up, so a slow browser never slows the writer down.
//!
//! One event per period rather than per capture or per commit, with its text made once for
//! every stream: 500 streams on a bin taking 450 captures/s spent the server's time waking each
//! stream, rendering the same JSON and writing to its socket once per capture per stream
//! (issue 15; see `bench/viewers.sh`). One event per commit batch (what this did until
//! 2026-12-03) still meant ~1000 events a second on a bin taking 10,000 captures/s: each
//! stream joined ~100 of them into a copy of its own for every write (500 copies of the same
//! bytes, held in 500 queues: hookbin's RSS reached 172-210 MiB), and the channel's 256
//! events were a quarter of a second, so a stream at the lowest priority fell behind and caught
//! up over and over. Now each busy stream sends one shared text a period, as the ceiling
//! (`bench/baselines`, bare-streams) does, and the channel holds 16 periods. At 10,000
//! captures/s with 500 streams: every stream complete and no catch-up at all in 6 runs
//! (before: 3 of 5 runs complete, 3,405-65,673 catch-ups a run), server CPU a capture with the
//! streams 78-84 us (94-116), peak RSS 82-91 MiB (105-172) (bench/RESULTS.md, 2026-12-03 20:55).
//!
//! Each watched bin also keeps its latest events ([`EventHub::recent_after`]), bounded by
//! bytes and age rather than by count: a stream that fell behind the channel (`Lagged`) takes
//! what it missed from there, the same shared text, and only one that fell further behind
//! than that reads the database: 500 streams each reading and rendering their own catch-up from
//! the database took more CPU than the live path they replaced (issue 15, `bench/viewers.sh`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::broadcast;

use crate::model::RequestSummary;

/// The shortest time between two events of a bin: what a busy bin's streams wait at most for
/// a capture beyond their own write period (`http::stream`'s `GATHER`), and about what a person
/// can just notice.
pub const PERIOD: Duration = Duration::from_millis(100);

/// Events (periods) buffered per bin for slow receivers before they must catch up from the
/// recent events: 1.6 s of a busy bin, as the ceiling's `--buffer 16`. An event holds its
/// summaries (about 700 bytes a capture in memory), so at 25,000 captures/s the channel keeps
/// ~28 MB alive; the recent events, bounded by bytes, hold more of a quieter bin.
const CHANNEL_CAPACITY: usize = 16;

/// The latest events a watched bin keeps for streams that fell behind the channel: at most
/// this many bytes (summaries and their text, as estimated by `Batch::weight`; per bin, so n
/// busy watched bins hold up to n times this). 16 MiB is ~2.5 s at 10,000 captures/s: 500
/// streams there all caught up from it, none from the database (issue 15, `bench/viewers.sh`)...
pub(crate) const RECENT_BYTES: usize = 16 * 1024 * 1024;
/// ...and, when the bin publishes, none older than this: a bin taking a few captures a second
/// keeps seconds of them, not minutes.
const RECENT_AGE: Duration = Duration::from_secs(10);
/// Events handed out per call of [`EventHub::recent_after`]: the writer adds each event under
/// the same lock, and a stream's thread runs at the lowest priority, so it holds it briefly.
const RECENT_PIECE: usize = 256;

/// Captures of one bin sent together (those of one period, or of one commit), oldest first (ids
/// increasing).
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

#[derive(Debug)]
pub struct EventHub {
    channels: Mutex<HashMap<String, Channel>>,
    /// Least time between two events of a bin: [`PERIOD`], or zero (every publish sent at once)
    /// where the flusher thread could not start, and in tests that want one event per commit.
    period: Duration,
    /// When the flusher thread should next send held captures.
    wake: Arc<Wake>,
}

#[derive(Debug)]
struct Channel {
    tx: broadcast::Sender<Event>,
    recent: Arc<Mutex<Recent>>,
    /// Captures published since the bin's last event, sent at `sent + period`; ids increasing.
    held: Vec<RequestSummary>,
    /// When the bin's last event was sent.
    sent: Option<Instant>,
}

impl Channel {
    fn new() -> Channel {
        Channel {
            tx: broadcast::channel(CHANNEL_CAPACITY).0,
            recent: Arc::default(),
            held: Vec::new(),
            sent: None,
        }
    }

    /// Adds a publish's captures of this bin to those held. Ids only go up: one already held
    /// (a repeat) is left out, so that the event's ids stay increasing.
    fn hold(&mut self, summaries: Vec<RequestSummary>) {
        let last = self.held.last().map_or(i64::MIN, |s| s.id.get());
        self.held
            .extend(summaries.into_iter().filter(|s| s.id.get() > last));
    }

    /// When the bin may send its next event: a period after its last one (`None`: never sent).
    fn next_send(&self, period: Duration) -> Option<Instant> {
        self.sent.map(|at| at + period)
    }

    /// Sends the held captures as one event (kept in the recent events first: a stream that
    /// finds it missed the event finds it there). False when every receiver has gone.
    fn send(&mut self, now: Instant) -> bool {
        let batch = Arc::new(Batch::new(std::mem::take(&mut self.held)));
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(batch.clone(), now);
        self.sent = Some(now);
        self.tx.send(batch).is_ok()
    }
}

/// The flusher thread's alarm: the earliest time a bin's held captures are due, and whether
/// the hub is gone.
#[derive(Debug, Default)]
struct Wake {
    state: Mutex<WakeState>,
    ring: Condvar,
}

#[derive(Debug, Default)]
struct WakeState {
    at: Option<Instant>,
    closed: bool,
}

impl Wake {
    /// Makes the flusher look at `due` at the latest.
    fn schedule(&self, due: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.at.is_none_or(|at| due < at) {
            state.at = Some(due);
            self.ring.notify_one();
        }
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.ring.notify_one();
    }
}

/// The flusher thread: sends the captures bins held for their period when it is over (when
/// the bin published again by then, the writer sent them itself). Ends with the hub.
fn flusher(hub: Weak<EventHub>, wake: Arc<Wake>) {
    let mut state = wake.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if state.closed {
            return;
        }
        let now = Instant::now();
        match state.at {
            None => state = wake.ring.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(at) if at > now => {
                state = wake
                    .ring
                    .wait_timeout(state, at - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            Some(_) => {
                state.at = None;
                drop(state);
                let Some(hub) = hub.upgrade() else {
                    return;
                };
                if let Some(next) = hub.flush_due(now) {
                    wake.schedule(next);
                }
                // Unlocked: the last handle may be this one, and the hub's drop closes `wake`.
                drop(hub);
                state = wake.state.lock().unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

impl Drop for EventHub {
    fn drop(&mut self) {
        self.wake.close();
    }
}

/// A bin's latest events, every one published since the newest it dropped: oldest first.
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
    /// A hub whose busy bins send an event a [`PERIOD`], with its flusher thread.
    pub fn new() -> Arc<Self> {
        Self::with_period(PERIOD)
    }

    /// A hub whose bins send an event at most every `period`; zero sends every publish at once
    /// and needs no thread.
    pub fn with_period(period: Duration) -> Arc<Self> {
        let wake = Arc::new(Wake::default());
        Arc::new_cyclic(|hub: &Weak<EventHub>| {
            let mut period = period;
            if !period.is_zero() {
                let (hub, wake) = (hub.clone(), wake.clone());
                let started = std::thread::Builder::new()
                    .name("hookbin-events".into())
                    .spawn(move || flusher(hub, wake));
                if let Err(e) = started {
                    tracing::warn!(cause = %e, "cannot start the event flusher thread; live streams get one event per commit");
                    period = Duration::ZERO;
                }
            }
            EventHub {
                channels: Mutex::default(),
                period,
                wake,
            }
        })
    }

    /// Tells each bin's listeners about its committed captures (given in commit order, ids
    /// increasing per bin); bins nobody listens to are skipped. A bin that sent an event less
    /// than a period ago holds them for its next one, which the flusher thread sends.
    pub fn publish(&self, summaries: Vec<RequestSummary>) {
        if let Some(due) = self.publish_at(summaries, Instant::now()) {
            self.wake.schedule(due);
        }
    }

    /// [`EventHub::publish`] at `now`; the earliest time a bin's held captures are due, if any.
    fn publish_at(&self, summaries: Vec<RequestSummary>, now: Instant) -> Option<Instant> {
        if summaries.is_empty() {
            return None;
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
        let mut due: Option<Instant> = None;
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        for summaries in groups {
            let bin = summaries[0].bin_id.clone();
            let Some(channel) = channels.get_mut(&bin) else {
                continue;
            };
            channel.hold(summaries);
            match channel.next_send(self.period) {
                // With no period nothing is held: there may be no flusher thread to send it (and
                // another publisher may have sent an event after this one read the clock).
                Some(at) if !self.period.is_zero() && now < at => {
                    due = Some(due.map_or(at, |d| d.min(at)));
                }
                _ => {
                    if !channel.send(now) {
                        // Every listener has gone; drop the channel until someone subscribes
                        // again.
                        channels.remove(&bin);
                    }
                }
            }
        }
        due
    }

    /// Sends the captures held by bins whose period is over at `now`; when others are still
    /// held, the earliest time they are due.
    fn flush_due(&self, now: Instant) -> Option<Instant> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: Option<Instant> = None;
        let mut gone = Vec::new();
        for (bin, channel) in channels.iter_mut() {
            if channel.held.is_empty() {
                continue;
            }
            // Held captures follow a sent event (`publish_at`), so `next_send` is always set.
            let at = channel.next_send(self.period).unwrap_or(now);
            if at > now {
                next = Some(next.map_or(at, |n| n.min(at)));
            } else if !channel.send(now) {
                gone.push(bin.clone());
            }
        }
        for bin in gone {
            channels.remove(&bin);
        }
        next
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
            .or_insert_with(Channel::new)
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

    /// The bin is gone: its listeners get what it held, then see the channel close.
    pub fn close(&self, bin: &str) {
        let channel = self
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(bin);
        if let Some(mut channel) = channel
            && !channel.held.is_empty()
        {
            channel.send(Instant::now());
        }
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
        // One event per publish, as with a period of zero.
        let hub = EventHub::with_period(Duration::ZERO);
        let mut slow = hub.subscribe("a");
        let n = RECENT_PIECE as i64 + 44;
        for id in 1..=n {
            hub.publish(vec![summary("a", id)]);
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(lost)) if lost == n as u64 - CHANNEL_CAPACITY as u64
        ));
        // Everything after the last id it sent, in order, in pieces of RECENT_PIECE events.
        let first = recent_ids(&hub, "a", 0).unwrap();
        assert_eq!(first, (1..=RECENT_PIECE as i64).collect::<Vec<_>>());
        let rest = recent_ids(&hub, "a", RECENT_PIECE as i64).unwrap();
        assert_eq!(rest, (RECENT_PIECE as i64 + 1..=n).collect::<Vec<_>>());
        assert_eq!(recent_ids(&hub, "a", n), Ok(vec![]));
        // Within an event: the whole event comes (the stream skips what it sent).
        hub.publish(vec![summary("a", n + 1), summary("a", n + 2)]);
        assert_eq!(recent_ids(&hub, "a", n + 1), Ok(vec![n + 1, n + 2]));
        // No channel, nothing kept: everything from the database.
        assert_eq!(recent_ids(&hub, "nobody", 0), Err(i64::MAX));
        // Nothing is held without a period, even when another publisher's event was sent after
        // this one read the clock.
        let mut rx = hub.subscribe("a");
        let t = Instant::now();
        assert_eq!(hub.publish_at(vec![summary("a", n + 3)], t + PERIOD), None);
        assert_eq!(hub.publish_at(vec![summary("a", n + 4)], t), None);
        assert_eq!(received_ids(&mut rx), [vec![n + 3], vec![n + 4]]);
    }

    fn received_ids(rx: &mut broadcast::Receiver<Event>) -> Vec<Vec<i64>> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.summaries().iter().map(|s| s.id.get()).collect())
            .collect()
    }

    /// An idle bin's capture goes at once; the captures of a bin that sent an event less than a
    /// period ago wait for the period's end and go together, as one event with one text.
    #[test]
    fn a_busy_bin_sends_the_captures_of_a_period_as_one_event() {
        let hub = EventHub::with_period(PERIOD);
        let mut rx = hub.subscribe("a");
        let mut other = hub.subscribe("b");
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert_eq!(hub.publish_at(vec![summary("a", 1)], t0), None);
        assert_eq!(received_ids(&mut rx), [vec![1]]);
        // Held: due a period after the event of id 1.
        assert_eq!(
            hub.publish_at(
                vec![summary("a", 2), summary("b", 1), summary("a", 3)],
                ms(10)
            ),
            Some(ms(100))
        );
        assert_eq!(received_ids(&mut other), [vec![1]], "b was idle");
        assert_eq!(hub.publish_at(vec![summary("a", 4)], ms(50)), Some(ms(100)));
        assert!(received_ids(&mut rx).is_empty());
        assert_eq!(hub.flush_due(ms(99)), Some(ms(100)));
        assert!(received_ids(&mut rx).is_empty());
        assert_eq!(hub.flush_due(ms(100)), None);
        assert_eq!(received_ids(&mut rx), [vec![2, 3, 4]]);
        // A publish after the period's end sends what was held with it, at once.
        assert_eq!(
            hub.publish_at(vec![summary("a", 5)], ms(150)),
            Some(ms(200))
        );
        assert_eq!(hub.publish_at(vec![summary("a", 6)], ms(200)), None);
        assert_eq!(received_ids(&mut rx), [vec![5, 6]]);
        assert_eq!(hub.flush_due(ms(1000)), None);
        // A repeated id (a catch-up on PostgreSQL) is not held twice: ids stay increasing.
        hub.publish_at(vec![summary("a", 7)], ms(210));
        hub.publish_at(vec![summary("a", 7), summary("a", 8)], ms(220));
        hub.flush_due(ms(300));
        assert_eq!(received_ids(&mut rx), [vec![7, 8]]);
    }

    /// What a bin holds goes out without another publish: the hub's thread sends it.
    #[test]
    fn the_flusher_thread_sends_what_a_bin_held() {
        let hub = EventHub::new();
        let mut rx = hub.subscribe("a");
        let now = Instant::now();
        hub.publish_at(vec![summary("a", 1)], now);
        let due = hub.publish_at(vec![summary("a", 2)], now).unwrap();
        assert_eq!(received_ids(&mut rx), [vec![1]]);
        hub.wake.schedule(due);
        let mut got = Vec::new();
        for _ in 0..1000 {
            got = received_ids(&mut rx);
            if !got.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(got, [vec![2]]);
    }

    /// A deleted bin's streams get the captures it held before they see the channel close,
    /// as they got every capture committed before the delete.
    #[test]
    fn a_closed_bin_sends_what_it_held_first() {
        let hub = EventHub::with_period(PERIOD);
        let mut rx = hub.subscribe("a");
        let now = Instant::now();
        hub.publish_at(vec![summary("a", 1)], now);
        hub.publish_at(vec![summary("a", 2)], now);
        hub.close("a");
        assert_eq!(received_ids(&mut rx), [vec![1], vec![2]]);
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
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
