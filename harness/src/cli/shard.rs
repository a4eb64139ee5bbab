//! `--shard K/N`, as typed: shard K of a comparison split over N jobs. How cells are split is
//! `compare::shard`'s.

use std::fmt;
use std::str::FromStr;

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

#[cfg(test)]
mod tests {
    use super::Shard;

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
}
