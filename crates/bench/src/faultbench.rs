//! Page faults beside the daemon's collapses: a fresh region faulted with 4 KiB pages alone,
//! with the daemon collapsing it as the faults go (paced by them), and with the same daemon
//! unpaced, alternated round by round (A B C, C B A, ...).
//!
//! The daemon manages the region only, from just before the first touch until the last is
//! timed: what a program started under `hugewise promote --no-preload` meets while it faults
//! its memory in. It runs in a process of its own by default ([`DaemonIn::Process`]), as under
//! `hugewise promote`: in a thread of the faulting process, its own mappings (its buffers, the
//! warm page of each collapse) would take the region's memory-map lock and flush the faulting
//! thread's TLB, which no real target meets. The measure is the p99.9 fault latency of each
//! arm over the alone arm's in the same round: a collapse holds the memory map, and a fault
//! that comes meanwhile waits for it (see `hugewise_promote::pacing`).

use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use hugewise_mem::{Bytes, PagePolicy};
use hugewise_promote::action::ActionKind;
use hugewise_promote::budget::Limit;
use hugewise_promote::daemon::{self, Daemon};
use hugewise_promote::target::Target;
use hugewise_results::faultlat::{FaultArm, FaultBenchArm, FaultBenchReport, FaultBenchSample};
use hugewise_sys::proc::ProcFs;
use hugewise_sys::sysfs::SysFs;

use crate::stats::{median, ratio, ratios_in_rounds, summarize, Until};
use crate::worker::{self, Request};
use crate::{faultlat, Error, Progress, Result};
use crate::{quiet, settle};

/// Where the daemon beside the faults runs.
#[derive(Debug, Clone, PartialEq)]
pub enum DaemonIn {
    /// A process of its own, `EXE worker` serving a [`DaemonRequest`], as the daemon of
    /// `hugewise promote` is to its target. Collapsing another process's memory needs
    /// CAP_SYS_NICE (root).
    Process(PathBuf),
    /// A thread of the faulting process: no privilege needed to collapse, but the daemon's
    /// own mappings then change the faulting thread's memory map too.
    Thread,
}

impl DaemonIn {
    /// A process of its own running `exe` where this process may collapse another's memory
    /// (root), else a thread.
    pub fn auto(exe: Option<PathBuf>) -> DaemonIn {
        match exe {
            Some(exe) if hugewise_sys::caps::is_root() => DaemonIn::Process(exe),
            _ => DaemonIn::Thread,
        }
    }

    /// Its name in results.
    pub fn name(&self) -> &'static str {
        match self {
            DaemonIn::Process(_) => "process",
            DaemonIn::Thread => "thread",
        }
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Region size.
    pub bytes: Bytes,
    /// Rounds (each runs every arm once), at least.
    pub rounds: u32,
    /// More rounds until the ratios' intervals are narrow enough.
    pub until: Until,
    /// The daemon's policy (`mega`, `linux`, ...: one that acts on mapped pages; the region
    /// publishes no samples).
    pub policy: String,
    /// The daemon's budget, a share of the region (0–1).
    pub budget_share: f64,
    /// The share of the faults the paced daemon's collapses may hold up.
    pub fault_waits: f64,
    /// The daemon faults in the page each collapse copies into first (see
    /// [`hugewise_promote::warm`]).
    pub warm: bool,
    /// The nice value the daemon's thread gives way with (as `hugewise promote --nice`).
    pub nice: i32,
    /// The daemon's interval.
    pub interval: Duration,
    /// Run even when the region is larger than the memory available.
    pub force: bool,
    /// Where the daemon runs.
    pub daemon_in: DaemonIn,
    /// Before each arm, wait until the guest's free page reporting has been still for a while
    /// (see [`crate::settle`]): reporting done with what the arm before freed, so that every
    /// arm starts alike. Without it the arms run back to back, each faulting mostly the memory
    /// the one before freed, some of it still backed by the host.
    pub settle: bool,
}

