//! The model's index of its holds by acquisition. Keyed by 32 bits of a keyed hash of the
//! acquisition rather than by a copy of its text: an entry is 8 bytes and no allocation, where
//! a `String` key cost each hold a second copy of its acquisition (a heap block of its own) and
//! an entry four times the size, at every size of history. A hit is confirmed against the
//! hold's own text; an acquisition whose hash an earlier one has (a few in a million holds; the
//! key is random per index, so a history cannot aim at it) is kept by text in a map of its
//! own, so the index answers exactly as a map by text would.
//!
//! A grant only notes its hash ([`HoldIndex::push`]); the holds are entered in the map when
//! someone asks ([`HoldIndex::settle`]): most lookups find their hold without the index (its
//! client's, the one just seen), so most histories settle once, at the end, with every hold
//! at once, entered in the order of the places they take in the map. Entered one at a time as
//! granted, each one cost two cache misses in a map of millions: 5 % of a check at 10M lines.
//! Settling also tells the first hold whose acquisition an earlier hold has: the builder
//! settles before any lookup and before giving any error, so that a second grant of an
//! acquisition is the history's error at its own line, as when each grant was checked at once.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use super::Hold;

/// Holds waiting to be entered beyond this many are entered in the order of their places in
/// the map rather than in the order they were granted.
const IN_PLACE_ORDER: usize = 4096;

#[derive(Clone, Debug, Default)]
pub(crate) struct HoldIndex {
    /// The random key the acquisitions are hashed with.
    keys: RandomState,
    /// The first hold of each hash.
    by_hash: HashMap<u32, u32, BuildHasherDefault<AlreadyHashed>>,
    /// Holds whose acquisition's hash an earlier one had, by text.
    collided: HashMap<String, usize>,
    /// The hashes of the holds not entered yet: those from `holds.len() - waiting.len()` on.
    waiting: Vec<u32>,
    /// The first hold found whose acquisition an earlier hold has.
    twice: Option<usize>,
}

impl HoldIndex {
    /// Notes the next hold's acquisition (the hold at position `holds.len()` once pushed).
    #[inline]
    pub(crate) fn push(&mut self, acquisition: &str) {
        let hash = self.hash(acquisition);
        self.waiting.push(hash);
    }

    /// Enters every hold noted and not entered yet; the position of the first hold (in
    /// `holds`' order) whose acquisition an earlier hold has, if one has, now or before.
    pub(crate) fn settle(&mut self, holds: &[Hold]) -> Option<usize> {
        if !self.waiting.is_empty() {
            let twice = self.enter(holds);
            self.twice = self.twice.min(twice).or(self.twice).or(twice);
        }
        self.twice
    }

    /// Enters the holds waiting; the first of them whose acquisition an earlier hold has.
    fn enter(&mut self, holds: &[Hold]) -> Option<usize> {
        let first = holds.len() - self.waiting.len();
        let waiting = std::mem::take(&mut self.waiting);
        self.by_hash.reserve(waiting.len());
        let mut twice: Option<usize> = None;
        if waiting.len() <= IN_PLACE_ORDER {
            for (i, &hash) in (first..).zip(&waiting) {
                if !self.insert(hash, i, holds) && twice.is_none() {
                    twice = Some(i);
                }
            }
            // Its room is kept for the next holds to wait in.
            self.waiting = waiting;
            self.waiting.clear();
            return twice;
        }
        // By the low 32 bits of the map's own hash of each key (which place it takes), then by
        // position: each key's holds in grant order, so the first of a hash is its earliest,
        // and the map is written from one end to the other instead of at random.
        let mut order: Vec<u64> = (first..)
            .zip(waiting)
            .map(|(i, hash)| (u64::from(spread(hash) as u32) << 32) | i as u64)
            .collect();
        order.sort_unstable();
        for key in order {
            let (place, i) = ((key >> 32) as u32, (key & u64::from(u32::MAX)) as usize);
            let hash = place.wrapping_mul(SPREAD_INVERSE);
            if !self.insert(hash, i, holds) && twice.is_none_or(|t| i < t) {
                twice = Some(i);
            }
        }
        twice
    }

    /// Where the hold of `acquisition` is in `holds` (the holds this index was built over,
    /// every one entered: [`HoldIndex::settle`]).
    pub(crate) fn get(&self, acquisition: &str, holds: &[Hold]) -> Option<usize> {
        debug_assert!(self.waiting.is_empty(), "a lookup in an unsettled index");
        match self.by_hash.get(&self.hash(acquisition)) {
            Some(&i) if holds[i as usize].acquisition == acquisition => Some(i as usize),
            _ if self.collided.is_empty() => None,
            _ => self.collided.get(acquisition).copied(),
        }
    }

