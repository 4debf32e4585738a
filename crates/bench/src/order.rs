//! The order a bench runs its variants in, round by round, so that within a round each variant
//! runs right after every other equally often (a Williams design: a Latin square balanced for
//! which variant ran just before).
//!
//! In this VM a run changes the machine the next one meets: what it freed is what the next one
//! faults in, and the host backs it again at its own pace. Starting each round one variant
//! later (A B C D, B C D A, …) keeps every variant behind the same one in every round but the
//! one it opens: under `bench exec`, `promote:100%` followed a 4 KiB arm in all six rounds and
//! took 13.3–15.0 s where THP at fault, behind it, took 4.3–5.0 s but in the one round it
//! followed a 4 KiB arm (14.6 s). The last run of a round also comes just before the first of
//! the next; that pair is not balanced.

/// The variants (indices below `n`) in the order round `round` runs them. Over `n` rounds, or
/// `2n` when `n` is odd, every variant runs right after every other the same number of times
/// (once, or twice when `n` is odd) within a round; round 0 runs variant 0 first.
pub fn balanced(n: usize, round: u32) -> Vec<usize> {
    // The first row 0, 1, n-1, 2, n-2, …: its steps (1, -2, 3, -4, … mod n) are all distinct,
    // so each shift of it puts every ordered pair next to each other once over n rows; for
    // odd n the steps repeat, and the mirrored rows make up the pairs that are missing. For
    // odd n the rows alternate forward and mirrored, so that a bench stopped short of 2n
    // rounds (5 variants, 6 rounds) is nearly balanced rather than all forward.
    let first = (0..n).map(|k| match k {
        0 => 0,
        k if k % 2 == 1 => k.div_ceil(2),
        k => n - k / 2,
    });
    let r = round as usize;
    let odd = n % 2 == 1;
    let shift = if odd { r / 2 } else { r } % n.max(1);
    let mut row: Vec<usize> = first.map(|b| (b + shift) % n).collect();
    if odd && r % 2 == 1 {
        row.reverse();
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_follows_every_other_equally_often_over_a_period() {
        for n in 1..=8usize {
            let period = if n % 2 == 1 { 2 * n } else { n };
            let mut after = vec![vec![0u32; n]; n];
            for round in 0..period as u32 {
                let row = balanced(n, round);
                let mut seen = row.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n} round {round}");
                for w in row.windows(2) {
                    after[w[0]][w[1]] += 1;
                }
            }
            let want = if n % 2 == 1 { 2 } else { 1 };
            for (a, row) in after.iter().enumerate() {
                for (b, &k) in row.iter().enumerate() {
                    assert_eq!(k, if a == b { 0 } else { want }, "n {n}: {a} then {b}");
                }
            }
            assert_eq!(balanced(n, 0)[0], 0, "the baseline opens the first round");
        }
    }

    #[test]
    fn an_odd_count_meets_every_pair_within_one_round_past_its_count() {
        // Forward and mirrored rows alternate: packing's 5 variants over its 6 default rounds
        // put every variant right after every other at least once.
        for n in [3usize, 5, 7, 9] {
            let mut pairs = std::collections::BTreeSet::new();
            for round in 0..=n as u32 {
                let row = balanced(n, round);
                pairs.extend(row.windows(2).map(|w| (w[0], w[1])));
            }
            assert_eq!(pairs.len(), n * (n - 1), "n {n}");
        }
    }

    #[test]
    fn four_variants_run_as_the_square_says() {
        let rows: Vec<Vec<usize>> = (0..4).map(|r| balanced(4, r)).collect();
        assert_eq!(
            rows,
            [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
        );
        assert!(balanced(0, 3).is_empty());
    }
}
