//! Collapses paced by the target's page faults, so that the daemon does not lengthen them.
//!
//! A collapse swaps the chunk's page table with the target's memory map locked, and a page
//! fault the target takes meanwhile waits for it: one such wait, about a collapse long (0.4–5
//! ms in a virtual machine), is hundreds of 4 KiB faults long. A program faulting in its memory
//! takes a few hundred thousand faults a second, so every collapse made while it does holds up
//! one fault per faulting thread: 1,320 collapses beside the first 4 GiB of one (a million
//! faults) put 0.13 % of its faults behind a collapse, and its 99.9th percentile fault went
//! from 64–144 µs to 570–640 µs.
//!
//! A target is paced only while it faults fast ([`HEAVY_FAULTS_PER_S`], 50,000 a second, over
//! the last window or the whole last interval): faulting its memory in, when its faults are
//! what it waits on. Then the pacer keeps the
//! faults the daemon may hold up to a share of those the target has taken
//! since the daemon first read it (0.02 % by default: a fifth of what a 99.9th percentile
//! looks past, so that the held faults stay above it). Faults from before are not counted: a
//! long-lived program's past faults, their memory long freed, would otherwise pay for holding
//! up most of a new burst's. Before each collapse it reads the target's fault count
//! (`/proc/PID/stat`): the faults since the last reading, over the time since (at least a
//! collapse's length: the daemon waits out the rest of a shorter window before reading, or
//! one fault in a tenth of a millisecond would read as ten thousand a second), give the rate
//! now; a collapse of `c` ns is expected to hold up `rate × c` faults, never more than one per
//! thread. One fault held up is always allowed: until the target has taken 1 / share faults, a
//! single wait is its slowest fault, not a percentile of them, and a program that takes a
//! fault now and then (a ring of shared memory growing) would otherwise never see a collapse. The collapse goes when the faults expected held so far, with its own, stay within
//! the share of the faults taken; otherwise the target's collapses wait for the next look. A
//! target that is not faulting holds nothing up and is never held back, and faults taken
//! before a collapse pay for those made after.
//!
//! [`Pacer`] is a pure function of its readings, so that each rule has a scenario test with
//! exact numbers; the daemon supplies the readings.

/// Faults a second from which a target is faulting its memory in, and its collapses are paced:
/// at 1–2 µs a 4 KiB fault, a twentieth of a core and more in faults. Below it a program's
/// faults are incidental (an allocation now and then, a sample ring growing, and the faults
/// the daemon's own collapses cause: a thread touching a chunk while it is collapsed faults
/// once and waits), and pacing by them held the collapses of a program reading its hot set
/// back for its whole run (3 of 40 hot chunks collapsed in a hot-spot benchmark against 40).
pub const HEAVY_FAULTS_PER_S: f64 = 50_000.0;

/// What the target's `stat` said at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// When it was read, in nanoseconds from any fixed origin.
    pub at_ns: u64,
    /// Page faults (minor and major) the target has taken since it started.
    pub faults: u64,
    /// Threads it has: how many of its faults can wait behind one collapse.
    pub threads: u32,
}

/// Whether a collapse may start now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Go: it is expected to hold up this many of the target's faults.
    Go {
        /// Faults expected held up (0 when the target is not faulting).
        held: f64,
    },
    /// Wait: the target faults at this rate, and the share of its faults the daemon may
    /// hold up is spent.
    Wait {
        /// The target's faults per second since the last reading.
        faults_per_s: f64,
    },
}

/// The account of one target's faults held up by collapses.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// Most faults held up, as a share of those the target has taken since the first reading.
    share: f64,
    /// The target's fault count at the first reading.
    first: Option<u64>,
    /// Faults expected held up so far.
    held: f64,
    /// The last reading: the next rate is measured from it.
    last: Option<Reading>,
    /// The reading at the start of the last look, and the faults a nanosecond since the one
    /// before it: whether the target is faulting its memory in is judged over a whole interval
    /// as well as over the last window, which a stall of the host can empty.
    look: Option<Reading>,
    look_rate_per_ns: f64,
}

impl Pacer {
    /// A pacer that holds up at most `share` (0–1) of the target's faults.
    pub fn new(share: f64) -> Pacer {
        Pacer {
            share: share.clamp(0.0, 1.0),
            first: None,
            held: 0.0,
            last: None,
            look: None,
            look_rate_per_ns: 0.0,
        }
    }

