//! Summaries of raw samples: median and spread, never a mean alone; the 95 % interval of a
//! median of per-round ratios, and when an alternated comparison has run rounds enough.

use std::time::{Duration, Instant};

use crate::{Error, Result};

pub use hugewise_results::stats::{median, median_interval, MedianInterval, Stopped, Summary};

/// Level of every interval the benches report.
pub const LEVEL: f64 = 0.95;

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

/// The median of per-round ratios and its 95 % interval, both from the same ratios: every
/// alternated comparison's one way to summarise them.
pub fn ratio(ratios: &[f64]) -> (Option<f64>, Option<MedianInterval>) {
    (median(ratios), median_interval(ratios, LEVEL))
}

/// Per round that ran both, the baseline's time over a run's: each sample `is_run` picks,
/// against the one of the same round that `is_base` picks; rounds where either has no time
/// are left out.
pub fn ratios_in_rounds<S>(
    samples: &[S],
    round: impl Fn(&S) -> u32,
    is_base: impl Fn(&S) -> bool,
    is_run: impl Fn(&S) -> bool,
    time: impl Fn(&S) -> Option<f64>,
) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| is_run(s))
        .filter_map(|s| {
            let b = samples
                .iter()
                .find(|b| is_base(b) && round(b) == round(s))?;
            Some(time(b)? / time(s)?)
        })
        .collect()
}

/// Whether the 95 % interval of the median of `ratios` is at most `pct` % of that median
/// wide. Too few ratios for an interval are never narrow enough.
pub fn narrow_enough(ratios: &[f64], pct: f64) -> bool {
    match ratio(ratios) {
        (Some(m), Some(i)) if m != 0.0 => i.width_rel(m) * 100.0 <= pct,
        _ => false,
    }
}

/// How many rounds an alternated comparison runs: at least its `--rounds`, then, with
/// `--until`, more until every ratio's interval is narrow enough or a cap is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Until {
    /// Widest interval wanted, in per cent of its median; `None`: the minimum rounds only.
    pub width_pct: Option<f64>,
    /// Rounds at most (never fewer than the minimum).
    pub max_rounds: u32,
    /// Time at most, checked between rounds: a round begun runs to its end.
    pub max_time: Duration,
}

impl Default for Until {
    /// The minimum rounds only.
    fn default() -> Self {
        Until {
            width_pct: None,
            max_rounds: 20,
            max_time: Duration::from_secs(30 * 60),
        }
    }
}

impl Until {
    /// Rounds at most, for progress: the minimum, or the cap with `--until`.
    pub fn planned(&self, min_rounds: u32) -> u32 {
        match self.width_pct {
            Some(_) => min_rounds.max(self.max_rounds),
            None => min_rounds,
        }
    }

    /// Run `round(r, samples)` for r = 0, 1, ... until [`Until::stop`] says to stop, with the
    /// per-round ratios `watched` finds in the samples so far: every alternated comparison's
    /// one loop over rounds. Returns the rounds run and why they stopped; an error from a
    /// round ends the loop.
    ///
    /// `cancel` (asked before and after each round: did a signal such as Ctrl-C come?) ends the
    /// loop too, whatever the round returned: that round's samples are dropped, as the signal
    /// may have cut an arm short, and the rounds before it are kept and returned as
    /// [`Stopped::Interrupted`], so that an hour of rounds is not lost to a Ctrl-C in the last
    /// one. With no round done before it there is nothing to keep: [`Error::Interrupted`].
    pub fn rounds<S>(
        &self,
        min_rounds: u32,
        samples: &mut Vec<S>,
        cancel: &dyn Fn() -> bool,
        watched: impl Fn(&[S]) -> Vec<Vec<f64>>,
        mut round: impl FnMut(u32, &mut Vec<S>) -> Result<()>,
    ) -> Result<(u32, Stopped)> {
        let started = Instant::now();
        let mut done = 0;
        loop {
            let ratios = watched(samples);
            if let Some(why) = self.stop(min_rounds, done, started.elapsed(), &ratios) {
                return Ok((done, why));
            }
            let interrupted = || match done {
                0 => Err(Error::Interrupted),
                _ => Ok((done, Stopped::Interrupted)),
            };
            // A signal between rounds (or before the first) starts no round to throw away.
            if cancel() {
                return interrupted();
            }
            let kept = samples.len();
            let r = round(done, samples);
            if cancel() {
                samples.truncate(kept);
                return interrupted();
            }
            r?;
            done += 1;
        }
    }

