//! The model's index of its holds by acquisition. Keyed by a keyed hash of the acquisition
//! rather than by a copy of its text: one entry is two words and no allocation, where a
//! `String` key cost each hold a second copy of its acquisition (a heap block of its own) and a
//! map entry twice the size, at every size of history. A hit is confirmed against the hold's
//! own text; two acquisitions whose hashes meet (never by chance in practice, and the key is
//! random per index, so a history cannot aim at it) are kept by text in a map of their own, so
//! the index answers exactly as a map by text would.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use super::Hold;

#[derive(Clone, Debug, Default)]
pub(crate) struct HoldIndex {
    /// The random key the acquisitions are hashed with.
    keys: RandomState,
    /// The first hold of each hash.
    by_hash: HashMap<u64, usize, BuildHasherDefault<AlreadyHashed>>,
    /// Holds whose acquisition's hash an earlier one had, by text.
    collided: HashMap<String, usize>,
}

impl HoldIndex {
    /// Where the hold of `acquisition` is in `holds` (the holds this index was built over).
    pub(crate) fn get(&self, acquisition: &str, holds: &[Hold]) -> Option<usize> {
        let hash = self.keys.hash_one(acquisition);
        match self.by_hash.get(&hash) {
            Some(&i) if holds[i].acquisition == acquisition => Some(i),
            _ if self.collided.is_empty() => None,
            _ => self.collided.get(acquisition).copied(),
        }
    }

    /// Indexes hold `i`, of `acquisition`, unless `holds` (the holds the index was built
    /// over) has one of it already; false then, and nothing changes.
    pub(crate) fn insert(&mut self, acquisition: &str, i: usize, holds: &[Hold]) -> bool {
        let hash = self.keys.hash_one(acquisition);
        match self.by_hash.entry(hash) {
            Entry::Vacant(entry) => {
                entry.insert(i);
                true
            }
            Entry::Occupied(entry) if holds[*entry.get()].acquisition == acquisition => false,
            Entry::Occupied(_) => match self.collided.entry(acquisition.to_string()) {
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

/// The hasher of keys that are already keyed hashes: it passes the key through.
#[derive(Default)]
pub(crate) struct AlreadyHashed(u64);

impl Hasher for AlreadyHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed with it; any other input is folded in, never dropped.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
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
        index.by_hash.insert(index.keys.hash_one("b"), 0);
        assert!(index.insert("b", 1, &holds));
        assert!(!index.insert("b", 2, &holds));
        assert_eq!(index.collided.len(), 1);
        assert_eq!(index.get("a", &holds), Some(0));
        assert_eq!(index.get("b", &holds), Some(1));
        assert_eq!(index.get("c", &holds), None);
    }
}