/// The daemon of one arm, as data: what a worker process is asked to run on a range of the
/// process that starts it, until its stdin closes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonRequest {
    /// The faulting process.
    pub pid: i32,
    /// The region's first byte.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// The daemon's policy.
    pub policy: String,
    /// Its budget, a share of the region (0–1).
    pub budget_share: f64,
    /// Its pacing, a share of the faults its collapses may hold up.
    pub fault_waits: f64,
    /// Whether it faults in each collapse's page first.
    pub warm: bool,
    /// The nice value its thread gives way with.
    pub nice: i32,
    /// Time between two looks.
    pub interval: Duration,
}

impl DaemonRequest {
    /// The daemon, attached to its target.
    fn daemon(&self, t0: Instant) -> Result<Daemon> {
        let range = self.start as usize..self.end as usize;
        let target = Target::attach(&ProcFs::default(), self.pid, t0)?.within(range);
        let policy = hugewise_promote::policy::by_name(&self.policy)
            .ok_or_else(|| Error::Config(format!("no policy named '{}'", self.policy)))?;
        let mut d = Daemon::new(
            policy,
            daemon::Config {
                interval: self.interval,
                limit: Limit::Share(self.budget_share),
                fault_waits: self.fault_waits,
                warm: self.warm,
                nice: self.nice,
                ..daemon::Config::default()
            },
            t0,
        );
        d.add_with(target, None);
        Ok(d)
    }
}

/// The line a daemon's worker writes once attached, before its reply.
const READY: &str = "attached";

