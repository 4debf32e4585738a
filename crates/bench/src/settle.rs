//! Waiting for the host to take back freed memory before a run that faults fresh memory.
//!
//! A guest that reports its free pages to the host (virtio-balloon free page reporting) hands
//! back what a run frees over the following seconds, a pass every two seconds or so while
//! there is more. A page handed back costs a host fault at its next first touch, on top of the
//! guest's own, so a run that begins right after another faults a mix of pages still backed
//! and pages handed back, and the mix depends on how far reporting had got: on the VM
//! hugewise is measured on, the same loop of 4 KiB faults read a p99 of 7 µs or of 25 µs run
//! by run. Waiting until reporting has gone quiet gives every run the same start, with the
//! last run's memory handed back: every first touch then a host fault too. Reading the counter
//! around each run says how much was handed back meanwhile, waited for or not.

use std::time::{Duration, Instant};

use hugewise_sys::sysfs::SysFs;

/// How long the counter must stand still: longer than two of the kernel's passes.
pub const QUIET_FOR: Duration = Duration::from_secs(5);

/// The longest wait: a run goes ahead after it either way, with that on record.
pub const CAP: Duration = Duration::from_secs(60);

/// How often the counter is read.
const POLL: Duration = Duration::from_millis(250);

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waited {
    /// Time waited.
    pub ms: u64,
    /// Whether reporting went quiet (else the cap ran out).
    pub quiet: bool,
}

/// Wait until this guest's free page reporting has been quiet for [`QUIET_FOR`] (at most
/// [`CAP`]); `None`, at once, where the kernel does not count what it reports.
pub fn settle(sys: &SysFs) -> Option<Waited> {
    let read = || reported(sys);
    read()?;
    let t0 = Instant::now();
    let quiet = wait_quiet(read, std::thread::sleep, QUIET_FOR, CAP, POLL)?;
    Some(Waited {
        ms: t0.elapsed().as_millis() as u64,
        quiet,
    })
}

/// Memory this guest has reported to its host so far, in KiB (`None` where the kernel does not
/// count it).
pub fn reported(sys: &SysFs) -> Option<u64> {
    sys.reported_kib().ok().flatten()
}

/// Read the counter every `poll` until it has not moved for `quiet_for`: `Some(true)` then,
/// `Some(false)` once `cap` has been slept without that, `None` when it cannot be read.
/// Time is counted in sleeps, so a test can drive it without waiting.
fn wait_quiet(
    mut read: impl FnMut() -> Option<u64>,
    mut sleep: impl FnMut(Duration),
    quiet_for: Duration,
    cap: Duration,
    poll: Duration,
) -> Option<bool> {
    let mut last = read()?;
    let (mut slept, mut still) = (Duration::ZERO, Duration::ZERO);
    while still < quiet_for {
        if slept >= cap {
            return Some(false);
        }
        sleep(poll);
        slept += poll;
        let now = read()?;
        if now == last {
            still += poll;
        } else {
            (last, still) = (now, Duration::ZERO);
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive `wait_quiet` over `readings` (one per read, the last repeated), a poll of 1 s:
    /// what it returned and how many seconds it slept.
    fn drive(readings: &[u64], quiet_for: u64, cap: u64) -> (Option<bool>, u64) {
        let mut i = 0;
        let mut slept = 0;
        let r = wait_quiet(
            || {
                let v = readings[i.min(readings.len() - 1)];
                i += 1;
                Some(v)
            },
            |d| slept += d.as_secs(),
            Duration::from_secs(quiet_for),
            Duration::from_secs(cap),
            Duration::from_secs(1),
        );
        (r, slept)
    }

    #[test]
    fn a_still_counter_is_quiet_after_quiet_for() {
        assert_eq!(drive(&[7], 5, 60), (Some(true), 5));
    }

    #[test]
    fn each_move_starts_the_quiet_over() {
        // Reads at 0..: 7 7 9 9 12 then still; the last move is at the 4th second, so quiet
        // from then until 4 + 5.
        assert_eq!(drive(&[7, 7, 9, 9, 12], 5, 60), (Some(true), 9));
    }

    #[test]
    fn a_counter_that_keeps_moving_gives_up_at_the_cap() {
        let moving: Vec<u64> = (0..100).collect();
        assert_eq!(drive(&moving, 5, 10), (Some(false), 10));
    }

    #[test]
    fn a_counter_that_cannot_be_read_gives_none() {
        let r = wait_quiet(|| None, |_| panic!("slept"), QUIET_FOR, CAP, POLL);
        assert_eq!(r, None);
    }

    #[test]
    fn where_the_kernel_counts_nothing_there_is_nothing_to_wait_for() {
        let dir = tempfile::tempdir().expect("tmp");
        let t0 = Instant::now();
        assert_eq!(settle(&SysFs::new(dir.path())), None);
        assert!(t0.elapsed() < QUIET_FOR);
        assert_eq!(reported(&SysFs::new(dir.path())), None);
    }
}
