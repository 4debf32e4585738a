//! `--overcommit auto`: the number of threads per CPU chosen trial by trial.
//!
//! More threads than cores pay when cores sit idle waiting for page-ins: another thread's work
//! fills the wait, and more requests are in flight on the swap device at once. They cost
//! system time (more faults in flight contend on page-table and LRU locks) and, where nothing
//! waits, only scheduling overhead. So the controller starts at factor 1, doubles the factor
//! while each doubling makes the trial at least [`GAIN`] faster and system time stays under
//! [`SYSTEM_BOUND`], and settles on the factor with the fastest median as soon as a doubling
//! does not pay.
//! Trials under swapping are noisy (what is resident differs from trial to trial), so while the
//! cores still wait ([`PATIENT_WAIT`]) one doubling that does not pay, but loses no more than
//! the noise ([`PATIENT_LOSS_PERCENT`]), gets one more doubling before the controller settles. A
//! larger loss is no noise: BFS on a road mesh at 70 % (2026-11-27) ran 54 % slower at ×2 and
//! 90 % slower at ×4 than at ×1, with the cores waiting more, not less, and fewer page-ins a
//! second (21 456 at ×1, 16 651 at ×2, 13 982 at ×4). When the first trial shows the cores
//! busy and nothing paged in, it never leaves factor 1.
//!
//! Each factor is judged by the median of its trials, and the judging goes on after the
//! controller settles: one lucky trial while exploring can make a factor look best (CC at 50 %
//! on kron:22 settled on ×2 after a trial 1.5–1.6x faster than ×2's later ones, and stayed
//! 1.8x behind the best fixed factor). When the settled factor's median falls more than
//! [`GAIN`] behind another factor's, that factor gets one *probe*: a fresh trial, which must
//! beat the settled median by [`GAIN`] to take over (old times from early, often faster
//! trials alone never move it, so a slow drift of every trial cannot make it swing). A probe
//! that wins resumes the climb above it. Each factor is probed at most once, so the controller
//! makes at most `FACTORS.len() - 1` probes.
//!
//! A kernel that runs from sources (BFS, SSSP, BC) does different work from each: BFS on
//! kron:24 at 50 % took 20.0, 28.6 and 32.5 s at ×1 from three sources. So while the
//! controller explores ([`Controller::exploring`]), the run gives every trial the first
//! trial's sources; a probe and the settled trials run from their own.

pub use hugewise_results::telemetry::OvercommitChoice;

use crate::telemetry::Summary;

/// The CPUs this process may run on: what a factor multiplies.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The factors tried, in order.
pub const FACTORS: [u32; 5] = [1, 2, 4, 8, 16];
/// A doubling must make the trial at least this much faster to be kept.
pub const GAIN: f64 = 0.05;
/// Above this share of CPU time in the kernel, more threads only contend. Swapping itself is
/// system time: on kron:22 at 50 % and 30 % of the footprint (2026-11-27) a fixed ×16 ran at
/// 52–57 % and was the fastest factor for CC and PageRank, where a bound of 50 % had stopped
/// the climb at ×4 or ×8 in four runs of six, right after a doubling that paid 10–19 %.
pub const SYSTEM_BOUND: f64 = 0.7;
/// Below this share of idle and iowait time, with fewer page-ins per second than
/// [`PAGE_INS_QUIET`], nothing waits and factor 1 stays.
pub const WAIT_QUIET: f64 = 0.10;
/// See [`WAIT_QUIET`].
pub const PAGE_INS_QUIET: f64 = 100.0;
/// At or above this share of idle and iowait time, a doubling that did not pay is given one
/// more doubling (once) before settling.
pub const PATIENT_WAIT: f64 = 0.3;
/// ... as long as it took at most this much longer than the best before (in percent): the
/// median of the same point (BFS on kron:22 at 50 %, ×1) was 7.80 s in one run of the quick
/// swap study and 10.95 s in another (40 % longer; 2026-11-23), so a loss up to that may be
/// noise, and a larger one is real.
pub const PATIENT_LOSS_PERCENT: u64 = 40;

