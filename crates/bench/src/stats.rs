//! Summaries of raw samples: median and spread, never a mean alone.

pub use hugewise_results::stats::{median, Summary};

/// Summarise `v`; `None` when empty.
pub fn summarize(v: &[f64]) -> Option<Summary> {
    let med = median(v)?;
    let dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&dev)?;
    Some(Summary {
        n: v.len(),
        median: med,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        mad_rel: if med == 0.0 { 0.0 } else { mad / med.abs() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_by_hand() {
        let s = summarize(&[10.0, 12.0, 11.0, 30.0, 9.0]).expect("summary");
        assert_eq!(s.n, 5);
        assert_eq!(s.median, 11.0);
        assert_eq!((s.min, s.max), (9.0, 30.0));
        assert_eq!(s.mean, 14.4);
        // deviations 1,1,0,19,2 -> median 1 -> 1/11
        assert!((s.mad_rel - 1.0 / 11.0).abs() < 1e-12);
    }
}