/// Serve `r` in a worker: attach, say so on `output`, run the daemon until `input` closes (or
/// `cancel` is set), and reply what it made.
pub fn serve(
    r: &DaemonRequest,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    cancel: &AtomicBool,
) -> Result<()> {
    let d = r.daemon(Instant::now())?;
    writeln!(output, "{READY}")
        .and_then(|()| output.flush())
        .map_err(|e| Error::Config(format!("telling the faults the daemon is ready: {e}")))?;
    let stop = AtomicBool::new(false);
    let made = std::thread::scope(|s| {
        let daemon = s.spawn(|| {
            let made = drive(d, &stop);
            stop.store(true, Ordering::Relaxed);
            made
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if cancel.load(Ordering::Relaxed) {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        // The faulting process closes the pipe once its last touch is timed, or dies.
        let mut sink = [0u8; 64];
        while matches!(input.read(&mut sink), Ok(n) if n > 0) {}
        stop.store(true, Ordering::Relaxed);
        daemon.join()
    })
    .map_err(|_| Error::Config("the daemon's thread panicked".into()))??;
    worker::reply(output, &made)
}

/// Run `d` until `stop` is set, counting what it made.
fn drive(mut d: Daemon, stop: &AtomicBool) -> hugewise_promote::Result<Made> {
    let (mut promoted, mut paced) = (0u32, 0u32);
    let mut latencies = Vec::new();
    d.run(stop, &mut |iv, actions| {
        promoted += iv.promoted;
        paced += iv.paced.unwrap_or(0);
        latencies.extend(
            actions
                .iter()
                .filter(|a| a.kind == ActionKind::Promote && a.succeeded())
                .map(|a| a.latency_ns as f64),
        );
    })?;
    Ok(Made {
        collapses: promoted,
        paced,
        collapse_p50_ns: median(&latencies).map(|m| m as u64),
    })
}

/// What the daemon beside the faults did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Made {
    /// Chunks it collapsed.
    collapses: u32,
    /// Candidates whose collapse waited for the faults.
    paced: u32,
    /// The median latency of its collapses.
    collapse_p50_ns: Option<u64>,
}

/// The name of the daemon's thread.
const DAEMON_THREAD: &str = "hw-faultbench";

/// The daemon running beside the faults, and how to stop it. Dropped without [`Beside::stop`]
/// (a run that failed before its last touch), it is stopped all the same: a study runs many
/// runs in one process, and a daemon left looking at freed memory would spend a core's time
/// until the process ends.
enum Beside {
    Thread {
        stop: Arc<AtomicBool>,
        handle: Option<JoinHandle<hugewise_promote::Result<Made>>>,
    },
    Process(Box<Apart>),
}

/// A daemon in a worker process of its own, and the pipes that stop it and read its reply.
struct Apart {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    request: Request,
    exe: PathBuf,
}

impl Beside {
    /// Start a daemon on `range` of this process, where `cfg` says.
    fn start(cfg: &Config, fault_waits: f64, range: Range<usize>) -> Result<Beside> {
        let r = DaemonRequest {
            pid: std::process::id() as i32,
            start: range.start as u64,
            end: range.end as u64,
            policy: cfg.policy.clone(),
            budget_share: cfg.budget_share,
            fault_waits,
            warm: cfg.warm,
            nice: cfg.nice,
            interval: cfg.interval,
        };
        match &cfg.daemon_in {
            DaemonIn::Thread => Beside::thread(&r),
            DaemonIn::Process(_) if !hugewise_sys::caps::is_root() => Err(Error::Config(
                "a daemon in a process of its own collapses another process's memory, which \
                 takes root (CAP_SYS_NICE); run as root, or put the daemon in a thread of the \
                 faulting process"
                    .into(),
            )),
            DaemonIn::Process(exe) => Beside::process(exe, r),
        }
    }

    fn thread(r: &DaemonRequest) -> Result<Beside> {
        let d = r.daemon(Instant::now())?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name(DAEMON_THREAD.into())
            .spawn(move || drive(d, &flag));
        let handle =
            spawned.map_err(|e| Error::Config(format!("starting the daemon's thread: {e}")))?;
        Ok(Beside::Thread {
            stop,
            handle: Some(handle),
        })
    }

    fn process(exe: &std::path::Path, r: DaemonRequest) -> Result<Beside> {
        let request = Request::Daemon(r);
        let mut child = worker::start(exe, |_| {})?;
        let started = (|| {
            let mut stdin = (child.stdin.take())
                .ok_or_else(|| Error::Config("the daemon's worker has no stdin".into()))?;
            worker::send_first(&mut stdin, &request)?;
            let stdout = (child.stdout.take())
                .ok_or_else(|| Error::Config("the daemon's worker has no stdout".into()))?;
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            (&mut stdout)
                .take(READY.len() as u64 + 2)
                .read_line(&mut line)
                .map_err(|e| Error::Config(format!("reading the daemon's worker: {e}")))?;
            if line.trim_end() != READY {
                return Err(Error::Config(format!(
                    "the daemon's worker ({} {}) ended before it attached to the region (its \
                     error is above)",
                    exe.display(),
                    worker::COMMAND
                )));
            }
            Ok((stdin, stdout))
        })();
        match started {
            Ok((stdin, stdout)) => Ok(Beside::Process(Box::new(Apart {
                child,
                stdin: Some(stdin),
                stdout,
                request,
                exe: exe.to_path_buf(),
            }))),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// Stop it, and say what it made.
    fn stop(mut self) -> Result<Made> {
        match &mut self {
            Beside::Thread { stop, handle } => {
                stop.store(true, Ordering::Relaxed);
                let handle = handle.take().ok_or_else(|| {
                    Error::Config("the daemon beside the faults was stopped twice".into())
                })?;
                let r = handle
                    .join()
                    .map_err(|_| Error::Config("the daemon's thread panicked".into()))?;
                Ok(r?)
            }
            Beside::Process(apart) => {
                let Apart {
                    child,
                    stdin,
                    stdout,
                    request,
                    exe,
                } = &mut **apart;
                drop(stdin.take());
                let mut text = String::new();
                let read = stdout
                    .take(worker::MAX_REQUEST_BYTES)
                    .read_to_string(&mut text);
                let status = child.wait();
                read.map_err(|e| Error::Config(format!("reading the daemon's worker: {e}")))?;
                worker::finished(exe, request, status, text, String::new())
            }
        }
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        match self {
            Beside::Thread { stop, handle } => {
                if let Some(h) = handle.take() {
                    stop.store(true, Ordering::Relaxed);
                    let _ = h.join();
                }
            }
            Beside::Process(apart) => {
                // Closing its stdin stops it; reaped here, stopped or not.
                drop(apart.stdin.take());
                let _ = apart.child.wait();
            }
        }
    }
}

/// Run the benchmark. `progress` counts runs done of the total; `cancel` raised keeps the
/// rounds done (see [`crate::stats::Until::rounds`]).
pub fn run(cfg: &Config, cancel: &AtomicBool, progress: Progress<'_>) -> Result<FaultBenchReport> {
    if cfg.rounds == 0 {
        return Err(Error::Config("rounds must be at least 1".into()));
    }
    let implies = format!("a region of {} with every page touched", cfg.bytes);
    crate::room::check(cfg.bytes, cfg.bytes.0, &implies, cfg.force)?;
    let one = faultlat::Config {
        bytes: cfg.bytes,
        policy: PagePolicy::System,
        then_collapse: false,
        force: cfg.force,
    };
    let total = cfg.until.planned(cfg.rounds) as u64 * FaultArm::ALL.len() as u64;
    // One run unmeasured first, so that the first arm follows a run that freed the same
    // memory, as every later arm does: which frames a run faults, and whether the host still
    // backs them, depends on what ran before it.
    faultlat::run(&one, &mut |_, _| {})?;
    let sys = SysFs::default();
    let mut last_end = settle::reported(&sys)?;
    let mut samples = Vec::new();
    let (rounds, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| cancel.load(Ordering::Relaxed),
        |s| {
            FaultArm::ALL[1..]
                .iter()
                .map(|&a| p999_vs_alone(s, a))
                .collect()
        },
        |round, samples| {
            let mut arms = FaultArm::ALL;
            if round % 2 == 1 {
                arms.reverse();
            }
            for arm in arms {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let waited = match cfg.settle {
                    true => settle::settle(&sys)?,
                    false => None,
                };
                let q = quiet::wait_quiet(
                    hugewise_results::stats::BUSY_SHARE,
                    Duration::from_millis(200),
                    5,
                );
                let waits = match arm {
                    FaultArm::Alone => None,
                    FaultArm::Daemon => Some(cfg.fault_waits),
                    FaultArm::Unpaced => Some(1.0),
                };
                let start = settle::reported(&sys)?;
                let (r, by) = faultlat::run_beside(&one, &mut |_, _| {}, |range| {
                    waits.map(|w| Beside::start(cfg, w, range)).transpose()
                })?;
                let end = settle::reported(&sys)?;
                let handback = settle::handback(last_end, start, end, waited);
                last_end = end.or(last_end);
                let counts = by.map(Beside::stop).transpose()?;
                samples.push(FaultBenchSample {
                    round,
                    arm,
                    faults: r.faults,
                    fault_latency: r.fault_latency,
                    touch_wall_ns: r.touch_wall_ns,
                    collapses: counts.map(|c| c.collapses),
                    paced: counts.map(|c| c.paced),
                    collapse_p50_ns: counts.and_then(|c| c.collapse_p50_ns),
                    quiet: q,
                    handback,
                });
                progress(samples.len() as u64, total);
            }
            Ok(())
        },
    )?;
    let summary = FaultArm::ALL
        .iter()
        .filter_map(|&arm| summarize_arm(&samples, arm))
        .collect();
    Ok(FaultBenchReport {
        bytes: cfg.bytes.0,
        policy: cfg.policy.clone(),
        budget_share: cfg.budget_share,
        fault_waits: cfg.fault_waits,
        warm: Some(cfg.warm),
        nice: Some(cfg.nice),
        interval_ms: cfg.interval.as_millis() as u64,
        daemon_in: Some(cfg.daemon_in.name().into()),
        rounds,
        stopped: Some(stopped),
        settle: Some(cfg.settle),
        samples,
        summary,
    })
}

/// Per round that ran both, `arm`'s p99.9 over the alone arm's.
fn p999_vs_alone(samples: &[FaultBenchSample], arm: FaultArm) -> Vec<f64> {
    vs_alone(samples, arm, |s| s.fault_latency.p999_ns)
}

fn vs_alone(
    samples: &[FaultBenchSample],
    arm: FaultArm,
    ns: impl Fn(&FaultBenchSample) -> u64,
) -> Vec<f64> {
    // The helper divides the first arm's time by the second's: `arm` over alone.
    ratios_in_rounds(
        samples,
        |s| s.round,
        |s| s.arm == arm,
        |s| s.arm == FaultArm::Alone,
        |s| Some(ns(s) as f64).filter(|&x| x > 0.0),
    )
}

fn summarize_arm(samples: &[FaultBenchSample], arm: FaultArm) -> Option<FaultBenchArm> {
    let mine: Vec<&FaultBenchSample> = samples.iter().filter(|s| s.arm == arm).collect();
    let of = |f: fn(&FaultBenchSample) -> u64| -> Vec<f64> {
        mine.iter().map(|s| f(s) as f64).collect()
    };
    let (p999_vs_alone, ci95, p50_vs_alone) = match arm {
        FaultArm::Alone => (None, None, None),
        _ => {
            let (m, ci) = ratio(&p999_vs_alone(samples, arm));
            let (p50, _) = ratio(&vs_alone(samples, arm, |s| s.fault_latency.p50_ns));
            (m, ci, p50)
        }
    };
    let collapses: Vec<f64> = mine
        .iter()
        .filter_map(|s| s.collapses.map(f64::from))
        .collect();
    let collapse_p50: Vec<f64> = mine
        .iter()
        .filter_map(|s| s.collapse_p50_ns.map(|n| n as f64))
        .collect();
    Some(FaultBenchArm {
        arm,
        p50_ns: summarize(&of(|s| s.fault_latency.p50_ns))?,
        p999_ns: summarize(&of(|s| s.fault_latency.p999_ns))?,
        p999_vs_alone,
        p999_vs_alone_ci95: ci95,
        p50_vs_alone,
        collapses: median(&collapses),
        collapse_p50_ns: median(&collapse_p50),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_mem::{Region, RegionOptions};

    fn cfg(bytes: u64, rounds: u32) -> Config {
        Config {
            bytes: Bytes(bytes),
            rounds,
            until: Until::default(),
            policy: "linux".into(),
            budget_share: 1.0,
            fault_waits: 0.0002,
            warm: true,
            nice: 0,
            interval: Duration::from_millis(5),
            force: false,
            daemon_in: DaemonIn::Thread,
            settle: false,
        }
    }

    #[test]
    fn a_small_run_has_every_arm_in_every_round_and_ratios_against_alone() {
        if ProcFs::default().kpageflags().is_err() {
            hugewise_sys::testing::skip("the daemon reads frames as root only");
            return;
        }
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if thp.contains("[always]") {
            hugewise_sys::testing::skip("THP `always` faults the region in 2 MiB pages");
            return;
        }
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let mut calls = 0;
        let r = run(&cfg(64 << 20, 2), &AtomicBool::new(false), &mut |_, _| {
            calls += 1
        })
        .expect("run");
        assert_eq!((r.samples.len(), calls, r.rounds), (6, 6, 2));
        // The second round runs the arms in reverse.
        let order: Vec<FaultArm> = r.samples.iter().map(|s| s.arm).collect();
        assert_eq!(order[..3], FaultArm::ALL);
        assert_eq!(
            order[3..],
            [FaultArm::Unpaced, FaultArm::Daemon, FaultArm::Alone]
        );
        for s in &r.samples {
            assert_eq!(s.faults, 64 << 20 >> 12, "{s:?}");
            assert_eq!(s.collapses.is_some(), s.arm != FaultArm::Alone, "{s:?}");
            // A run that collapsed says how long its collapses held the region.
            let made = s.collapses.unwrap_or(0) > 0;
            assert_eq!(s.collapse_p50_ns.is_some_and(|n| n > 0), made, "{s:?}");
        }
        assert_eq!(r.summary.len(), 3);
        assert_eq!(r.summary[0].p999_vs_alone, None);
        assert!(r.summary[1].p999_vs_alone.is_some());
        // Two rounds give no interval.
        assert_eq!(r.summary[2].p999_vs_alone_ci95, None);
    }

    #[test]
    fn ratios_are_an_arms_latency_over_the_alone_arms_of_the_same_round() {
        let s = |round, arm, p999| FaultBenchSample {
            round,
            arm,
            faults: 1,
            fault_latency: hugewise_results::faultlat::Latency {
                count: 1,
                mean_ns: 0.0,
                p50_ns: 1000,
                p90_ns: 0,
                p99_ns: 0,
                p999_ns: p999,
                max_ns: 0,
                total_ns: 0,
            },
            touch_wall_ns: 0,
            collapses: None,
            paced: None,
            collapse_p50_ns: None,
            quiet: None,
            handback: None,
        };
        let v = [
            s(0, FaultArm::Alone, 100),
            s(0, FaultArm::Daemon, 150),
            s(1, FaultArm::Daemon, 400),
            s(1, FaultArm::Alone, 50),
            s(2, FaultArm::Daemon, 90),
        ];
        assert_eq!(p999_vs_alone(&v, FaultArm::Daemon), vec![1.5, 8.0]);
        let a = summarize_arm(&v, FaultArm::Daemon).expect("arm");
        assert_eq!(a.p999_vs_alone, Some(4.75));
        assert_eq!(a.p50_vs_alone, Some(1.0));
    }

    /// The tests that start daemons, one at a time: each counts the others' threads.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// This process's threads named as the daemon's.
    fn daemons() -> usize {
        std::fs::read_dir("/proc/self/task")
            .expect("tasks")
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|c| c.trim() == DAEMON_THREAD)
            .count()
    }

    #[test]
    fn a_daemon_dropped_without_being_stopped_stops_its_thread() {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let region = vec![0u8; 8 << 20];
        let at = region.as_ptr() as usize;
        let beside = Beside::start(&cfg(8 << 20, 1), 0.0002, at..at + region.len()).expect("start");
        // The new thread names itself once it runs, so wait a bounded while for the name.
        let named = Instant::now();
        while daemons() == 0 && named.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(daemons(), 1);
        drop(beside);
        assert_eq!(daemons(), 0, "the daemon's thread outlived its owner");
    }

    /// Input that ends after `after`: the faulting process closing the pipe.
    struct EndsAfter(Instant, Duration);

    impl Read for EndsAfter {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(self.1.saturating_sub(self.0.elapsed()));
            Ok(0)
        }
    }

    #[test]
    fn a_daemons_worker_says_it_attached_then_collapses_the_range_until_its_input_ends() {
        if ProcFs::default().kpageflags().is_err() {
            hugewise_sys::testing::skip("the daemon reads frames as root only");
            return;
        }
        // Four whole chunks, every base page mapped and used: `mega` at a full budget
        // collapses all four, and nothing outside the range.
        let mut region: Region<u8> = Region::new(
            "beside",
            8 << 20,
            RegionOptions::new(PagePolicy::System).first_touch(),
        )
        .expect("region");
        for off in (0..8 << 20).step_by(4096) {
            region[off] = 1;
        }
        let r = DaemonRequest {
            pid: std::process::id() as i32,
            start: region.addr() as u64,
            end: (region.addr() + region.mapped_bytes()) as u64,
            policy: "mega".into(),
            budget_share: 1.0,
            fault_waits: 1.0,
            warm: true,
            nice: 0,
            interval: Duration::from_millis(5),
        };
        let mut input = std::io::BufReader::new(EndsAfter(Instant::now(), Duration::from_secs(2)));
        let mut output = Vec::new();
        serve(&r, &mut input, &mut output, &AtomicBool::new(false)).expect("serve");
        let text = String::from_utf8(output).expect("utf8");
        let (first, reply) = text.split_once('\n').expect("two parts");
        assert_eq!(first, READY);
        let made: Made = serde_json::from_str(reply).expect("reply");
        assert_eq!(made.collapses, 4, "{text}");
        assert!(made.collapse_p50_ns.is_some_and(|n| n > 0), "{text}");
        // A request that names no daemon fails before it says it attached.
        let mut output = Vec::new();
        let bad = DaemonRequest {
            policy: "nope".into(),
            ..r
        };
        let e = serve(&bad, &mut input, &mut output, &AtomicBool::new(false)).expect_err("bad");
        assert!(e.to_string().contains("nope"), "{e}");
        assert!(output.is_empty());
    }

    #[test]
    fn zero_rounds_and_an_unknown_policy_are_refused() {
        assert!(run(&cfg(1 << 20, 0), &AtomicBool::new(false), &mut |_, _| {}).is_err());
        if ProcFs::default().kpageflags().is_err() {
            return;
        }
        let bad = Config {
            policy: "nope".into(),
            ..cfg(4 << 20, 1)
        };
        let e = run(&bad, &AtomicBool::new(false), &mut |_, _| {}).expect_err("unknown policy");
        assert!(e.to_string().contains("nope"), "{e}");
    }
}