/// Chooses the factor of the next trial from the last ones.
#[derive(Debug, Clone)]
pub struct Controller {
    cpus: usize,
    at: usize,
    mode: Mode,
    /// Factor indices probed after settling (each at most once).
    probed: Vec<bool>,
    /// Trials observed when the controller settled.
    settled_after: Option<usize>,
    /// The one extra doubling has been spent.
    patience_spent: bool,
    /// Trial times per factor index.
    times: Vec<Vec<u64>>,
    factors: Vec<u32>,
    reasons: Vec<String>,
}

/// Where the controller is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Doubling while it pays.
    Exploring,
    /// Running the kept factor.
    Settled,
    /// The next trial is a probe of another factor; `kept` is the settled one.
    Probing { kept: usize },
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Controller {
    /// A controller for a machine of `cpus` CPUs, starting at factor 1.
    pub fn new(cpus: usize) -> Controller {
        Controller {
            cpus: cpus.max(1),
            at: 0,
            mode: Mode::Exploring,
            probed: vec![false; FACTORS.len()],
            settled_after: None,
            patience_spent: false,
            times: vec![Vec::new(); FACTORS.len()],
            factors: Vec::new(),
            reasons: Vec::new(),
        }
    }

    /// The factor of the next trial.
    pub fn factor(&self) -> u32 {
        FACTORS[self.at]
    }

    /// Still doubling: no factor chosen yet. The run gives these trials the same work (see
    /// [`crate::run`]), so that the factors are compared on it.
    pub fn exploring(&self) -> bool {
        self.mode == Mode::Exploring
    }

    /// Worker threads of the next trial.
    pub fn threads(&self) -> usize {
        self.cpus * self.factor() as usize
    }

    /// The median trial of factor index `i` (the mean of the middle two for an even count).
    fn estimate(&self, i: usize) -> Option<u64> {
        let t: Vec<f64> = self.times[i].iter().map(|&ns| ns as f64).collect();
        crate::stats::median(&t).map(|m| m as u64)
    }

    /// The factor index with the lowest median, and that median.
    fn fastest(&self, among: impl Iterator<Item = usize>) -> Option<(usize, u64)> {
        among
            .filter_map(|i| self.estimate(i).map(|e| (i, e)))
            .min_by_key(|&(_, e)| e)
    }

    fn settle(&mut self, why: String) {
        let (i, _) = self.fastest(0..FACTORS.len()).unwrap_or((0, 0));
        self.at = i;
        self.mode = Mode::Settled;
        self.settled_after.get_or_insert(self.factors.len());
        self.reasons
            .push(format!("{why}: settled on ×{}", FACTORS[i]));
    }

    /// The trial just run at [`Controller::factor`] took `kernel_ns`, with this telemetry.
    pub fn observe(&mut self, kernel_ns: u64, telemetry: Option<&Summary>) {
        let f = self.factor();
        self.factors.push(f);
        let prev_best = self.fastest(0..self.at).map(|(_, e)| e);
        self.times[self.at].push(kernel_ns);
        match self.mode {
            Mode::Settled => return self.revisit(),
            Mode::Probing { kept } => return self.judge_probe(kept, kernel_ns),
            Mode::Exploring => {}
        }
        let cpu = telemetry.and_then(|t| t.cpu);
        let wait = cpu.map(|c| c.idle_share + c.iowait_share);
        let system = cpu.map(|c| c.system_share);
        let page_ins = telemetry.and_then(|t| t.page_ins_per_s);
        let t = secs(kernel_ns);
        let said =
            |x: Option<f64>| x.map_or("not measured".to_string(), |v| format!("{:.0}%", v * 100.0));
        if self.at == 0 {
            if wait.is_some_and(|w| w < WAIT_QUIET) && page_ins.is_some_and(|p| p < PAGE_INS_QUIET)
            {
                self.settle(format!(
                    "×1: {t:.3} s with the cores busy (idle+iowait {}) and {:.0} page-ins/s, \
                     nothing for more threads to hide",
                    said(wait),
                    page_ins.unwrap_or(0.0)
                ));
                return;
            }
            self.reasons.push(format!(
                "×1: {t:.3} s, idle+iowait {}, system {}, {} page-ins/s: try ×2",
                said(wait),
                said(system),
                page_ins.map_or("unmeasured".into(), |p| format!("{p:.0}"))
            ));
            self.at = 1;
            return;
        }
        let Some(before) = prev_best else {
            self.at += 1;
            return;
        };
        let gain = 1.0 - kernel_ns as f64 / before as f64;
        let waiting = wait.is_some_and(|w| w >= PATIENT_WAIT);
        let contended = system.is_some_and(|s| s > SYSTEM_BOUND);
        // In whole nanoseconds: a loss of exactly the bound is within it.
        let within_noise =
            kernel_ns as u128 * 100 <= before as u128 * (100 + PATIENT_LOSS_PERCENT) as u128;
        if gain < GAIN
            && within_noise
            && waiting
            && !contended
            && !self.patience_spent
            && self.at + 1 < FACTORS.len()
        {
            self.patience_spent = true;
            self.reasons.push(format!(
                "×{f}: {t:.3} s, {:+.0}% against the best before ({:.3} s), but the cores still \
                 wait (idle+iowait {}): one more doubling, ×{}",
                gain * 100.0,
                secs(before),
                said(wait),
                FACTORS[self.at + 1]
            ));
            self.at += 1;
        } else if gain < GAIN {
            self.settle(format!(
                "×{f}: {t:.3} s, {:+.0}% against the best before ({:.3} s), below the {:.0}% a \
                 doubling must gain{}",
                gain * 100.0,
                secs(before),
                GAIN * 100.0,
                if waiting && !within_noise {
                    format!(
                        " (a loss over {PATIENT_LOSS_PERCENT}% is no noise: no second doubling)"
                    )
                } else {
                    String::new()
                }
            ));
        } else if system.is_some_and(|s| s > SYSTEM_BOUND) {
            self.settle(format!(
                "×{f}: {t:.3} s ({:.0}% faster) but system time {} is above {:.0}%",
                gain * 100.0,
                said(system),
                SYSTEM_BOUND * 100.0
            ));
        } else if self.at + 1 == FACTORS.len() {
            self.settle(format!(
                "×{f}: {t:.3} s ({:.0}% faster), the largest factor",
                gain * 100.0
            ));
        } else {
            self.reasons.push(format!(
                "×{f}: {t:.3} s, {:.0}% faster, idle+iowait {}, system {}: try ×{}",
                gain * 100.0,
                said(wait),
                said(system),
                FACTORS[self.at + 1]
            ));
            self.at += 1;
        }
    }

    /// Once settled: when another factor, not probed yet, has a median more than [`GAIN`]
    /// ahead of this one's, run one trial there.
    fn revisit(&mut self) {
        let here = self.at;
        let rivals = (0..FACTORS.len()).filter(|&i| i != here && !self.probed[i]);
        let (Some(mine), Some((i, theirs))) = (self.estimate(here), self.fastest(rivals)) else {
            return;
        };
        if (theirs as f64) < mine as f64 * (1.0 - GAIN) {
            self.reasons.push(format!(
                "×{}: median {:.3} s over {} trials, behind ×{}'s {:.3} s over {}: probe ×{}",
                FACTORS[here],
                secs(mine),
                self.times[here].len(),
                FACTORS[i],
                secs(theirs),
                self.times[i].len(),
                FACTORS[i]
            ));
            self.probed[i] = true;
            self.mode = Mode::Probing { kept: here };
            self.at = i;
        }
    }

    /// The probe at [`Controller::factor`] took `kernel_ns`: keep it if it beats the kept
    /// factor's median by [`GAIN`] (and climb on above it), else go back.
    fn judge_probe(&mut self, kept: usize, kernel_ns: u64) {
        let (f, k) = (FACTORS[self.at], FACTORS[kept]);
        let theirs = self.estimate(kept).unwrap_or(u64::MAX);
        let gain = 1.0 - kernel_ns as f64 / theirs as f64;
        if gain < GAIN {
            self.reasons.push(format!(
                "probe ×{f}: {:.3} s, {:+.0}% against ×{k}'s median {:.3} s: back to ×{k}",
                secs(kernel_ns),
                gain * 100.0,
                secs(theirs)
            ));
            self.at = kept;
            self.mode = Mode::Settled;
        } else if self.at + 1 < FACTORS.len() {
            self.reasons.push(format!(
                "probe ×{f}: {:.3} s, {:.0}% faster than ×{k}'s median {:.3} s: keep it and \
                 climb on, ×{}",
                secs(kernel_ns),
                gain * 100.0,
                secs(theirs),
                FACTORS[self.at + 1]
            ));
            self.at += 1;
            self.mode = Mode::Exploring;
            self.patience_spent = false;
        } else {
            self.reasons.push(format!(
                "probe ×{f}: {:.3} s, {:.0}% faster than ×{k}'s median {:.3} s: settled on ×{f}",
                secs(kernel_ns),
                gain * 100.0,
                secs(theirs)
            ));
            self.mode = Mode::Settled;
        }
    }

    /// What was chosen and why: the settled factor (the kept one when a probe was due but the
    /// trials ran out first), or, when they ran out while exploring, the factor with the
    /// fastest median.
    pub fn finish(self) -> OvercommitChoice {
        let settled_after = self.settled_after;
        let mut reasons = self.reasons.clone();
        let chosen = match self.mode {
            Mode::Settled => self.factor(),
            Mode::Probing { kept } => FACTORS[kept],
            Mode::Exploring => {
                let mut c = self.clone();
                c.settle("trials ran out".into());
                reasons.push(format!(
                    "trials ran out while exploring: the fastest median was ×{}",
                    c.factor()
                ));
                c.factor()
            }
        };
        OvercommitChoice {
            factors: self.factors,
            chosen,
            reasons,
            settled_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::CpuSplit;

    fn tel(wait: f64, system: f64, page_ins: f64) -> Summary {
        Summary {
            wall_ms: 100.0,
            samples: 1,
            cpu: Some(CpuSplit {
                user_share: 1.0 - wait - system,
                system_share: system,
                idle_share: wait / 2.0,
                iowait_share: wait / 2.0,
            }),
            page_ins_per_s: Some(page_ins),
            page_outs_per_s: None,
            major_faults_per_s: None,
            readahead_hit_share: None,
            mean_queue_depth: None,
            disk_reads_per_s: None,
            disk_read_bytes_per_s: None,
        }
    }

    #[test]
    fn doubles_while_it_pays_then_keeps_the_fastest() {
        let mut c = Controller::new(2);
        let waiting = tel(0.6, 0.1, 5000.0);
        // ×8 loses while the cores still wait: one more doubling, ×16, which loses too.
        for (ns, want_next) in [(100, 2), (70, 4), (50, 8), (55, 16), (52, 4), (49, 4)] {
            c.observe(ns, Some(&waiting));
            assert_eq!(c.factor(), want_next, "{:?}", c.reasons);
        }
        assert_eq!(c.threads(), 8);
        let r = c.finish();
        assert_eq!(r.factors, [1, 2, 4, 8, 16, 4]);
        assert_eq!(r.chosen, 4);
        assert_eq!(r.settled_after, Some(5));
        assert!(
            r.reasons
                .last()
                .is_some_and(|s| s.contains("settled on ×4")),
            "{r:?}"
        );
    }

    #[test]
    fn a_noisy_loss_while_the_cores_wait_gets_one_more_doubling_once() {
        let mut c = Controller::new(1);
        let waiting = tel(0.6, 0.1, 5000.0);
        // ×2 looks no better (noise); ×4 pays; ×8 loses: no second chance, settle on ×4.
        for (ns, want_next) in [(100, 2), (101, 4), (70, 8), (80, 4)] {
            c.observe(ns, Some(&waiting));
            assert_eq!(c.factor(), want_next, "{:?}", c.reasons);
        }
        // A loss beyond the noise settles at once, though the cores wait. BFS on road:6000x6000
        // at 70 % (times and telemetry of that run, rounded): 11.3 s at ×1, 17.4 s at ×2, and
        // 21.5 s at ×4 when it was given one more.
        let mut r = Controller::new(1);
        r.observe(11_300, Some(&tel(0.6, 0.24, 21_456.0)));
        r.observe(17_400, Some(&tel(0.74, 0.17, 16_651.0)));
        assert_eq!(r.factor(), 1, "{:?}", r.reasons);
        assert!(r.reasons[1].contains("no noise"), "{:?}", r.reasons);
        assert_eq!(r.clone().finish().settled_after, Some(2));
        // The bound is inclusive: 40 % longer still gets the second doubling, 41 % does not.
        for (ns, next) in [(140, 4), (141, 1)] {
            let mut b = Controller::new(1);
            b.observe(100, Some(&waiting));
            b.observe(ns, Some(&waiting));
            assert_eq!(b.factor(), next, "{ns}: {:?}", b.reasons);
        }
        // With the cores busy, a loss settles at once.
        let mut d = Controller::new(1);
        d.observe(100, Some(&waiting));
        d.observe(101, Some(&tel(0.1, 0.1, 5000.0)));
        assert_eq!(d.factor(), 1);
        assert_eq!(d.finish().settled_after, Some(2));
    }

    #[test]
    fn a_lucky_trial_while_exploring_is_found_out_by_a_probe_that_climbs_on() {
        let mut c = Controller::new(1);
        let waiting = tel(0.6, 0.1, 5000.0);
        // ×2 is lucky once (60); ×4 and ×8 (patience) lose against it: settle on ×2. Its next
        // trial shows its pace (95; median 77.5), behind ×4's 70: probe ×4, which beats it
        // (72) and climbs on: ×8 (65) pays, ×16 (68) does not: settle on the fastest median,
        // ×16's 68 against ×8's 70 (75 then 65).
        for (ns, want_next) in [
            (100, 2),
            (60, 4),
            (70, 8),
            (75, 2),
            (95, 4),
            (72, 8),
            (65, 16),
            (68, 16),
            (67, 16),
        ] {
            c.observe(ns, Some(&waiting));
            assert_eq!(c.factor(), want_next, "{:?}", c.reasons);
        }
        let r = c.finish();
        assert_eq!(r.chosen, 16);
        assert_eq!(r.settled_after, Some(4), "the first settling");
        assert!(r.reasons.iter().any(|s| s.contains("probe ×4")), "{r:?}");
    }

    #[test]
    fn trials_that_all_drift_slower_make_a_probe_or_two_and_no_switch() {
        let mut c = Controller::new(1);
        let waiting = tel(0.6, 0.1, 5000.0);
        // Every factor equally fast, every trial 2 slower than the last: the early trials'
        // times look better and better, but each probe runs now, as slow as the rest.
        let mut t = 100;
        c.observe(t, Some(&waiting)); // ×1: 100
        for ns in [80, 85, 84] {
            c.observe(ns, Some(&waiting)); // ×2, ×4, ×8: settle on ×2
        }
        assert_eq!(c.factor(), 2);
        let mut probes = 0;
        for _ in 0..20 {
            t = t.max(86) + 2;
            let f = c.factor();
            c.observe(t, Some(&waiting));
            if f != 2 {
                probes += 1;
                assert_eq!(c.factor(), 2, "a probe that did not pay goes back");
            }
        }
        assert!(probes <= 3, "{probes} probes: {:?}", c.reasons);
        assert_eq!(c.finish().chosen, 2);
    }

    #[test]
    fn a_probe_due_when_the_trials_run_out_leaves_the_kept_factor_chosen() {
        let mut c = Controller::new(1);
        let waiting = tel(0.6, 0.1, 5000.0);
        for ns in [100, 60, 70, 75, 95] {
            c.observe(ns, Some(&waiting));
        }
        assert_eq!(c.factor(), 4, "a probe of ×4 is next");
        assert_eq!(c.finish().chosen, 2);
    }

    #[test]
    fn busy_cores_without_page_ins_stay_at_one() {
        let mut c = Controller::new(2);
        c.observe(100, Some(&tel(0.02, 0.05, 0.0)));
        assert_eq!(c.factor(), 1);
        assert_eq!(c.finish().chosen, 1);
    }

    #[test]
    fn system_time_stops_the_climb_and_a_loss_goes_back() {
        let mut c = Controller::new(1);
        c.observe(100, Some(&tel(0.5, 0.1, 900.0)));
        c.observe(80, Some(&tel(0.1, 0.8, 900.0)));
        assert_eq!(c.factor(), 2);
        let mut d = Controller::new(1);
        d.observe(100, None);
        d.observe(120, None);
        assert_eq!(d.factor(), 1);
        let mut e = Controller::new(1);
        e.observe(100, None);
        let r = e.finish();
        assert_eq!((r.chosen, r.factors.len()), (1, 1));
    }
}
