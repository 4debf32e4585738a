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
    fn median_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }
}
