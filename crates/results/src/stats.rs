//! Summaries of raw samples (median and spread) and how quiet the machine was while they were taken.

use serde::{Deserialize, Serialize};

/// Median and spread of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Median absolute deviation from the median, relative to the median (0.02 = 2 %).
    pub mad_rel: f64,
}

/// The median of `v`: the mean of the two middle values for an even count, `None` when `v`
/// is empty or holds a NaN. The libraries' one median (summaries, views, `auto`'s estimates).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// A confidence interval for a median, from the samples' own order statistics.
///
/// For `n` independent samples of one distribution, the k-th smallest and the k-th largest
/// bracket the distribution's median with probability `1 - 2 P(B <= k - 1)`, where `B` is
/// binomial(n, 1/2): each sample falls below the median with probability one half, whatever
/// the distribution. No shape is assumed (per-round ratios in a noisy VM are skewed, with
/// outlying rounds), and the bounds are samples that were measured. The price: few samples
/// give wide intervals, and fewer than 6 cannot reach 95 % at all (5 give 93.75 % at their
/// extremes), so a comparison that wants a 95 % interval runs at least 6 rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MedianInterval {
    /// Lower bound (the k-th smallest sample).
    pub lo: f64,
    /// Upper bound (the k-th largest sample).
    pub hi: f64,
    /// The probability that the interval holds the median, from the binomial (at least the
    /// level asked for).
    pub coverage: f64,
}

impl MedianInterval {
    /// The interval's width relative to `center` (e.g. the median): `(hi - lo) / center`.
    pub fn width_rel(&self, center: f64) -> f64 {
        (self.hi - self.lo) / center.abs()
    }
}

/// The narrowest interval of order statistics (k-th smallest, k-th largest) whose coverage of
/// the median is at least `level` (0.95 for 95 %); `None` when `v` has too few samples for
/// that level, more than 1 000, or a NaN. See [`MedianInterval`].
pub fn median_interval(v: &[f64], level: f64) -> Option<MedianInterval> {
    let n = v.len();
    // Past 1 000 samples 2^-n underflows: the binomial below is exact for the rounds of a
    // comparison, not for arbitrary samples.
    if n == 0 || n > 1000 || v.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    // P(B <= j) for B ~ binomial(n, 1/2), j = 0..n, in f64 (n is a number of rounds).
    let mut cdf = Vec::with_capacity(n + 1);
    let (mut term, mut sum) = (0.5f64.powi(n as i32), 0.0);
    for j in 0..=n {
        sum += term;
        cdf.push(sum);
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    // The largest k (narrowest interval) with 1 - 2 P(B <= k - 1) >= level.
    (1..=n.div_ceil(2))
        .rev()
        .map(|k| (k, 1.0 - 2.0 * cdf[k - 1]))
        .find(|&(_, c)| c >= level)
        .map(|(k, coverage)| MedianInterval {
            lo: s[k - 1],
            hi: s[n - k],
            coverage,
        })
}

/// Resamples a bootstrap interval draws: enough that its percentiles move by well under a
/// per cent of the interval between two seeds.
pub const BOOTSTRAP_RESAMPLES: u32 = 10_000;

/// The bootstrap's seed, fixed: an interval rebuilt from saved samples (a report made again)
/// is the same interval.
const BOOTSTRAP_SEED: u64 = 0x6875_6765_7769_7365;

/// A percentile-bootstrap interval for a statistic of whole rounds.
///
/// Where a figure is a function of several medians (a share of a saving: the arm's and the
/// base's times over the ideal's, each a median over rounds), no order statistic of one set
/// of samples brackets it. The rounds are drawn again with replacement, each resample's
/// figure is computed as the run's was, and the central `level` of those figures is the
/// interval. Rounds are drawn whole, so each keeps the arms it ran together and what one
/// round's host did to all of them. The price: a bootstrap of medians over a few rounds
/// covers less than it says (its resamples repeat the samples measured), so it asks for as
/// many rounds as [`MedianInterval`] does, at least 6, and more give it its level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInterval {
    /// Lower bound: the resamples' `(1 - level) / 2` quantile.
    pub lo: f64,
    /// Upper bound: their `(1 + level) / 2` quantile.
    pub hi: f64,
    /// The level asked for (0.95).
    pub level: f64,
    /// Resamples drawn.
    pub resamples: u32,
}

/// The percentile-bootstrap interval at `level` of `stat` over `rounds` rounds: `stat` gets
/// the indices of one resample's rounds (drawn with replacement, as many as there are) and
/// returns the figure computed from them. `None` with fewer than 6 rounds, or when `stat` has
/// no value for some resample (a share of a gain the resample does not show), since an
/// interval that left those out would claim more than the rounds say. Deterministic: the
/// seed is fixed. See [`BootstrapInterval`].
pub fn bootstrap_interval(
    rounds: usize,
    level: f64,
    mut stat: impl FnMut(&[usize]) -> Option<f64>,
) -> Option<BootstrapInterval> {
    if rounds < 6 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mut state = BOOTSTRAP_SEED;
    // splitmix64: a small generator whose stream is fixed by its seed on every platform.
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut idx = vec![0; rounds];
    let mut figures = Vec::with_capacity(BOOTSTRAP_RESAMPLES as usize);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for i in idx.iter_mut() {
            // Multiply-shift maps 64 random bits onto 0..rounds with a bias under 2^-50.
            *i = ((u128::from(next()) * rounds as u128) >> 64) as usize;
        }
        match stat(&idx) {
            Some(f) if !f.is_nan() => figures.push(f),
            _ => return None,
        }
    }
    figures.sort_by(f64::total_cmp);
    // As many figures left out above as below: 250 of the 10,000 at each end for 95 %.
    let n = figures.len();
    let lo = ((((1.0 - level) / 2.0) * n as f64).round() as usize).min((n - 1) / 2);
    let hi = n - 1 - lo;
    Some(BootstrapInterval {
        lo: figures[lo],
        hi: figures[hi],
        level,
        resamples: BOOTSTRAP_RESAMPLES,
    })
}

