//! Where a bin's requests sit: request `seq` is stored in the bin's slot `seq % ring`.
//!
//! A bin's ring is the request cap in force at its first capture (`bins.ring`, 0 until then).
//! A bin never holds a request more than `ring - 1` ids older than its newest, so every stored
//! request has a slot of its own, and a full bin writes each new capture over the row of the
//! request it evicts, in place: same row, same slot, same `(bin_num, slot)` index entry. Before
//! schema version 7 the index was `(bin_id, seq)`, and every capture into a full bin moved its
//! recycled row's entry from the bin's first index leaf to its last: two thirds of the WAL
//! bytes of a capture under load (bench/README.md, "Where the WAL's bytes go").
//!
//! The price is in the reads: ids `lo..=hi` of a bin are at most two runs of slots, each in id
//! order, which [`Ring::runs`] computes; every ordered read walks them one after the other.

use rusqlite::{Connection, OptionalExtension};

/// The ring of a bin whose requests were stored before rings existed (schema version 6 and
/// older): their slot is their id, so a capture never overwrites another in place. They expire
/// with their bin.
pub const UNBOUNDED: i64 = i64::MAX;

/// A bin's ring and its newest request id, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ring {
    /// Slots of the bin; 0 while the bin has never captured (it has no rows).
    pub size: i64,
    /// The newest id the bin ever gave (`bins.last_request_id`).
    pub last: i64,
}

/// Ids `seq_lo..=seq_hi` of a bin, stored in slots `slot_lo..=slot_hi`, in the same order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub slot_lo: i64,
    pub slot_hi: i64,
    pub seq_lo: i64,
    pub seq_hi: i64,
}

impl Ring {
    /// The number of `bin` (`bins.num`, what its rows name it by) and its ring, `None` when
    /// there is no such bin.
    pub fn of(conn: &Connection, bin: &str) -> rusqlite::Result<Option<(i64, Ring)>> {
        conn.prepare_cached("SELECT num, ring, last_request_id FROM bins WHERE id = ?1")?
            .query_row([bin], |row| {
                Ok((
                    row.get(0)?,
                    Ring {
                        size: row.get(1)?,
                        last: row.get(2)?,
                    },
                ))
            })
            .optional()
    }

    /// The ring a bin gets at its first capture: the request cap then in force.
    pub fn for_cap(max_per_bin: u64) -> i64 {
        i64::try_from(max_per_bin).unwrap_or(UNBOUNDED).max(1)
    }

    /// The slot of request `seq`.
    pub fn slot(self, seq: i64) -> i64 {
        seq.rem_euclid(self.size)
    }

    /// The slots that can hold ids `lo..=hi`, oldest run first: at most two, none when the range
    /// holds no id the bin can still have (older than its window, or newer than its newest).
    pub fn runs(self, lo: i64, hi: i64) -> impl DoubleEndedIterator<Item = Run> {
        let lo = lo.max(1).max(self.last.saturating_sub(self.size - 1));
        let hi = hi.min(self.last);
        let (mut first, mut second) = (None, None);
        if self.size > 0 && lo <= hi {
            let (slot_lo, slot_hi) = (self.slot(lo), self.slot(hi));
            if slot_lo <= slot_hi {
                first = Some(Run {
                    slot_lo,
                    slot_hi,
                    seq_lo: lo,
                    seq_hi: hi,
                });
            } else {
                // Wraps: up to the ring's last slot, then on from slot 0.
                let split = lo + (self.size - 1 - slot_lo);
                first = Some(Run {
                    slot_lo,
                    slot_hi: self.size - 1,
                    seq_lo: lo,
                    seq_hi: split,
                });
                second = Some(Run {
                    slot_lo: 0,
                    slot_hi,
                    seq_lo: split + 1,
                    seq_hi: hi,
                });
            }
        }
        first.into_iter().chain(second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(size: i64, last: i64, lo: i64, hi: i64) -> Vec<(i64, i64, i64, i64)> {
        Ring { size, last }
            .runs(lo, hi)
            .map(|r| (r.slot_lo, r.slot_hi, r.seq_lo, r.seq_hi))
            .collect()
    }

    #[test]
    fn a_range_of_ids_is_at_most_two_runs_of_slots_in_id_order() {
        // Ring of 4 holding 7..=10 in slots 3, 0, 1, 2.
        assert_eq!(runs(4, 10, 1, 10), [(3, 3, 7, 7), (0, 2, 8, 10)]);
        assert_eq!(runs(4, 10, 8, 9), [(0, 1, 8, 9)]);
        assert_eq!(runs(4, 10, 1, 7), [(3, 3, 7, 7)]);
        assert_eq!(runs(4, 10, 1, 6), []);
        assert_eq!(runs(4, 10, 11, i64::MAX), []);
        assert_eq!(
            runs(4, 10, i64::MIN, i64::MAX),
            [(3, 3, 7, 7), (0, 2, 8, 10)]
        );
        // Not yet wrapped.
        assert_eq!(runs(4, 3, 1, 3), [(1, 3, 1, 3)]);
        assert_eq!(runs(4, 4, 1, 4), [(1, 3, 1, 3), (0, 0, 4, 4)]);
        // A bin that never captured has no slots; an old bin's slot is its id.
        assert_eq!(runs(0, 0, 1, i64::MAX), []);
        assert_eq!(runs(UNBOUNDED, 12, 0, 9), [(1, 9, 1, 9)]);
        // Newest run first when walked backwards.
        let back: Vec<Run> = Ring { size: 4, last: 10 }.runs(1, 10).rev().collect();
        assert_eq!(back[0].seq_hi, 10);
    }

    #[test]
    fn the_ring_is_the_cap() {
        assert_eq!(Ring::for_cap(1000), 1000);
        assert_eq!(Ring::for_cap(u64::MAX), UNBOUNDED);
        assert_eq!(Ring::for_cap(0), 1);
    }
}