    /// After `done` rounds (at least `min_rounds` asked) in `elapsed`, with each watched
    /// ratio's per-round values: `None` to run another round, or why to stop.
    pub fn stop(
        &self,
        min_rounds: u32,
        done: u32,
        elapsed: Duration,
        ratios: &[Vec<f64>],
    ) -> Option<Stopped> {
        if done < min_rounds {
            return None;
        }
        let Some(pct) = self.width_pct else {
            return Some(Stopped::Rounds);
        };
        // Nothing to watch (a comparison of one variant): no interval can become narrow.
        if ratios.is_empty() {
            return Some(Stopped::Rounds);
        }
        if ratios.iter().all(|r| narrow_enough(r, pct)) {
            Some(Stopped::Narrow)
        } else if done >= self.max_rounds {
            Some(Stopped::MaxRounds)
        } else if elapsed >= self.max_time {
            Some(Stopped::MaxTime)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

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

    #[test]
    fn an_interval_is_narrow_enough_when_its_width_over_the_median_is_at_most_asked() {
        // 6 ratios: the interval is the extremes, 1.0..1.2 around a median of 1.1 (18.2 %).
        let r = [1.0, 1.05, 1.1, 1.1, 1.15, 1.2];
        assert!(narrow_enough(&r, 20.0));
        assert!(narrow_enough(&r, 18.2));
        assert!(!narrow_enough(&r, 18.1));
        // 5 ratios, however close, give no 95 % interval.
        assert!(!narrow_enough(&[1.0; 5], 50.0));
        assert!(narrow_enough(&[1.0; 6], 0.0));
    }

    #[test]
    fn rounds_stop_at_the_minimum_then_when_narrow_or_at_a_cap() {
        let until = Until {
            width_pct: Some(10.0),
            max_rounds: 8,
            max_time: Duration::from_secs(60),
        };
        let wide = vec![vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]];
        let narrow = vec![vec![1.0, 1.01, 1.02, 1.0, 1.01, 1.02]];
        let s = Duration::from_secs(1);
        assert_eq!(until.stop(6, 5, s, &narrow), None, "below the minimum");
        assert_eq!(until.stop(6, 6, s, &narrow), Some(Stopped::Narrow));
        assert_eq!(until.stop(6, 6, s, &wide), None);
        // Every ratio must be narrow.
        let both = vec![narrow[0].clone(), wide[0].clone()];
        assert_eq!(until.stop(6, 6, s, &both), None);
        assert_eq!(until.stop(6, 8, s, &wide), Some(Stopped::MaxRounds));
        let late = Duration::from_secs(61);
        assert_eq!(until.stop(6, 7, late, &wide), Some(Stopped::MaxTime));
        // The minimum runs whatever the caps.
        assert_eq!(until.stop(10, 9, late, &wide), None);
        assert_eq!(Until::default().stop(3, 3, s, &wide), Some(Stopped::Rounds));
    }

    #[test]
    fn the_loop_runs_rounds_until_the_watched_ratios_are_narrow() {
        let until = Until {
            width_pct: Some(10.0),
            ..Until::default()
        };
        // Round 1 gives 2.0, every other 1.0: up to 8 ratios the interval is their extremes
        // (1.0-2.0, 100 % wide); from 9 it is the 2nd from each end (96 % coverage), both 1.0.
        let mut samples = Vec::new();
        let (done, why) = until
            .rounds(
                2,
                &mut samples,
                &|| false,
                |s: &[f64]| vec![s.to_vec()],
                |r, s| {
                    s.push(if r < 2 { 1.0 + r as f64 } else { 1.0 });
                    Ok(())
                },
            )
            .expect("rounds");
        assert_eq!(why, Stopped::Narrow);
        assert_eq!((done, samples.len()), (9, 9));
        let mut none: Vec<f64> = Vec::new();
        let r = Until::default().rounds(
            3,
            &mut none,
            &|| false,
            |_| Vec::new(),
            |_, s| {
                s.push(1.0);
                Ok(())
            },
        );
        assert_eq!(r.expect("three rounds"), (3, Stopped::Rounds));
        let e = Until::default().rounds(
            3,
            &mut none,
            &|| false,
            |_| Vec::new(),
            |r, _| match r {
                1 => Err(Error::Config("failed".into())),
                _ => Ok(()),
            },
        );
        assert!(matches!(e, Err(Error::Config(m)) if m == "failed"));
    }

    /// Rounds of two samples each (the round's number twice) until the signal comes in round
    /// `at`, after that round's first sample; the round then fails (as an arm cut short would)
    /// or ends well. What the loop returned and the samples it kept.
    fn signalled(at: u32, fails: bool) -> (Result<(u32, Stopped)>, Vec<u32>) {
        let cancel = AtomicBool::new(false);
        let mut samples = Vec::new();
        let r = Until::default().rounds(
            6,
            &mut samples,
            &|| cancel.load(Ordering::Relaxed),
            |_| Vec::new(),
            |r, s| {
                s.push(r);
                if r == at {
                    cancel.store(true, Ordering::Relaxed);
                    if fails {
                        return Err(Error::Interrupted);
                    }
                }
                s.push(r);
                Ok(())
            },
        );
        (r, samples)
    }

    #[test]
    fn a_signal_keeps_the_rounds_done_and_drops_the_one_under_way() {
        let (r, samples) = signalled(3, true);
        assert_eq!(r.expect("rounds kept"), (3, Stopped::Interrupted));
        assert_eq!(samples, vec![0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn a_round_that_ends_well_after_a_signal_is_dropped_too() {
        // A signal may have cut an arm short without failing it.
        let (r, samples) = signalled(1, false);
        assert_eq!(r.expect("rounds kept"), (1, Stopped::Interrupted));
        assert_eq!(samples, vec![0, 0]);
    }

    #[test]
    fn a_signal_in_the_first_round_leaves_nothing_to_keep() {
        let (r, samples) = signalled(0, false);
        assert!(matches!(r, Err(Error::Interrupted)));
        assert!(samples.is_empty());
    }
}