/// Why an alternated comparison stopped running rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// The rounds asked for ran (no `--until`).
    Rounds,
    /// Every ratio's interval grew as narrow as `--until` asked.
    Narrow,
    /// `--max-rounds` was reached first.
    MaxRounds,
    /// `--max-time` was reached first.
    MaxTime,
    /// A signal (Ctrl-C) stopped it: the rounds done before it are kept, the one under way
    /// when it came is dropped.
    Interrupted,
}

impl Stopped {
    /// Its name in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            Stopped::Rounds => "rounds",
            Stopped::Narrow => "narrow",
            Stopped::MaxRounds => "max_rounds",
            Stopped::MaxTime => "max_time",
            Stopped::Interrupted => "interrupted",
        }
    }
}

/// Others' share of the CPUs above which a sample counts as taken on a busy machine: the
/// quiet check waits for the machine to fall to it, and a sample taken when it gave up waiting
/// is flagged.
pub const BUSY_SHARE: f64 = 0.10;

/// CPU use by everything but this process over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quiet {
    /// Share of all CPUs' time that other processes and the kernel were busy (0..1).
    pub others_busy_share: f64,
    /// Window length.
    pub window_ms: u64,
    /// Times the check waited for the machine to calm down before this window.
    pub waits: u32,
}

impl Quiet {
    /// Whether others were busier than [`BUSY_SHARE`] when the sample was taken.
    pub fn busy(&self) -> bool {
        self.others_busy_share > BUSY_SHARE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_median_interval_is_the_narrowest_pair_of_order_statistics_that_covers() {
        // 5 samples: the extremes cover 1 - 2/32 = 93.75 %, short of 95 %.
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        let i = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.90).expect("90 %");
        assert_eq!((i.lo, i.hi, i.coverage), (1.0, 5.0, 0.9375));
        // 6: the extremes cover 1 - 2/64 = 96.875 %.
        let i = median_interval(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95).expect("6");
        assert_eq!((i.lo, i.hi, i.coverage), (1.0, 6.0, 0.96875));
        // 9: the 2nd from each end covers 1 - 2 (1 + 9) / 512 = 96.09 %; the 3rd,
        // 1 - 2 (1 + 9 + 36) / 512 = 82.0 %, too little.
        let v: Vec<f64> = (1..=9).map(f64::from).collect();
        let i = median_interval(&v, 0.95).expect("9");
        assert_eq!((i.lo, i.hi), (2.0, 8.0));
        assert!((i.coverage - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        // 20: the 6th from each end (P(B <= 5) = 21 700 / 2^20 = 2.07 %).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v, 0.95).expect("20");
        assert_eq!((i.lo, i.hi), (6.0, 15.0));
        assert!((i.coverage - (1.0 - 2.0 * 21_700.0 / 1_048_576.0)).abs() < 1e-12);
        assert!((i.width_rel(10.5) - 9.0 / 10.5).abs() < 1e-12);
        assert_eq!(median_interval(&[], 0.95), None);
        assert_eq!(median_interval(&[1.0, f64::NAN], 0.5), None);
    }

    #[test]
    fn a_bootstrap_interval_brackets_the_figure_and_is_the_same_each_time() {
        let v: Vec<f64> = (1..=11).map(f64::from).collect();
        let med = |idx: &[usize]| median(&idx.iter().map(|&i| v[i]).collect::<Vec<_>>());
        let i = bootstrap_interval(v.len(), 0.95, med).expect("11 rounds");
        // The median of a resample of 1..=11 is one of the samples; its 2.5 % and 97.5 %
        // quantiles fall inside the order statistics' 95 % interval, [2, 10] here
        // (the 2nd from each end covers 1 - 2 * 12 / 2048 = 98.8 %; the 3rd 93.5 %).
        assert!(i.lo >= 2.0 && i.lo < 6.0, "{i:?}");
        assert!(i.hi <= 10.0 && i.hi > 6.0, "{i:?}");
        assert_eq!((i.level, i.resamples), (0.95, BOOTSTRAP_RESAMPLES));
        assert_eq!(bootstrap_interval(v.len(), 0.95, med), Some(i));
        // Rounds that agree leave nothing to draw.
        let same = bootstrap_interval(8, 0.95, |_| Some(0.8)).expect("8 rounds");
        assert_eq!((same.lo, same.hi), (0.8, 0.8));
        // Too few rounds, a figure a resample lacks, or a level out of range: no interval.
        assert_eq!(bootstrap_interval(5, 0.95, |_| Some(1.0)), None);
        assert_eq!(
            bootstrap_interval(8, 0.95, |idx| (!idx.contains(&0)).then_some(1.0)),
            None
        );
        assert_eq!(bootstrap_interval(8, 1.0, |_| Some(1.0)), None);
        assert_eq!(bootstrap_interval(8, 0.0, |_| Some(1.0)), None);
    }

    #[test]
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }
}