    /// Note a reading taken without a collapse after it (at the start of a look): the next
    /// rate is measured from here.
    pub fn observe(&mut self, now: Reading) {
        self.first.get_or_insert(now.faults);
        self.last = Some(now);
        self.look_rate_per_ns = match self.look {
            Some(l) if now.at_ns > l.at_ns => {
                now.faults.saturating_sub(l.faults) as f64 / (now.at_ns - l.at_ns) as f64
            }
            _ => 0.0,
        };
        self.look = Some(now);
    }

    /// How long to wait, at `now_ns`, before reading for a collapse of `collapse_ns`, so that
    /// the rate is read over at least that long (0 when the last reading is that old).
    pub fn wait_ns(&self, now_ns: u64, collapse_ns: u64) -> u64 {
        match (self.share >= 1.0, self.last) {
            (false, Some(l)) => collapse_ns.saturating_sub(now_ns.saturating_sub(l.at_ns)),
            _ => 0,
        }
    }

    /// Faults expected held up so far.
    pub fn held(&self) -> f64 {
        self.held
    }

    /// Whether a collapse expected to take `collapse_ns` may start at `now`; a collapse that
    /// goes is charged here.
    pub fn before_collapse(&mut self, now: Reading, collapse_ns: u64) -> Pace {
        if self.share >= 1.0 {
            return Pace::Go { held: 0.0 };
        }
        let rate_per_ns = match self.last {
            Some(f) if now.at_ns > f.at_ns => {
                now.faults.saturating_sub(f.faults) as f64 / (now.at_ns - f.at_ns) as f64
            }
            // No window to measure over: the first reading of a target, or two at once.
            _ => 0.0,
        };
        self.last = Some(now);
        let taken = now
            .faults
            .saturating_sub(*self.first.get_or_insert(now.faults));
        // Faults below the heavy rate are incidental: a collapse then holds up one now and
        // then, not a stream of them, and it is not counted.
        if rate_per_ns.max(self.look_rate_per_ns) < HEAVY_FAULTS_PER_S / 1e9 {
            return Pace::Go { held: 0.0 };
        }
        let held = (rate_per_ns * collapse_ns as f64).min(f64::from(now.threads.max(1)));
        let allowed = if self.share > 0.0 {
            (self.share * taken as f64).max(1.0)
        } else {
            0.0
        };
        if held == 0.0 || self.held + held <= allowed {
            self.held += held;
            Pace::Go { held }
        } else {
            Pace::Wait {
                faults_per_s: rate_per_ns * 1e9,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ms: u64, faults: u64, threads: u32) -> Reading {
        Reading {
            at_ns: ms * MS,
            faults,
            threads,
        }
    }

    /// A pacer first reading the target at `base` faults, then at `since` more a second
    /// later (none of them while a collapse ran).
    fn after(share: f64, base: u64, since: u64, threads: u32) -> Pacer {
        let mut p = Pacer::new(share);
        p.observe(at(0, base, threads));
        p.observe(at(1000, base + since, threads));
        p
    }

    #[test]
    fn a_target_that_is_not_faulting_is_never_held_back() {
        // Ten faults before the first reading, none since: with no share to spend, collapses
        // still go.
        let mut p = after(0.0002, 10, 0, 1);
        for k in 1..=100 {
            assert_eq!(
                p.before_collapse(at(1000 + k, 10, 1), 2 * MS),
                Pace::Go { held: 0.0 }
            );
        }
        assert_eq!(p.held(), 0.0);
    }

    #[test]
    fn a_fast_faulting_target_is_held_up_once_per_thread_and_collapse() {
        // 7,000,000 faults from before the first reading, which do not count; 1,000,000
        // since, 400 a millisecond now: a 2 ms collapse would hold up 800, but one thread can
        // have only one fault waiting.
        let mut p = after(0.0002, 7_000_000, 1_000_000, 1);
        let mut faults = 8_000_000;
        let mut made = 0;
        for k in 1..=300u64 {
            faults += 400;
            match p.before_collapse(at(1000 + k, faults, 1), 2 * MS) {
                Pace::Go { held } => {
                    assert_eq!(held, 1.0);
                    made += 1;
                    assert!(p.held() <= 0.0002 * (faults - 7_000_000) as f64);
                }
                Pace::Wait { faults_per_s } => {
                    assert_eq!(faults_per_s, 400_000.0);
                    break;
                }
            }
        }
        // 0.02 % of the faults since the first reading, 1,000,000 + 400 k, reaches k at
        // k = 200 / 0.92 = 217.4: 217 go, the 218th waits.
        assert_eq!(made, 217);
    }

    #[test]
    fn each_thread_can_be_held_up_by_one_collapse() {
        let mut p = after(0.0002, 0, 1_000_000, 4);
        match p.before_collapse(at(1001, 1_000_400, 4), 2 * MS) {
            Pace::Go { held } => assert_eq!(held, 4.0),
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn a_target_faulting_below_the_heavy_rate_is_never_held_back() {
        // 49,000 faults a second, just below the heavy rate: collapse after collapse goes,
        // uncounted, whatever the share.
        let mut p = after(0.0002, 0, 49_000, 1);
        let mut faults = 49_000;
        for k in 1..=500u64 {
            faults += 98;
            assert_eq!(
                p.before_collapse(at(1000 + 2 * k, faults, 1), 2 * MS),
                Pace::Go { held: 0.0 }
            );
        }
        // 50,000 a second is heavy: with nothing taken since the first reading but this
        // window's, the one fault always allowed goes, then the next waits.
        let mut p = after(0.0002, 0, 0, 1);
        assert_eq!(
            p.before_collapse(at(1002, 100, 1), 2 * MS),
            Pace::Go { held: 1.0 }
        );
        assert!(matches!(
            p.before_collapse(at(1004, 200, 1), 2 * MS),
            Pace::Wait { .. }
        ));
    }

    #[test]
    fn one_fault_held_is_always_allowed_and_faults_taken_pay_for_more() {
        let mut p = Pacer::new(0.0002);
        // Faulting fast, 400 a millisecond, from the first reading: the one fault always
        // allowed goes to the first collapse...
        p.observe(at(0, 3_000_000, 1));
        assert_eq!(
            p.before_collapse(at(2, 3_000_800, 1), 2 * MS),
            Pace::Go { held: 1.0 }
        );
        // ... the next waits (0.02 % of 1,600 faults is 0.32 of one)...
        assert!(matches!(
            p.before_collapse(at(4, 3_001_600, 1), 2 * MS),
            Pace::Wait { .. }
        ));
        // ... until 10,000 faults taken pay for a second.
        assert!(matches!(
            p.before_collapse(at(20, 3_008_000, 1), 2 * MS),
            Pace::Wait { .. }
        ));
        assert_eq!(
            p.before_collapse(at(25, 3_010_000, 1), 2 * MS),
            Pace::Go { held: 1.0 }
        );
        assert!(matches!(
            p.before_collapse(at(27, 3_010_800, 1), 2 * MS),
            Pace::Wait { .. }
        ));
    }

    #[test]
    fn a_window_shorter_than_a_collapse_is_waited_out_and_a_share_of_one_never_waits() {
        let mut p = Pacer::new(0.0002);
        assert_eq!(p.wait_ns(5 * MS, 2 * MS), 0, "no reading yet");
        p.observe(at(100, 50, 1));
        // 0.1 ms after the reading, a 2 ms collapse waits 1.9 ms; 3 ms after, not at all.
        assert_eq!(p.wait_ns(100 * MS + MS / 10, 2 * MS), 2 * MS - MS / 10);
        assert_eq!(p.wait_ns(103 * MS, 2 * MS), 0);
        let mut off = after(1.0, 0, 1_000_000, 1);
        assert_eq!(off.wait_ns(1000 * MS, 2 * MS), 0);
        assert_eq!(
            off.before_collapse(at(1001, 1_000_400, 1), 2 * MS),
            Pace::Go { held: 0.0 }
        );
    }

    #[test]
    fn a_target_heavy_over_the_last_interval_is_paced_through_a_quiet_window() {
        // 300,000 faults over the last second, then a window of 2 ms with 2 (a stall of the
        // host): still faulting its memory in, and counted at the window's own rate, 1,000 a
        // second: 2 faults in a 2 ms collapse, one of them a thread's.
        let mut p = after(0.0002, 0, 300_000, 1);
        assert_eq!(
            p.before_collapse(at(1002, 300_002, 1), 2 * MS),
            Pace::Go { held: 1.0 }
        );
        assert_eq!(p.held(), 1.0, "counted, at most one fault a thread");
        // A look whose last interval was light: the quiet window is not counted.
        let mut q = after(0.0002, 0, 300, 1);
        assert_eq!(
            q.before_collapse(at(1002, 310, 1), 2 * MS),
            Pace::Go { held: 0.0 }
        );
    }

    #[test]
    fn a_share_of_zero_allows_no_collapse_while_faulting_not_even_one_and_all_once_done() {
        let mut p = after(0.0, 0, 1_000_000, 1);
        assert!(matches!(
            p.before_collapse(at(1001, 1_000_400, 1), 2 * MS),
            Pace::Wait { .. }
        ));
        assert_eq!(
            p.before_collapse(at(2000, 1_000_400, 1), 2 * MS),
            Pace::Go { held: 0.0 }
        );
    }
}
