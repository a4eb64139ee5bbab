//! `compare --shard K/N`: a stable split of a matrix's cells over N CI jobs, balanced by how
//! long each cell is expected to take (its time limit per repeat, plus an estimate of its
//! services' start-up), so that the jobs end at about the same time. The split depends on the
//! planned cells alone: every job of the same matrix computes the same one, and `lockpick
//! merge` checks each shard against it.

use crate::compare::plan::PlannedCell;

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
    use super::split;

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
