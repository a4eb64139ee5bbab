//! A hash that is the same in every run and every build (FNV-1a), unlike the standard library's
//! hasher: for names that must not change (store folders, a nemesis's random stream).

/// FNV-1a of `text`.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hash_is_the_published_fnv1a() {
        // Test vectors of FNV-1a, 64 bits.
        assert_eq!(super::fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
