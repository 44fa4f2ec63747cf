//! Bins this node looked up and did not find: a sender that keeps posting to a deleted, expired
//! or mistyped bin costs one query per [`Misses::TTL`], not one per request.
//!
//! Another node may create a bin at any time, so a miss is only kept while creations reach this
//! node: every node announces a bin it creates (`created {bin}` on the bins channel), the
//! listener drops the miss, and while the listener is not connected nothing is kept or trusted.
//! A lookup that raced with the announcement of its own id, or with a lost connection, keeps
//! nothing either: see [`Misses::begin`]. Announcements of other ids do not void a lookup, so
//! on a busy cluster, where some node creates a bin every moment, misses are still kept. The
//! TTL bounds what slips through anyway (a node of an older version, which does not announce,
//! during a rolling upgrade).
//!
//! Ids are random (80 bits), so a bin created after a miss on its id needs someone who knew the
//! id before it existed. Random ids sprayed by a stranger are each new: they still cost a query
//! each, and only fill the map until it starts over.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct Misses {
    /// When each miss was found.
    found: HashMap<String, Instant>,
    /// Bumped by every reset: a lookup that began before one may have missed any creation.
    epoch: u64,
    /// Creations announced so far, this epoch or earlier.
    announced: u64,
    /// The last [`Misses::RECENT`] creations with their number in `announced`: a lookup's
    /// miss is kept unless its own id is among those announced since it began.
    recent: VecDeque<(u64, String)>,
    /// Whether creations are announced to this node now (the listener is connected).
    trusted: bool,
}

/// Where a lookup began: taken before its query, given back to [`Misses::remember`] after it.
#[derive(Debug, Clone, Copy)]
pub struct Lookup {
    epoch: u64,
    announced: u64,
}

impl Misses {
    /// How long a miss is believed.
    pub const TTL: Duration = Duration::from_secs(5);
    /// Misses kept at most; past it the map starts over (a random-id spray would fill it with
    /// ids never asked again).
    pub const MAX: usize = 10_000;
    /// Creations remembered for the lookups in flight; a lookup that saw more go by keeps
    /// nothing (it cannot tell whether its id was among them).
    pub const RECENT: usize = 1024;

    /// Whether `id` was found missing within the TTL, and that can be trusted.
    pub fn missing(&self, id: &str, now: Instant) -> bool {
        self.trusted
            && self
                .found
                .get(id)
                .is_some_and(|&at| now.duration_since(at) < Self::TTL)
    }

    /// Taken before a lookup's query, given back to [`Misses::remember`] after it.
    pub fn begin(&self) -> Lookup {
        Lookup {
            epoch: self.epoch,
            announced: self.announced,
        }
    }

    /// A lookup that began at `lookup` found no live bin `id`.
    pub fn remember(&mut self, id: &str, lookup: Lookup, now: Instant) {
        if !self.trusted || lookup.epoch != self.epoch || self.created_since(id, lookup.announced) {
            return;
        }
        if self.found.len() >= Self::MAX {
            self.found.clear();
        }
        self.found.insert(id.to_owned(), now);
    }

    /// Whether `id` may have been created after creation number `since` (true when more went by
    /// than [`Misses::RECENT`] remembers).
    fn created_since(&self, id: &str, since: u64) -> bool {
        let went_by = self.announced - since;
        if went_by > self.recent.len() as u64 {
            return true;
        }
        self.recent
            .iter()
            .rev()
            .take_while(|(n, _)| *n > since)
            .any(|(_, made)| made == id)
    }

    /// A node created `id` (announced, or this node).
    pub fn created(&mut self, id: &str) {
        self.found.remove(id);
        self.announced += 1;
        if self.recent.len() >= Self::RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((self.announced, id.to_owned()));
    }

    /// Forgets every miss; `trusted`: whether creations are announced from now on (the listener
    /// connected) or not (it lost its connection).
    pub fn reset(&mut self, trusted: bool) {
        self.found.clear();
        self.epoch += 1;
        self.trusted = trusted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted() -> Misses {
        let mut m = Misses::default();
        m.reset(true);
        m
    }

    #[test]
    fn a_miss_is_believed_for_the_ttl_only() {
        let mut m = trusted();
        let t0 = Instant::now();
        assert!(!m.missing("a", t0));
        m.remember("a", m.begin(), t0);
        assert!(m.missing("a", t0 + Duration::from_millis(10)));
        assert!(!m.missing("b", t0));
        assert!(!m.missing("a", t0 + Misses::TTL));
    }

    #[test]
    fn a_creation_drops_the_miss_and_voids_lookups_in_flight() {
        let mut m = trusted();
        let t0 = Instant::now();
        m.remember("a", m.begin(), t0);
        let in_flight = m.begin();
        m.created("a");
        assert!(!m.missing("a", t0));
        // A lookup that began before the announcement may have missed the new bin.
        m.remember("a", in_flight, t0);
        assert!(!m.missing("a", t0));
        m.remember("a", m.begin(), t0);
        assert!(m.missing("a", t0));
    }

    #[test]
    fn a_creation_of_another_id_keeps_the_lookup() {
        let mut m = trusted();
        let t0 = Instant::now();
        let in_flight = m.begin();
        m.created("b");
        m.created("c");
        m.remember("a", in_flight, t0);
        assert!(m.missing("a", t0), "only its own id voids a lookup");
        let in_flight = m.begin();
        m.created("x");
        m.created("a");
        m.created("y");
        m.remember("a", in_flight, t0);
        assert!(!m.missing("a", t0), "created among others since it began");
    }

    #[test]
    fn a_lookup_that_saw_more_creations_than_remembered_keeps_nothing() {
        let mut m = trusted();
        let t0 = Instant::now();
        let in_flight = m.begin();
        for i in 0..Misses::RECENT {
            m.created(&format!("bin{i}"));
        }
        m.remember("a", in_flight, t0);
        assert!(m.missing("a", t0), "every creation since is remembered");
        let in_flight = m.begin();
        for i in 0..=Misses::RECENT {
            m.created(&format!("other{i}"));
        }
        m.remember("b", in_flight, t0);
        assert!(!m.missing("b", t0), "one went by unremembered");
        assert_eq!(m.recent.len(), Misses::RECENT);
    }

    #[test]
    fn nothing_is_kept_or_believed_while_creations_are_not_announced() {
        let mut m = trusted();
        let t0 = Instant::now();
        m.remember("a", m.begin(), t0);
        let in_flight = m.begin();
        m.reset(false);
        assert!(!m.missing("a", t0));
        m.remember("b", m.begin(), t0);
        assert!(!m.missing("b", t0));
        m.reset(true);
        m.remember("c", in_flight, t0);
        assert!(!m.missing("c", t0), "began before the connection was lost");
        assert!(!m.missing("a", t0), "forgotten on reconnection");
    }

    #[test]
    fn the_map_is_bounded() {
        let mut m = trusted();
        let t0 = Instant::now();
        for i in 0..Misses::MAX + 5 {
            m.remember(&format!("bin{i}"), m.begin(), t0);
        }
        assert!(m.found.len() <= Misses::MAX);
        assert!(m.missing(&format!("bin{}", Misses::MAX + 4), t0));
    }
}
