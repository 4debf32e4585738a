//! Is the machine quiet? Other processes' CPU use over a short window, from `/proc/stat` minus
//! this process's own time.

use std::time::{Duration, Instant};

use serde::Serialize;

/// CPU use by everything but this process over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quiet {
    /// Share of all CPUs' time that other processes and the kernel were busy (0..1).
    pub others_busy_share: f64,
    /// Window length.
    pub window_ms: u64,
    /// Times the check waited for the machine to calm down before this window.
    pub waits: u32,
}

fn ticks() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = s.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = cpu
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    let total: u64 = v.iter().take(8).sum();
    Some((total - idle, total))
}

fn own_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = s.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // fields 14 and 15 (utime, stime) are at 11 and 12 after the command name
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Measure others' CPU use over `window`.
pub fn measure(window: Duration) -> Option<Quiet> {
    let (b0, t0) = ticks()?;
    let o0 = own_ticks()?;
    let start = Instant::now();
    std::thread::sleep(window);
    let (b1, t1) = ticks()?;
    let o1 = own_ticks()?;
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
