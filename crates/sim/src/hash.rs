//! A hasher for the simulator's own integer keys (page and region numbers): one multiply.
//! Keys come from the traced program's addresses, not from an adversary, so SipHash's
//! protection buys nothing here and costs most of a PCC update.

use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hashing of one `u64`.
#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ self.0)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
}

/// A `HashMap` keyed by integers.
pub type IntMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IntHasher>>;
