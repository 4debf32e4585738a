//! Waiting for the host to take back freed memory before a run that faults fresh memory, and
//! counting what it took around a run.
//!
//! A guest that reports its free pages to the host (virtio-balloon free page reporting) hands
//! back what a run frees over the following seconds, a pass every two seconds or so while
//! there is more. A page handed back costs a host fault at its next first touch, on top of the
//! guest's own, so a run that begins right after another faults a mix of pages still backed
//! and pages handed back, and the mix depends on how far reporting had got (see
//! docs/benchmarks-log.md, "The fault tail and the host"). Waiting until reporting has been
//! still for a while gives every run the same start: reporting done with what the last run
//! freed. Reading the counter around each run says how much was handed back meanwhile, waited
//! for or not.

use std::time::{Duration, Instant};

use hugewise_results::faultlat::Handback;
use hugewise_sys::sysfs::SysFs;

use crate::Result;

/// How long the counter must stand still: longer than two of the kernel's passes.
pub const STILL_FOR: Duration = Duration::from_secs(5);

/// The longest wait: a run goes ahead after it either way, with that on record.
pub const CAP: Duration = Duration::from_secs(60);

/// How often the counter is read.
const POLL: Duration = Duration::from_millis(250);

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waited {
    /// Time waited.
    pub ms: u64,
    /// Whether reporting went still (else the cap ran out).
    pub still: bool,
}

/// Wait until this guest's free page reporting has been still for [`STILL_FOR`] (at most
/// [`CAP`]); `None`, at once, where the kernel does not count what it reports. A counter that
/// is there but not a number is an error.
pub fn settle(sys: &SysFs) -> Result<Option<Waited>> {
    if reported(sys)?.is_none() {
        return Ok(None);
    }
    let t0 = Instant::now();
    // A read that fails mid-wait ends the wait: the run is not worth failing for it, and the
    // readings around the run say what happened.
    let read = || reported(sys).ok().flatten();
    Ok(
        wait_still(read, std::thread::sleep, STILL_FOR, CAP, POLL).map(|still| Waited {
            ms: t0.elapsed().as_millis() as u64,
            still,
        }),
    )
}

/// Memory this guest has reported to its host so far, in KiB (`None` where the kernel does not
/// count it).
pub fn reported(sys: &SysFs) -> Result<Option<u64>> {
    Ok(sys.reported_kib()?)
}

/// What was handed back around a run, from the counter's readings at the previous run's end,
/// this run's start and its end; `None` where one is missing or the counter went backwards
/// (the module reloaded), which would make a difference meaningless.
pub fn handback(
    last_end: Option<u64>,
    start: Option<u64>,
    end: Option<u64>,
    waited: Option<Waited>,
) -> Option<Handback> {
    let (last, start, end) = (last_end?, start?, end?);
    (last <= start && start <= end).then(|| Handback {
        waited_ms: waited.map(|w| w.ms),
        still: waited.map(|w| w.still),
        before_kib: start - last,
        during_kib: end - start,
    })
}

/// Read the counter every `poll` until it has not moved for `still_for`: `Some(true)` then,
/// `Some(false)` once `cap` has been slept without that, `None` when it cannot be read.
/// Time is counted in sleeps, so a test can drive it without waiting.
fn wait_still(
    mut read: impl FnMut() -> Option<u64>,
    mut sleep: impl FnMut(Duration),
    still_for: Duration,
    cap: Duration,
    poll: Duration,
) -> Option<bool> {
    let mut last = read()?;
    let (mut slept, mut still) = (Duration::ZERO, Duration::ZERO);
    while still < still_for {
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

    /// Drive `wait_still` over `readings` (one per read, the last repeated), a poll of 1 s:
    /// what it returned and how many seconds it slept.
    fn drive(readings: &[u64], still_for: u64, cap: u64) -> (Option<bool>, u64) {
        let mut i = 0;
        let mut slept = 0;
        let r = wait_still(
            || {
                let v = readings[i.min(readings.len() - 1)];
                i += 1;
                Some(v)
            },
            |d| slept += d.as_secs(),
            Duration::from_secs(still_for),
            Duration::from_secs(cap),
            Duration::from_secs(1),
        );
        (r, slept)
    }

    #[test]
    fn a_still_counter_ends_the_wait_after_still_for() {
        assert_eq!(drive(&[7], 5, 60), (Some(true), 5));
    }

    #[test]
    fn each_move_starts_the_stillness_over() {
        // Reads at 0..: 7 7 9 9 12 then still; the last move is at the 4th second, so still
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
        let r = wait_still(|| None, |_| panic!("slept"), STILL_FOR, CAP, POLL);
        assert_eq!(r, None);
    }

    #[test]
    fn where_the_kernel_counts_nothing_there_is_nothing_to_wait_for() {
        let dir = tempfile::tempdir().expect("tmp");
        let t0 = Instant::now();
        assert_eq!(settle(&SysFs::new(dir.path())).expect("absent"), None);
        assert!(t0.elapsed() < STILL_FOR);
        assert_eq!(reported(&SysFs::new(dir.path())).expect("absent"), None);
    }

    #[test]
    fn a_counter_that_is_not_a_number_is_an_error_not_a_kernel_without_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir
            .path()
            .join("module/page_reporting/parameters/reported_kib");
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "lots\n").expect("write");
        let sys = SysFs::new(dir.path());
        assert!(reported(&sys).is_err());
        assert!(settle(&sys).is_err());
    }

    #[test]
    fn what_was_handed_back_is_the_counter_s_moves_between_readings() {
        let w = Waited {
            ms: 7_000,
            still: true,
        };
        let h = handback(Some(100), Some(612), Some(2_660), Some(w)).expect("all read");
        assert_eq!((h.before_kib, h.during_kib), (512, 2_048));
        assert_eq!((h.waited_ms, h.still), (Some(7_000), Some(true)));
        let h = handback(Some(5), Some(5), Some(5), None).expect("all read");
        assert_eq!((h.before_kib, h.during_kib, h.waited_ms), (0, 0, None));
        // A reading missing, or a counter that went backwards: nothing made up.
        assert_eq!(handback(None, Some(5), Some(9), None), None);
        assert_eq!(handback(Some(5), Some(9), None, None), None);
        assert_eq!(handback(Some(900), Some(5), Some(9), None), None);
        assert_eq!(handback(Some(1), Some(9), Some(5), None), None);
    }
}
