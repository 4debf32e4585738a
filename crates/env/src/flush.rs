//! A thread that keeps a memory cgroup's statistics fresh while something runs in it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use hugewise_results::telemetry::StatsFlush;

/// The default interval: what `run --memory`, `env limit` and `env with --limit-memory` use.
pub const STATS_FLUSH: Duration = Duration::from_millis(50);

/// A thread that reads a cgroup's `memory.stat` every interval until finished or dropped.
///
/// Why: on 6.18 with cgroup v1, BFS on kron:20 with a locked hot prefix (`+lock`) at 65 % of
/// its footprint was OOM-killed with swap to spare in 8 of 22 runs without these reads and in
/// none of 22 with them; a loop reading `memory.usage_in_bytes` instead did not help (8 of 15
/// killed), one reading `memory.stat` did (none of 15) (docs/benchmarks-log.md, "Stale
/// statistics and the OOM killer"). Reading the file makes the kernel flush the cgroup's per-CPU
/// statistics.
/// The reads are made from outside the cgroup, so nothing of them is charged to it. The
/// cgroups of `run --memory` (unless `--stats-flush off`), `env limit` and `env with
/// --limit-memory` get one; the bloat study's does not need one (its sampler reads
/// `memory.stat` itself).
pub struct StatsFlusher {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<StatsFlush>>,
}

impl StatsFlusher {
    /// Start reading `dir`'s `memory.stat` every `interval`. A failed read ends the thread
    /// and is recorded as why it stopped (the cgroup is removed only after [`Self::finish`]).
    pub fn start(dir: &Path, interval: Duration) -> StatsFlusher {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, dir) = (stop.clone(), dir.to_path_buf());
        let handle = std::thread::spawn(move || {
            let (mut reads, mut busy, mut stopped) = (0u64, Duration::ZERO, None);
            let t0 = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let t = Instant::now();
                if let Err(e) = hugewise_sys::sysfs::flush_stats(&dir) {
                    stopped = Some(format!(
                        "after {:.1} s and {reads} reads: {e}",
                        t0.elapsed().as_secs_f64()
                    ));
                    break;
                }
                busy += t.elapsed();
                reads += 1;
                std::thread::park_timeout(interval);
            }
            StatsFlush {
                interval_ms: interval.as_secs_f64() * 1e3,
                reads,
                busy_ms: busy.as_secs_f64() * 1e3,
                stopped,
            }
        });
        StatsFlusher {
            stop,
            handle: Some(handle),
        }
    }

    /// Stop, and say how many reads were made, what they took and whether they stopped early
    /// (`None` if the thread panicked).
    pub fn finish(mut self) -> Option<StatsFlush> {
        self.halt()
    }

    fn halt(&mut self) -> Option<StatsFlush> {
        self.stop.store(true, Ordering::Relaxed);
        let h = self.handle.take()?;
        h.thread().unpark();
        h.join().ok()
    }
}

impl Drop for StatsFlusher {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stats_flusher_reads_until_finished_and_says_why_it_stopped_early() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("memory.stat"), "cache 0\n").expect("w");
        // A long interval: finish wakes the thread instead of waiting it out.
        let f = StatsFlusher::start(dir.path(), Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        let r = f.finish().expect("joined");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(
            (r.reads, r.interval_ms, r.stopped.clone()),
            (1, 10_000.0, None)
        );
        // The file gone: the thread ends by itself and says so.
        let f = StatsFlusher::start(dir.path(), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(30));
        std::fs::remove_file(dir.path().join("memory.stat")).expect("rm");
        std::thread::sleep(Duration::from_millis(30));
        let r = f.finish().expect("joined");
        assert!(r.reads > 1, "{r:?}");
        let why = r.stopped.expect("stopped early");
        assert!(why.contains("memory.stat"), "{why}");
        // Dropped without finish: the thread is stopped and joined, not left running.
        drop(StatsFlusher::start(dir.path(), Duration::from_secs(10)));
    }
}
