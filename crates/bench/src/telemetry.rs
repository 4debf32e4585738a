//! Telemetry while a run runs: a thread samples `/proc` and `/sys` at a fixed interval (CPU
//! split, the process's faults, swap traffic, the swap device's queue, the memory cgroup), and
//! stretches of it (a trial, the whole run) are summarized.
//!
//! The sampler reads a handful of small files per interval; the time it spends doing so is
//! measured and recorded (`sampler_busy_share`), so its overhead is known rather than assumed.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use hugewise_results::telemetry::{
    CgroupSample, CpuSplit, DiskDelta, Sample, Summary, Telemetry,
};
use hugewise_sys::proc::{CpuTimes, Faults, Pid, ProcFs};
use hugewise_sys::sysfs::{memcg_counters, BlockStat, DevNum, MemcgCounters, SysFs};

use crate::{Error, Result};

/// What to sample.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between samples.
    pub interval: Duration,
    /// The process whose faults are counted.
    pub pid: Pid,
    /// The swap device; `None`: the device of the swap area the kernel fills first, if any.
    pub swap_device: Option<DevNum>,
    /// The memory cgroup directory the run is in, if any.
    pub cgroup: Option<PathBuf>,
    /// Roots of `/proc` and `/sys`.
    pub proc: ProcFs,
    /// Root of `/sys`.
    pub sys: SysFs,
}

impl Config {
    /// Sample this process every `interval` on the real machine.
    pub fn new(interval: Duration) -> Config {
        Config {
            interval,
            pid: Pid::Current,
            swap_device: None,
            cgroup: None,
            proc: ProcFs::default(),
            sys: SysFs::default(),
        }
    }
}

/// The device of the swap area the kernel fills first: the highest priority, the first listed
/// among equals (`None` without swap or when its device has no counters, as for swap on zram
/// without stats). On a machine with swap of its own beside hugewise's, that is where the
/// run's page-ins come from until it is full.
pub fn swap_device(proc: &ProcFs) -> Option<DevNum> {
    let mut areas = proc.swaps().ok()?;
    // Stable: equals keep their order.
    areas.sort_by_key(|a| std::cmp::Reverse(a.priority));
    areas.iter().find_map(|a| DevNum::of_path(&a.path).ok())
}

/// Raw counters at one moment.
#[derive(Debug, Clone, Default)]
struct Raw {
    at: Option<Instant>,
    cpu: Option<CpuTimes>,
    faults: Option<Faults>,
    pswpin: Option<u64>,
    pswpout: Option<u64>,
    ra_hit: Option<u64>,
    ra: Option<u64>,
    disk: Option<BlockStat>,
    cgroup: Option<MemcgCounters>,
}

