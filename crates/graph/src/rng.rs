//! Small, seedable, splittable random numbers: results depend on the seed and the block
//! number only, never on the thread count.

/// SplitMix64: one 64-bit state, good statistical quality, trivially seeded per block.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream for `(seed, stream)`. The start state is a hash of both: a plain
    /// `seed ^ stream * γ` would make stream b+1 replay stream b shifted by one step, since the
    /// state itself advances by γ.
    pub fn new(seed: u64, stream: u64) -> Self {
        SplitMix64(finalize(seed ^ finalize(stream ^ 0x6a09_e667_f3bc_c909)))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (n > 0), by multiply-high.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit mix of a value, for deterministic per-item choices (edge weights).
pub fn mix(x: u64) -> u64 {
    let mut s = SplitMix64(x);
    s.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_distinct() {
        let a: Vec<u64> = {
            let mut r = SplitMix64::new(1, 0);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let mut r = SplitMix64::new(1, 0);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        let mut other = SplitMix64::new(1, 1);
        assert_ne!(a[0], other.next_u64());
        // Neighbouring streams must not be shifted copies of each other.
        let mut s0 = SplitMix64::new(1, 0);
        let mut s1 = SplitMix64::new(1, 1);
        let a: Vec<u64> = (0..64).map(|_| s0.next_u64()).collect();
        let b: Vec<u64> = (0..64).map(|_| s1.next_u64()).collect();
        assert!(a.iter().all(|x| !b.contains(x)), "streams overlap");
        let mut r = SplitMix64::new(7, 3);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
        }
    }
}
