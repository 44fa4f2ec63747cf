//! Bins this node looked up and did not find: a sender that keeps posting to a deleted, expired
//! or mistyped bin costs one query per [`Misses::TTL`], not one per request.
//!
//! Another node may create a bin at any time, so a miss is only kept while creations reach this
//! node: every node announces a bin it creates (`created {bin}` on the bins channel), the
//! listener drops the miss, and while the listener is not connected nothing is kept or trusted.
//! A lookup that raced with an announcement (or with a lost connection) keeps nothing either:
//! see [`Misses::generation`]. The TTL bounds what slips through anyway (a node of an older
//! version, which does not announce, during a rolling upgrade).
//!
//! Ids are random (80 bits), so a bin created after a miss on its id needs someone who knew the
//! id before it existed. Random ids sprayed by a stranger are each new: they still cost a query
//! each, and only fill the map until it starts over.

use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct Misses {
    /// When each miss was found.
    found: HashMap<String, Instant>,
    /// Bumped by every announced creation and every reset: a lookup that began under another
    /// generation may have missed a bin created meanwhile, so its miss is not kept.
    generation: u64,
    /// Whether creations are announced to this node now (the listener is connected).
    trusted: bool,
}

impl Misses {
    /// How long a miss is believed.
    pub const TTL: Duration = Duration::from_secs(5);
    /// Misses kept at most; past it the map starts over (a random-id spray would fill it with
    /// ids never asked again).
    pub const MAX: usize = 10_000;

    /// Whether `id` was found missing within the TTL, and that can be trusted.
    pub fn missing(&self, id: &str, now: Instant) -> bool {
        self.trusted
            && self
                .found
                .get(id)
                .is_some_and(|&at| now.duration_since(at) < Self::TTL)
    }

    /// Taken before a lookup's query, given back to [`Misses::remember`] after it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// A lookup that began at `generation` found no live bin `id`.
    pub fn remember(&mut self, id: &str, generation: u64, now: Instant) {
        if !self.trusted || generation != self.generation {
            return;
        }
        if self.found.len() >= Self::MAX {
            self.found.clear();
        }
        self.found.insert(id.to_owned(), now);
    }

    /// A node created `id` (announced, or this node).
    pub fn created(&mut self, id: &str) {
        self.found.remove(id);
        self.generation += 1;
    }

    /// Forgets every miss; `trusted`: whether creations are announced from now on (the listener
    /// connected) or not (it lost its connection).
    pub fn reset(&mut self, trusted: bool) {
        self.found.clear();
        self.generation += 1;
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
        m.remember("a", m.generation(), t0);
        assert!(m.missing("a", t0 + Duration::from_millis(10)));
        assert!(!m.missing("b", t0));
        assert!(!m.missing("a", t0 + Misses::TTL));
    }

    #[test]
    fn a_creation_drops_the_miss_and_voids_lookups_in_flight() {
        let mut m = trusted();
        let t0 = Instant::now();
        m.remember("a", m.generation(), t0);
        let in_flight = m.generation();
        m.created("a");
        assert!(!m.missing("a", t0));
        // A lookup that began before the announcement may have missed the new bin.
        m.remember("a", in_flight, t0);
        assert!(!m.missing("a", t0));
        m.remember("a", m.generation(), t0);
        assert!(m.missing("a", t0));
    }

    #[test]
    fn nothing_is_kept_or_believed_while_creations_are_not_announced() {
        let mut m = trusted();
        let t0 = Instant::now();
        m.remember("a", m.generation(), t0);
        let in_flight = m.generation();
        m.reset(false);
        assert!(!m.missing("a", t0));
        m.remember("b", m.generation(), t0);
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
            m.remember(&format!("bin{i}"), m.generation(), t0);
        }
        assert!(m.found.len() <= Misses::MAX);
        assert!(m.missing(&format!("bin{}", Misses::MAX + 4), t0));
    }
}
