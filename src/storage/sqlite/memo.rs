//! What the writer remembers between transactions about the bins it stores to, so that a capture
//! costs fewer b-tree seeks: each bin's number (`bins.num`), found by its text id once, and the
//! `n` of the answers found or stored in its `bin_responses`.
//!
//! Without it, a run found each of its bins by the text id (the `UNIQUE` index's seek, then the
//! row's) and each capture's answer by a seek into `bin_responses`, whenever the run's previous
//! capture was of another bin: under load spread over many bins, every capture. With 1000 bins
//! taking turns, the memo takes ~5% off the writer's CPU (index seeks 18.7% -> 16.3% of its
//! time; the rest is the requests' index) and ~2% off the whole server's (perf and five
//! alternating runs; bench/RESULTS.md 2026-12-06 14:59); one bin under load gains nothing, its
//! runs already look their bin and answer up once.
//!
//! The memo only ever says what a committed transaction wrote, or points at nothing:
//! - A bin's number is never given again (`AUTOINCREMENT`), so a number remembered for a bin
//!   deleted since finds no row, and the writer then asks by the id ([`Memo::forget_num`]).
//! - Answers are remembered by the bin's number, so a deleted bin's cannot be found again; a
//!   bin's answers go when its requests are cleared ([`Memo::forget_answers`]).
//! - What a transaction learns is lost with it if it rolls back: the writer clears the memo
//!   where it rolls back, a failed batch's transaction or one operation's savepoint in the
//!   batch's redo ([`Memo::clear`]).
//!
//! Its size is bounded: past [`MAX_BINS`] bins it starts again empty (bins come and go; the
//! ones still sending are learnt again with one lookup each).

use std::collections::HashMap;
use std::sync::Arc;

/// Bins remembered before the memo starts again: some 64 bytes each, with an answer or two.
pub const MAX_BINS: usize = 65_536;

#[derive(Default)]
pub struct Memo {
    /// Text id -> number.
    nums: HashMap<Box<str>, i64>,
    /// Number -> (answer record, its `n` in `bin_responses`), at most the bin's stored answers.
    answers: HashMap<i64, Vec<(Arc<str>, i64)>>,
}

impl Memo {
    /// The number remembered for bin `id`: confirm it with the row (it may be deleted since).
    pub fn num(&self, id: &str) -> Option<i64> {
        self.nums.get(id).copied()
    }

    /// Bin `id` has number `num`, as its row says.
    pub fn learn_num(&mut self, id: &str, num: i64) {
        if self.nums.len() >= MAX_BINS && !self.nums.contains_key(id) {
            self.clear();
        }
        self.nums.insert(id.into(), num);
    }

    /// Bin `id` has no row (any longer).
    pub fn forget_num(&mut self, id: &str) {
        if let Some(num) = self.nums.remove(id) {
            self.answers.remove(&num);
        }
    }

    /// The `n` of `record` among the answers of bin `num`, if remembered.
    pub fn answer(&self, num: i64, record: &Arc<str>) -> Option<i64> {
        self.answers
            .get(&num)?
            .iter()
            .find_map(|(known, n)| (Arc::ptr_eq(known, record) || known == record).then_some(*n))
    }

    /// Bin `num`'s `bin_responses` holds `record` as `n`.
    pub fn learn_answer(&mut self, num: i64, record: &Arc<str>, n: i64) {
        let known = self.answers.entry(num).or_default();
        if !known.iter().any(|(_, m)| *m == n) {
            known.push((record.clone(), n));
        }
    }

    /// Bin `num`'s answers were deleted (its requests cleared).
    pub fn forget_answers(&mut self, num: i64) {
        self.answers.remove(&num);
    }

    /// Forgets everything: what the memo holds may have been rolled back.
    pub fn clear(&mut self) {
        self.nums.clear();
        self.answers.clear();
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.nums.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_found_by_text_as_well_as_by_pointer_and_go_with_their_bin() {
        let mut memo = Memo::default();
        memo.learn_num("b1", 7);
        let record: Arc<str> = Arc::from(r#"{"status":200}"#);
        memo.learn_answer(7, &record, 1);
        assert_eq!(memo.answer(7, &record), Some(1));
        assert_eq!(memo.answer(7, &Arc::from(r#"{"status":200}"#)), Some(1));
        assert_eq!(memo.answer(7, &Arc::from(r#"{"status":201}"#)), None);
        assert_eq!(memo.answer(8, &record), None);
        memo.forget_answers(7);
        assert_eq!(memo.answer(7, &record), None);
        assert_eq!(memo.num("b1"), Some(7));
        memo.learn_answer(7, &record, 2);
        memo.forget_num("b1");
        assert_eq!((memo.num("b1"), memo.answer(7, &record)), (None, None));
    }

    #[test]
    fn the_memo_starts_again_past_its_bound() {
        let mut memo = Memo::default();
        for i in 0..MAX_BINS as i64 {
            memo.learn_num(&format!("b{i}"), i);
        }
        memo.learn_num("b0", 0);
        assert_eq!(memo.len(), MAX_BINS);
        memo.learn_num("new", -1);
        assert_eq!(
            (memo.len(), memo.num("b1"), memo.num("new")),
            (1, None, Some(-1))
        );
    }
}
