//! Is the machine quiet? Other processes' CPU use over a short window, from `/proc/stat` minus
//! this process's own time.

use std::time::{Duration, Instant};

pub use hugewise_results::stats::Quiet;
use hugewise_sys::proc::{Pid, ProcFs};

fn ticks(proc: &ProcFs) -> Option<(u64, u64)> {
    proc.cpu_ticks().ok()
}

fn own_ticks(proc: &ProcFs) -> Option<u64> {
    proc.process_cpu_ticks(Pid::Current).ok()
}

/// Measure others' CPU use over `window`.
pub fn measure(window: Duration) -> Option<Quiet> {
    let proc = ProcFs::default();
    let (b0, t0) = ticks(&proc)?;
    let o0 = own_ticks(&proc)?;
    let start = Instant::now();
    std::thread::sleep(window);
    let (b1, t1) = ticks(&proc)?;
    let o1 = own_ticks(&proc)?;
    let total = (t1 - t0).max(1);
    let others = (b1 - b0).saturating_sub(o1 - o0);
    Some(Quiet {
        others_busy_share: others as f64 / total as f64,
        window_ms: start.elapsed().as_millis() as u64,
        waits: 0,
    })
}

/// Wait until others use at most `max_share` of the CPUs (up to `tries` windows), and return
/// the last measurement: a run goes ahead either way, with how quiet it was on record.
pub fn wait_quiet(max_share: f64, window: Duration, tries: u32) -> Option<Quiet> {
    let mut waits = 0;
    loop {
        let mut q = measure(window)?;
        q.waits = waits;
        if q.others_busy_share <= max_share || waits + 1 >= tries {
            return Some(q);
        }
        waits += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_window_gives_a_share() {
        let q = measure(Duration::from_millis(50)).expect("/proc/stat readable");
        assert!((0.0..=1.0).contains(&q.others_busy_share), "{q:?}");
        assert!(q.window_ms >= 50);
    }
}
