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
}

impl Stopped {
    /// Its name in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            Stopped::Rounds => "rounds",
            Stopped::Narrow => "narrow",
            Stopped::MaxRounds => "max_rounds",
            Stopped::MaxTime => "max_time",
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
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }
}
