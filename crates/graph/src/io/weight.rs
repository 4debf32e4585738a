//! The one rule every reader applies to an arc's weight: a whole number from 0 to
//! [`MAX_WEIGHT`], so that a `.wel` line and a `.hwg` array refuse the same weights.

/// The heaviest weight hugewise reads: 2^32 − 2. Distances are 32-bit with 2^32 − 1 meaning
/// "unreached", so one arc of 2^32 − 1 would already be a distance no 32-bit value holds.
pub const MAX_WEIGHT: u32 = u32::MAX - 1;

/// `w` as a weight, or why it is not one.
pub fn check(w: u64) -> Result<u32, String> {
    match u32::try_from(w) {
        Ok(x) if x <= MAX_WEIGHT => Ok(x),
        _ => Err(too_heavy(w)),
    }
}

/// Why `w`, over [`MAX_WEIGHT`], is refused.
pub fn too_heavy(w: u64) -> String {
    format!(
        "weight {w} is over {MAX_WEIGHT} (2^32 − 2), the heaviest a 32-bit distance leaves room \
         for"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_up_to_two_to_the_32_minus_2_pass() {
        assert_eq!(check(0), Ok(0));
        assert_eq!(check(u64::from(MAX_WEIGHT)), Ok(MAX_WEIGHT));
        for w in [u64::from(u32::MAX), 1 << 40] {
            let e = check(w).expect_err("too heavy");
            assert!(e.contains(&format!("weight {w} is over 4294967294")), "{e}");
        }
    }
}
