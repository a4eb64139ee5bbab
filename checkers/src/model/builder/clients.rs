//! The builder's entries of the clients, by client number. Clients are numbered from 0 and a
//! run has a handful, so the entries of small numbers sit in a list at their number: each
//! client line finds its entry by indexing, where a map hashed the number (SipHash) on nine
//! lines in ten. A history is hostile input and may number its clients anyhow: numbers from
//! `DENSE` on go to a map, so a huge number costs one entry, not a list as long as it.

use std::collections::HashMap;

use super::Client;

/// Client numbers below this are kept in the list.
const DENSE: u64 = 1024;

#[derive(Default)]
pub(super) struct Clients {
    /// The entry of client `p` at `p`, `None` for a number not seen.
    dense: Vec<Option<Client>>,
    /// The entries of clients numbered `DENSE` or more.
    sparse: HashMap<u64, Client>,
}

impl Clients {
    /// Client `p`'s entry, made empty on its first line.
    #[inline]
    pub(super) fn entry(&mut self, p: u64) -> &mut Client {
        if p >= DENSE {
            return self.sparse.entry(p).or_default();
        }
        let at = p as usize;
        if at >= self.dense.len() {
            self.dense.resize_with(at + 1, || None);
        }
        self.dense[at].get_or_insert_with(Client::default)
    }

    /// Client `p`'s entry, if it has had a line.
    #[inline]
    pub(super) fn get(&self, p: u64) -> Option<&Client> {
        if p >= DENSE {
            return self.sparse.get(&p);
        }
        self.dense.get(p as usize).and_then(Option::as_ref)
    }

    /// Every client's entry, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Client> {
        self.dense.iter().flatten().chain(self.sparse.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_huge_numbers_each_keep_their_own_entry() {
        let mut clients = Clients::default();
        for (p, index) in [(0, 1), (3, 2), (DENSE, 3), (u64::MAX, 4)] {
            clients.entry(p).pending.index = index;
        }
        clients.entry(3).pending.index += 10;
        assert_eq!(clients.get(3).map(|c| c.pending.index), Some(12));
        assert_eq!(clients.get(u64::MAX).map(|c| c.pending.index), Some(4));
        assert!(clients.get(1).is_none() && clients.get(DENSE + 1).is_none());
        assert!(clients.get(5000).is_none());
        let mut seen: Vec<u64> = clients.values().map(|c| c.pending.index).collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 3, 4, 12]);
        // A huge number made no list as long as itself.
        assert!(clients.dense.len() <= 4);
    }
}