    /// Enters hold `i`, whose acquisition has `hash`, unless `holds` (the holds the index was
    /// built over) has one of it entered already; false then, and nothing changes.
    fn insert(&mut self, hash: u32, i: usize, holds: &[Hold]) -> bool {
        let acquisition = &holds[i].acquisition;
        match (self.by_hash.entry(hash), u32::try_from(i)) {
            (Entry::Vacant(entry), Ok(i)) => {
                entry.insert(i);
                true
            }
            (Entry::Occupied(entry), _)
                if holds[*entry.get() as usize].acquisition == *acquisition =>
            {
                false
            }
            // A hash taken by another acquisition (or a position past 2^32, never in memory).
            _ => match self.collided.entry(acquisition.clone()) {
                Entry::Vacant(entry) => {
                    entry.insert(i);
                    true
                }
                Entry::Occupied(_) => false,
            },
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_hash.is_empty() && self.waiting.is_empty()
    }

    /// The low 32 bits of the acquisition's keyed hash.
    fn hash(&self, acquisition: &str) -> u32 {
        self.keys.hash_one(acquisition) as u32
    }

    fn len(&self) -> usize {
        self.by_hash.len() + self.collided.len() + self.waiting.len()
    }
}

/// Two indexes are equal when they index as many holds: an index is derived from its model's
/// holds, which the model compares itself, and its hashes depend on its random key.
impl PartialEq for HoldIndex {
    fn eq(&self, other: &HoldIndex) -> bool {
        self.len() == other.len()
    }
}

/// What [`AlreadyHashed`] multiplies a key by (odd, so that it is one to one).
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
/// The inverse of `SPREAD`'s low 32 bits modulo 2^32: a key back from the low 32 bits of its
/// spread.
const SPREAD_INVERSE: u32 = inverse(SPREAD as u32);

/// The inverse of odd `a` modulo 2^32 (Newton's iteration; each step doubles the bits right).
const fn inverse(a: u32) -> u32 {
    let mut x = a;
    let mut step = 0;
    while step < 5 {
        x = x.wrapping_mul(2u32.wrapping_sub(a.wrapping_mul(x)));
        step += 1;
    }
    x
}

fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(SPREAD)
}

/// The hasher of keys that are already keyed hashes: it spreads the 32 bits over 64 (the map
/// places by the low bits and tells entries apart by the top ones), one to one.
#[derive(Default)]
pub(crate) struct AlreadyHashed(u64);

impl Hasher for AlreadyHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u32 keys are hashed with it; any other input is folded in, never dropped.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = spread(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(acquisition: &str) -> Hold {
        Hold {
            acquisition: acquisition.to_string(),
            ..Hold::default()
        }
    }

    /// Notes and settles `holds[from..]`.
    fn enter(index: &mut HoldIndex, holds: &[Hold], from: usize) -> Option<usize> {
        for h in &holds[from..] {
            index.push(&h.acquisition);
        }
        index.settle(holds)
    }

    #[test]
    fn finds_what_it_indexed_and_nothing_else() {
        let mut holds = vec![hold("0.1"), hold("1.1"), hold("")];
        let mut index = HoldIndex::default();
        assert_eq!(enter(&mut index, &holds, 0), None);
        holds.push(hold("1.1"));
        assert_eq!(enter(&mut index, &holds, 3), Some(3));
        assert_eq!(index.get("1.1", &holds), Some(1));
        assert_eq!(index.get("", &holds), Some(2));
        assert_eq!(index.get("0.2", &holds), None);
    }

    #[test]
    fn acquisitions_whose_hashes_meet_are_both_found() {
        // Force a meeting: "b"'s hash already names hold 0 ("a"), so "b" goes by its text.
        let holds = vec![hold("a"), hold("b"), hold("b")];
        let mut index = HoldIndex::default();
        assert_eq!(enter(&mut index, &holds[..1], 0), None);
        index.by_hash.insert(index.hash("b"), 0);
        assert_eq!(enter(&mut index, &holds[..2], 1), None);
        assert_eq!(enter(&mut index, &holds, 2), Some(2));
        assert_eq!(index.collided.len(), 1);
        assert_eq!(index.get("a", &holds), Some(0));
        assert_eq!(index.get("b", &holds), Some(1));
        assert_eq!(index.get("c", &holds), None);
    }

    #[test]
    fn the_inverse_undoes_the_spread() {
        for hash in [0, 1, 2, 0xdead_beef, u32::MAX] {
            assert_eq!((spread(hash) as u32).wrapping_mul(SPREAD_INVERSE), hash);
        }
    }

    #[test]
    fn many_holds_at_once_answer_as_one_at_a_time() {
        let n = 3 * IN_PLACE_ORDER;
        let mut texts: Vec<String> = (0..n).map(|i| format!("{}.{i}", i % 5)).collect();
        // Granted twice: 7000 (of 5000) is the first, 9000 (of 100) and 8000 (of 7000) later.
        texts[7000] = texts[5000].clone();
        texts[9000] = texts[100].clone();
        texts[8000] = texts[7000].clone();
        let holds: Vec<Hold> = texts.iter().map(|t| hold(t)).collect();
        let mut at_once = HoldIndex::default();
        assert_eq!(enter(&mut at_once, &holds, 0), Some(7000));
        let mut one_by_one = HoldIndex::default();
        let mut first_twice = None;
        for i in 0..n {
            let twice = enter(&mut one_by_one, &holds[..=i], i);
            first_twice = first_twice.or(twice);
        }
        assert_eq!(first_twice, Some(7000));
        for text in texts.iter().map(String::as_str).chain(["0.7000", "", "x"]) {
            let found = at_once.get(text, &holds);
            assert_eq!(found, one_by_one.get(text, &holds), "{text}");
            assert_eq!(found, texts.iter().position(|t| t == text), "{text}");
        }
    }
}