fn read_raw(cfg: &Config, dev: Option<DevNum>) -> Raw {
    let vm = cfg.proc.vmstat().ok();
    let get = |k: &str| vm.as_ref().and_then(|v| v.get(k)).map(|&x| x.max(0) as u64);
    Raw {
        at: Some(Instant::now()),
        cpu: cfg.proc.cpu_times().ok(),
        faults: cfg.proc.process_faults(cfg.pid).ok(),
        pswpin: get("pswpin"),
        pswpout: get("pswpout"),
        ra_hit: get("swap_ra_hit"),
        ra: get("swap_ra"),
        disk: dev.and_then(|d| cfg.sys.block_stat(d).ok()),
        cgroup: cfg.cgroup.as_ref().and_then(|c| memcg_counters(c).ok()),
    }
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

fn sample(prev: &Raw, now: &Raw, t0: Instant) -> Sample {
    let at = now.at.unwrap_or(t0);
    let interval = at.duration_since(prev.at.unwrap_or(t0));
    let interval_ms = interval.as_secs_f64() * 1e3;
    let cpu = prev.cpu.zip(now.cpu).and_then(|(a, b)| {
        let total = b.total().saturating_sub(a.total()) as f64;
        (total > 0.0).then(|| {
            let share = |x: u64, y: u64| y.saturating_sub(x) as f64 / total;
            CpuSplit {
                user_share: share(a.user, b.user),
                system_share: share(a.system, b.system),
                idle_share: share(a.idle, b.idle),
                iowait_share: share(a.iowait, b.iowait),
            }
        })
    });
    let disk = prev.disk.zip(now.disk).map(|(a, b)| DiskDelta {
        reads: b.reads.saturating_sub(a.reads),
        read_bytes: b.read_sectors.saturating_sub(a.read_sectors) * 512,
        writes: b.writes.saturating_sub(a.writes),
        write_bytes: b.write_sectors.saturating_sub(a.write_sectors) * 512,
        in_flight: b.in_flight,
        mean_queue_depth: b.time_in_queue_ms.saturating_sub(a.time_in_queue_ms) as f64
            / interval_ms.max(1e-3),
        busy_share: (b.io_ticks_ms.saturating_sub(a.io_ticks_ms) as f64 / interval_ms.max(1e-3))
            .min(1.0),
    });
    let cgroup = now.cgroup.map(|c| CgroupSample {
        usage_bytes: c.usage_bytes,
        swap_bytes: c.swap_bytes,
        limit_hits: delta(prev.cgroup.and_then(|p| p.limit_hits), c.limit_hits),
        major_faults: delta(prev.cgroup.and_then(|p| p.major_faults), c.major_faults),
    });
    Sample {
        t_ms: at.duration_since(t0).as_secs_f64() * 1e3,
        interval_ms,
        cpu,
        minor_faults: delta(prev.faults.map(|f| f.minor), now.faults.map(|f| f.minor)),
        major_faults: delta(prev.faults.map(|f| f.major), now.faults.map(|f| f.major)),
        pswpin_pages: delta(prev.pswpin, now.pswpin),
        pswpout_pages: delta(prev.pswpout, now.pswpout),
        swap_ra_hit_pages: delta(prev.ra_hit, now.ra_hit),
        swap_ra_pages: delta(prev.ra, now.ra),
        disk,
        cgroup,
    }
}

/// Summarize samples (each counter over the time of the samples that have it).
pub fn summarize(samples: &[Sample]) -> Summary {
    let wall_ms: f64 = samples.iter().map(|s| s.interval_ms).sum();
    // Sum of a counter and the time it covers, or None when no sample has it.
    let rate = |f: &dyn Fn(&Sample) -> Option<f64>| {
        let (sum, ms) = samples
            .iter()
            .filter_map(|s| f(s).map(|v| (v, s.interval_ms)))
            .fold((0.0, 0.0), |(a, t), (v, ms)| (a + v, t + ms));
        (ms > 0.0).then(|| sum / (ms / 1e3))
    };
    let weighted = |f: &dyn Fn(&Sample) -> Option<f64>| {
        let (sum, ms) = samples
            .iter()
            .filter_map(|s| f(s).map(|v| (v * s.interval_ms, s.interval_ms)))
            .fold((0.0, 0.0), |(a, t), (v, ms)| (a + v, t + ms));
        (ms > 0.0).then(|| sum / ms)
    };
    let cpu = (|| {
        Some(CpuSplit {
            user_share: weighted(&|s| s.cpu.map(|c| c.user_share))?,
            system_share: weighted(&|s| s.cpu.map(|c| c.system_share))?,
            idle_share: weighted(&|s| s.cpu.map(|c| c.idle_share))?,
            iowait_share: weighted(&|s| s.cpu.map(|c| c.iowait_share))?,
        })
    })();
    let total = |f: &dyn Fn(&Sample) -> Option<u64>| -> Option<u64> {
        samples.iter().filter_map(f).reduce(|a, b| a + b)
    };
    let readahead_hit_share = total(&|s| s.swap_ra_hit_pages)
        .zip(total(&|s| s.swap_ra_pages))
        .and_then(|(hit, all)| (all > 0).then(|| hit as f64 / all as f64));
    Summary {
        wall_ms,
        samples: samples.len(),
        cpu,
        page_ins_per_s: rate(&|s| s.pswpin_pages.map(|x| x as f64)),
        page_outs_per_s: rate(&|s| s.pswpout_pages.map(|x| x as f64)),
        major_faults_per_s: rate(&|s| s.major_faults.map(|x| x as f64)),
        readahead_hit_share,
        mean_queue_depth: weighted(&|s| s.disk.map(|d| d.mean_queue_depth)),
        disk_reads_per_s: rate(&|s| s.disk.map(|d| d.reads as f64)),
        disk_read_bytes_per_s: rate(&|s| s.disk.map(|d| d.read_bytes as f64)),
    }
}

#[derive(Debug, Default)]
struct Shared {
    samples: Vec<Sample>,
    busy: Duration,
    /// The last raw reading, so that a window can be closed exactly when it ends.
    last: Raw,
}

/// A running sampler. [`Sampler::finish`] stops it and returns what it recorded.
#[derive(Debug)]
pub struct Sampler {
    cfg: Config,
    dev: Option<DevNum>,
    t0: Instant,
    shared: Arc<Mutex<Shared>>,
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Take a first reading and start sampling every `cfg.interval`.
    pub fn start(cfg: Config) -> Result<Sampler> {
        if cfg.interval < Duration::from_millis(1) {
            return Err(Error::Config(
                "the telemetry interval must be at least 1 ms".into(),
            ));
        }
        let dev = cfg.swap_device.or_else(|| swap_device(&cfg.proc));
        let t0 = Instant::now();
        let first = read_raw(&cfg, dev);
        let shared = Arc::new(Mutex::new(Shared {
            last: first,
            ..Shared::default()
        }));
        let (stop, stopped) = mpsc::channel::<()>();
        let (c, s) = (cfg.clone(), Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("hugewise-telemetry".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(c.interval) {
                    let began = Instant::now();
                    let raw = read_raw(&c, dev);
                    if let Ok(mut sh) = s.lock() {
                        let smp = sample(&sh.last, &raw, t0);
                        sh.samples.push(smp);
                        sh.last = raw;
                        sh.busy += began.elapsed();
                    }
                }
            })
            .map_err(|e| Error::Config(format!("starting the telemetry thread: {e}")))?;
        Ok(Sampler {
            cfg,
            dev,
            t0,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// How many samples are recorded so far (a mark for [`Sampler::summary_since`]).
    pub fn mark(&self) -> usize {
        self.shared.lock().map_or(0, |s| s.samples.len())
    }

    /// Close the current interval now (so a window ends where its trial ended) and summarize
    /// the samples recorded since `mark`.
    pub fn summary_since(&self, mark: usize) -> Summary {
        let Ok(mut sh) = self.shared.lock() else {
            return summarize(&[]);
        };
        let began = Instant::now();
        let raw = read_raw(&self.cfg, self.dev);
        let smp = sample(&sh.last, &raw, self.t0);
        sh.samples.push(smp);
        sh.last = raw;
        sh.busy += began.elapsed();
        summarize(sh.samples.get(mark..).unwrap_or(&[]))
    }

    /// Stop sampling and return everything recorded.
    pub fn finish(mut self) -> Telemetry {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let elapsed = self.t0.elapsed();
        let sh = self
            .shared
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let name = self
            .dev
            .and_then(|d| self.cfg.sys.block_name(d).ok().flatten());
        Telemetry {
            interval_ms: self.cfg.interval.as_secs_f64() * 1e3,
            swap_device: name.or_else(|| self.dev.map(|d| d.to_string())),
            cgroup: self.cfg.cgroup.clone(),
            sampler_busy_share: sh.busy.as_secs_f64() / elapsed.as_secs_f64().max(1e-9),
            summary: summarize(&sh.samples),
            samples: sh.samples,
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process_and_summarizes() {
        let s = Sampler::start(Config::new(Duration::from_millis(5))).expect("start");
        let m = s.mark();
        // Fault some fresh pages in.
        let v: Vec<u8> = vec![1; 8 << 20];
        std::thread::sleep(Duration::from_millis(40));
        let w = s.summary_since(m);
        assert!(w.samples >= 2, "{w:?}");
        assert!(v.iter().map(|&x| x as u64).sum::<u64>() > 0);
        let t = s.finish();
        assert!(t.samples.len() >= w.samples);
        let minor: u64 = t.samples.iter().filter_map(|x| x.minor_faults).sum();
        assert!(minor > 0, "{t:?}");
        let cpu = t.summary.cpu.expect("cpu split");
        let sum = cpu.user_share + cpu.system_share + cpu.idle_share + cpu.iowait_share;
        assert!(sum > 0.5 && sum <= 1.0001, "{cpu:?}");
        assert!(t.sampler_busy_share < 0.5);
        assert!(t.summary.page_ins_per_s.is_some());
    }

    #[test]
    fn summaries_of_recorded_samples() {
        let smp = |ms: f64, pswpin: Option<u64>, depth: f64| Sample {
            t_ms: ms,
            interval_ms: 100.0,
            cpu: Some(CpuSplit {
                user_share: 0.5,
                system_share: 0.1,
                idle_share: 0.2,
                iowait_share: 0.2,
            }),
            minor_faults: Some(1),
            major_faults: Some(10),
            pswpin_pages: pswpin,
            pswpout_pages: None,
            swap_ra_hit_pages: Some(3),
            swap_ra_pages: Some(4),
            disk: Some(DiskDelta {
                reads: 50,
                read_bytes: 50 * 4096,
                writes: 0,
                write_bytes: 0,
                in_flight: 1,
                mean_queue_depth: depth,
                busy_share: 0.5,
            }),
            cgroup: None,
        };
        let s = summarize(&[smp(100.0, Some(100), 1.0), smp(200.0, Some(300), 3.0)]);
        assert_eq!(s.page_ins_per_s, Some(2000.0));
        assert_eq!(s.mean_queue_depth, Some(2.0));
        assert_eq!(s.page_outs_per_s, None);
        assert_eq!(s.major_faults_per_s, Some(100.0));
        assert_eq!(s.readahead_hit_share, Some(0.75));
        assert_eq!(s.disk_reads_per_s, Some(500.0));
        let empty = summarize(&[]);
        assert_eq!((empty.samples, empty.cpu), (0, None));
    }
}
