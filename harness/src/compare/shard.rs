//! `compare --shard K/N`: a stable split of a matrix's cells over N CI jobs, balanced by how
//! long each cell is expected to take (its time limit per repeat, plus an estimate of its
//! services' start-up), so that the jobs end at about the same time. The split depends on the
//! planned cells alone: every job of the same matrix computes the same one, and `lockpick
//! merge` checks each shard against it.

use std::fmt;
use std::str::FromStr;

use super::plan::PlannedCell;

/// Most shards of one comparison.
pub const MAX_SHARDS: usize = 256;

/// Shard `k` of `n` (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub k: usize,
    pub n: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let wrong = || format!("{text:?} is not K/N: shard K of N, 1 <= K <= N <= {MAX_SHARDS}");
        let (k, n) = text.split_once('/').ok_or_else(wrong)?;
        let number = |s: &str| {
            // Digits only: no sign, no space, no `+3`.
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse::<usize>().ok()
        };
        let (k, n) = (number(k).ok_or_else(wrong)?, number(n).ok_or_else(wrong)?);
        if k == 0 || n == 0 || k > n || n > MAX_SHARDS {
            return Err(wrong());
        }
        Ok(Shard { k, n })
    }
}

/// A cell's expected time in ms: each repeat's time limit and its lock's start-up (the lock
/// entry's word); an n/a cell runs nothing.
pub fn expected_ms(cell: &PlannedCell) -> u64 {
    match &cell.configs {
        Ok(configs) => configs
            .iter()
            .map(|c| c.time_limit.as_millis() as u64 + c.lock.start_up().as_millis() as u64)
            .sum(),
        Err(_) => 0,
    }
}

/// The shard (from 0) of each cell, given each cell's expected time: longest first onto the
/// lightest shard (the first of equals), ties between cells broken by their place in the plan.
pub fn split(costs: &[u64], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(costs[i]), i));
    let mut load = vec![0u64; n.max(1)];
    let mut shard_of = vec![0; costs.len()];
    for i in order {
        let lightest = (0..load.len()).min_by_key(|&s| (load[s], s)).unwrap_or(0);
        load[lightest] += costs[i];
        shard_of[i] = lightest;
    }
    shard_of
}

#[cfg(test)]
mod tests {
    use super::{split, Shard};

    #[test]
    fn k_of_n_parses_and_anything_else_is_refused() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { k: 2, n: 4 }));
        assert_eq!("1/1".parse::<Shard>(), Ok(Shard { k: 1, n: 1 }));
        for bad in [
            "0/2", "3/2", "1/0", "a/2", "1/b", "2", "", "/", "1/2/3", "+1/2", " 1/2",
        ] {
            assert!(bad.parse::<Shard>().is_err(), "{bad:?} was accepted");
        }
        assert!("1/257".parse::<Shard>().is_err());
    }

    #[test]
    fn the_split_is_balanced_longest_first_and_the_same_every_time() {
        // 16 s, 8 s, 8 s, 4 s, 4 s onto 2 shards: 16 | 8+8, then 4 onto each.
        let costs = [4, 16, 8, 8, 4];
        let shards = split(&costs, 2);
        assert_eq!(shards, vec![0, 0, 1, 1, 1]);
        assert_eq!(split(&costs, 2), shards);
        let load = |s| -> u64 { (0..5).filter(|&i| shards[i] == s).map(|i| costs[i]).sum() };
        assert_eq!((load(0), load(1)), (20, 20));
        // More shards than cells: each cell alone, the rest empty.
        assert_eq!(split(&[1, 1], 4), vec![0, 1]);
    }
}
