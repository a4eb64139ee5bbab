//! The model's index of its holds by acquisition. Keyed by 32 bits of a keyed hash of the
//! acquisition rather than by a copy of its text: an entry is 8 bytes and no allocation, where
//! a `String` key cost each hold a second copy of its acquisition (a heap block of its own) and
//! an entry four times the size, at every size of history. A hit is confirmed against the
//! hold's own text; an acquisition whose hash an earlier one has (a few in a million holds; the
//! key is random per index, so a history cannot aim at it) is kept by text in a map of its
//! own, so the index answers exactly as a map by text would.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use super::Hold;

#[derive(Clone, Debug, Default)]
pub(crate) struct HoldIndex {
    /// The random key the acquisitions are hashed with.
    keys: RandomState,
    /// The first hold of each hash.
    by_hash: HashMap<u32, u32, BuildHasherDefault<AlreadyHashed>>,
    /// Holds whose acquisition's hash an earlier one had, by text.
    collided: HashMap<String, usize>,
}

impl HoldIndex {
    /// Where the hold of `acquisition` is in `holds` (the holds this index was built over).
    pub(crate) fn get(&self, acquisition: &str, holds: &[Hold]) -> Option<usize> {
        match self.by_hash.get(&self.hash(acquisition)) {
            Some(&i) if holds[i as usize].acquisition == acquisition => Some(i as usize),
            _ if self.collided.is_empty() => None,
            _ => self.collided.get(acquisition).copied(),
        }
    }

    /// Indexes hold `i`, of `acquisition`, unless `holds` (the holds the index was built
    /// over) has one of it already; false then, and nothing changes.
    pub(crate) fn insert(&mut self, acquisition: &str, i: usize, holds: &[Hold]) -> bool {
        let hash = self.hash(acquisition);
        match (self.by_hash.entry(hash), u32::try_from(i)) {
            (Entry::Vacant(entry), Ok(i)) => {
                entry.insert(i);
                true
            }
            (Entry::Occupied(entry), _)
                if holds[*entry.get() as usize].acquisition == acquisition =>
            {
                false
            }
            // A hash taken by another acquisition (or a position past 2^32, never in memory).
            _ => match self.collided.entry(acquisition.to_string()) {
                Entry::Vacant(entry) => {
                    entry.insert(i);
                    true
                }
                Entry::Occupied(_) => false,
            },
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// The low 32 bits of the acquisition's keyed hash.
    fn hash(&self, acquisition: &str) -> u32 {
        self.keys.hash_one(acquisition) as u32
    }

    fn len(&self) -> usize {
        self.by_hash.len() + self.collided.len()
    }
}

/// Two indexes are equal when they index as many holds: an index is derived from its model's
/// holds, which the model compares itself, and its hashes depend on its random key.
impl PartialEq for HoldIndex {
    fn eq(&self, other: &HoldIndex) -> bool {
        self.len() == other.len()
    }
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
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
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

    #[test]
    fn finds_what_it_indexed_and_nothing_else() {
        let holds = vec![hold("0.1"), hold("1.1"), hold("")];
        let mut index = HoldIndex::default();
        for (i, h) in holds.iter().enumerate() {
            assert!(index.insert(&h.acquisition, i, &holds));
        }
        assert!(!index.insert("1.1", 3, &holds));
        assert_eq!(index.get("1.1", &holds), Some(1));
        assert_eq!(index.get("", &holds), Some(2));
        assert_eq!(index.get("0.2", &holds), None);
    }

    #[test]
    fn acquisitions_whose_hashes_meet_are_both_found() {
        // Force a meeting: "b"'s hash already names hold 0 ("a"), so "b" goes by its text.
        let holds = vec![hold("a"), hold("b")];
        let mut index = HoldIndex::default();
        assert!(index.insert("a", 0, &holds));
        index.by_hash.insert(index.hash("b"), 0);
        assert!(index.insert("b", 1, &holds));
        assert!(!index.insert("b", 2, &holds));
        assert_eq!(index.collided.len(), 1);
        assert_eq!(index.get("a", &holds), Some(0));
        assert_eq!(index.get("b", &holds), Some(1));
        assert_eq!(index.get("c", &holds), None);
    }
}
