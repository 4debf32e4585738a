//! The cost model behind estimated speedups: time = accesses × a + page-table reads × w.
//! Calibrated, `a` and `w` solve the two measured untraced runs (4 KiB pages, all huge)
//! against the simulated page-table reads of `none` and `all`; uncalibrated, `w` is an
//! assumed 10 ns per read on one core. Either way the result is an estimate and is labelled
//! so.
//!
//! Times are wall times. A trace of several streams was made by as many threads walking at
//! once, so the assumed wall cost of a read is 10 ns divided by the streams; a fit to
//! measured runs of the same threads already holds that.

pub use hugewise_results::sim::CostModel;

use hugewise_trace::meta::Calibration;

/// Assumed cost of one page-table read on one core when nothing was measured.
pub const ASSUMED_READ_S: f64 = 10e-9;

/// The most of a run's time the assumed walks may take before the model says its estimates
/// overstate the gain: a program whose time is mostly page walks gains that much from huge
/// pages, and none measured here gained over 2x (PageRank at kron:22, whose walks the assumed
/// cost made 98 % of its time and every page huge an estimated 10.8x, gains 1.0-1.2x).
pub const ASSUMED_SHARE_MAX: f64 = 0.5;

/// Fit to `cal` given the simulated reads of the 4 KiB-only and the all-huge runs over
/// `accesses` made by `streams` threads; falls back to the assumption (saying why) when
/// the fit is not physical.
pub fn fit(
    cal: Option<&Calibration>,
    accesses_per_s: f64,
    streams: u16,
    accesses: u64,
    reads_none: u64,
    reads_all: u64,
) -> CostModel {
    let n = accesses.max(1) as f64;
    let assumed = |note: String| {
        let w = ASSUMED_READ_S / f64::from(streams.max(1));
        // What the assumed cost makes of a run's time at `accesses_per_s` (measured untraced,
        // or itself assumed): past [`ASSUMED_SHARE_MAX`] the walks cost less than assumed, and
        // the estimates say more than huge pages give.
        let walk_share = reads_none as f64 * w / n * accesses_per_s;
        let a = (1.0 / accesses_per_s - reads_none as f64 * w / n).max(0.1 / accesses_per_s);
        let note = if walk_share > ASSUMED_SHARE_MAX {
            format!(
                "{note}; at that cost the walks would take {:.0} % of a run's time at {:.0} M \
                 accesses a second, so the estimated speedups overstate what huge pages give",
                walk_share.min(9.99) * 100.0,
                accesses_per_s / 1e6
            )
        } else {
            note
        };
        CostModel {
            s_per_access: a,
            s_per_walk_read: w,
            calibrated: false,
            note: Some(note),
        }
    };
    let Some(c) = cal else {
        return assumed(format!(
            "no measured runs: 10 ns per page-table read assumed{}",
            if streams > 1 {
                format!(", {streams} streams walking at once")
            } else {
                String::new()
            }
        ));
    };
    if reads_none <= reads_all {
        return assumed("huge pages saved no walks in simulation: cannot fit".into());
    }
    let w = (c.base_s - c.huge_s) / (reads_none - reads_all) as f64;
    let a = (c.base_s - w * reads_none as f64) / n;
    if w <= 0.0 || a <= 0.0 || !w.is_finite() || !a.is_finite() {
        return assumed(format!(
            "measured runs ({:.3} s on 4 KiB, {:.3} s huge) do not fit the simulated walks",
            c.base_s, c.huge_s
        ));
    }
    CostModel {
        s_per_access: a,
        s_per_walk_read: w,
        calibrated: true,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_the_coefficients() {
        // 1e9 accesses at 1 ns, reads at 20 ns: 4e7 reads on 4 KiB, 1e6 huge.
        let cal = Calibration {
            base_s: 1.0 + 0.8,
            huge_s: 1.0 + 0.02,
            huge_share: 1.0,
            runs: 5,
        };
        let m = fit(Some(&cal), 1e9, 1, 1_000_000_000, 40_000_000, 1_000_000);
        assert!(m.calibrated);
        assert!((m.s_per_walk_read - 20e-9).abs() < 1e-12, "{m:?}");
        assert!((m.s_per_access - 1e-9).abs() < 1e-12, "{m:?}");
        let slower = Calibration { huge_s: 2.0, ..cal };
        let m = fit(Some(&slower), 1e9, 1, 1_000_000_000, 40_000_000, 1_000_000);
        assert!(!m.calibrated && m.note.as_deref().unwrap_or("").contains("do not fit"));
    }

    #[test]
    fn threads_walking_at_once_share_the_assumed_cost() {
        // The same walks, made by one thread or by two at twice the rate: the same estimate.
        let one = fit(None, 4e8, 1, 1_000_000_000, 20_000_000, 0);
        let two = fit(None, 8e8, 2, 1_000_000_000, 20_000_000, 0);
        let speedup =
            |m: &CostModel| m.seconds(1_000_000_000, 20_000_000) / m.seconds(1_000_000_000, 0);
        assert!(
            (speedup(&one) - speedup(&two)).abs() < 1e-9,
            "{one:?} {two:?}"
        );
        assert!((two.s_per_walk_read - 5e-9).abs() < 1e-15);
        assert!(two.note.as_deref().unwrap_or("").contains("2 streams"));
        // 2e7 reads at 5 ns over 1e9 accesses at 8e8 a second: 8 % of the time, said nothing of.
        assert!(!two.note.as_deref().unwrap_or("").contains("overstate"));
    }

    #[test]
    fn an_assumed_cost_that_makes_the_walks_most_of_the_time_says_so() {
        // 30 walks of 4 reads per 1 000 accesses at 10 ns, 814 M accesses a second: PageRank's
        // trace at kron:22 on a fast host, where the walks would take 98 % of the time.
        let m = fit(None, 814e6, 1, 1_000_000_000, 120_000_000, 0);
        let note = m.note.unwrap_or_default();
        assert!(
            note.contains("take 98 % of a run's time at 814 M"),
            "{note}"
        );
        assert!(note.contains("overstate"), "{note}");
    }
}
