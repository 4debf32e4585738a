//! Run a program with the preload library, read the backing of every allocation it took over
//! while the program runs (the pages are gone once it exits), and say what each got.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_results::exec::{ExecAllocation, ExecProcess, ExecReport};
use hugewise_rules::protocol::{self, LIBRARY};
use hugewise_rules::{Placement, Rules};
use hugewise_sys::alloclog::{
    AllocLog, LogEntry, Origin, FLAG_BAD_RULES, FLAG_FOREIGN_ALLOCATOR, FLAG_SITES_MISSING,
};
use hugewise_sys::errno::Errno;
use hugewise_sys::interpose::monotonic_ns;
use hugewise_sys::proc::{PageRun, Pid, ProcFs, ScanCategories, Vma};
use hugewise_sys::process::{PidFd, Signal};

use crate::elf;
use crate::{Error, Result};

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// The command, program first.
    pub argv: Vec<String>,
    /// The page rules.
    pub rules: Rules,
    /// Allocations below this stay with the program's allocator.
    pub min_size: u64,
    /// The preload library.
    pub preload: PathBuf,
    /// How often to read the allocations' backing.
    pub interval: Duration,
    /// Write the program's stdout to this file and drop its stderr (benchmarks), instead of
    /// passing both on.
    pub stdout_file: Option<PathBuf>,
    /// Start the program in this memory cgroup (its `cgroup.procs` file).
    pub cgroup_procs: Option<PathBuf>,
    /// Run the promotion daemon on the program while it runs (an `Engine::Daemon`).
    pub promote: Option<hugewise_promote::session::Engine>,
    /// A profile run: each call site's small allocations go to an arena of their own, and at
    /// every reading the share of each allocation's pages accessed since the last is read
    /// (smaps `Referenced`, then `clear_refs`).
    pub profile: bool,
    /// Most bytes of the hot arena (rules with policy `arena`).
    pub hot_arena: u64,
}

impl Config {
    /// A run of `argv` under `rules` with the defaults: allocations from 2 MiB taken over,
    /// backing read every 100 ms, output passed on, no daemon, no profile.
    pub fn new(argv: Vec<String>, rules: Rules, preload: PathBuf) -> Config {
        Config {
            argv,
            rules,
            min_size: protocol::DEFAULT_MIN_SIZE,
            preload,
            interval: Duration::from_millis(100),
            stdout_file: None,
            cgroup_procs: None,
            promote: None,
            profile: false,
            hot_arena: protocol::DEFAULT_HOT_ARENA,
        }
    }
}

/// The preload library: `explicit` when given, else `HUGEWISE_PRELOAD`, else beside the running
/// hugewise (`cargo build` puts it there, or in `deps/` when hugewise was built alone).
pub fn find_preload(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(Error::NoPreload(format!(
                "--preload {}: no such file",
                p.display()
            )));
        }
        return elf::check_shared_object(p)
            .map(|()| p.to_path_buf())
            .map_err(|why| {
                Error::NoPreload(format!(
                    "--preload {}: {why}: the preload library is an ELF shared object ({LIBRARY})",
                    p.display()
                ))
            });
    }
    let mut tried = Vec::new();
    if let Some(p) = std::env::var_os("HUGEWISE_PRELOAD") {
        tried.push(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        tried.push(dir.join(LIBRARY));
        tried.push(dir.join("deps").join(LIBRARY));
    }
    // The first that exists; beside hugewise, the newer of the two (a build of hugewise alone
    // refreshes only deps/, a build of the workspace both).
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let found = match tried.iter().position(|p| p.is_file()) {
        Some(0) if std::env::var_os("HUGEWISE_PRELOAD").is_some() => Some(&tried[0]),
        Some(_) => tried
            .iter()
            .filter(|p| p.is_file())
            .max_by_key(|p| modified(p)),
        None => None,
    };
    if let Some(found) = found {
        return Ok(found.canonicalize().unwrap_or_else(|_| found.clone()));
    }
    Err(Error::NoPreload(format!(
        "the preload library {LIBRARY} is not where hugewise looks ({}); build it with \
         `cargo build --release -p hugewise-preload`, or name it with --preload",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The preload settings under which a promotion session starts `program` within `limit` (see
/// [`hugewise_promote::session::preload_for`]), or why it cannot run under the library: the
/// loader ignores `LD_PRELOAD` for some programs, and the library (`explicit`, else found as
/// [`find_preload`] finds it) must exist.
pub fn session_preload(
    program: &str,
    explicit: Option<&Path>,
    limit: hugewise_promote::budget::Limit,
) -> std::result::Result<protocol::Preload, String> {
    if let Some(why) = elf::preload_refusal(program) {
        return Err(why);
    }
    let library = find_preload(explicit).map_err(|e| e.to_string())?;
    Ok(hugewise_promote::session::preload_for(library, limit))
}

/// What the run looks like now, for a live line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tick {
    /// Since the program started.
    pub elapsed: Duration,
    /// Processes that loaded the library.
    pub processes: usize,
    /// Allocations taken over and still alive.
    pub live: usize,
    /// Their bytes resident now.
    pub resident_bytes: u64,
    /// Their bytes in huge pages now.
    pub huge_bytes: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Peak {
    resident: u64,
    huge: u64,
    /// Bytes resident at the reading before (pagemap), to tell first touch from reuse.
    last_resident: u64,
    /// Sums over the readings of a profile run: bytes resident, and bytes of those accessed
    /// since the reading before, both less what was first touched since then.
    resident_sum: u64,
    accessed_sum: u64,
}

struct Watched {
    pid: i32,
    path: PathBuf,
    log: AllocLog,
    peaks: HashMap<(u64, u64), Peak>,
    peak_rss: Option<u64>,
    peak_anon_huge: Option<u64>,
}

/// Bytes present and bytes huge in `[start, end)` of `pid`, from `PAGEMAP_SCAN`.
fn backing(proc: &ProcFs, pid: i32, start: u64, end: u64, runs: &mut Vec<PageRun>) -> Option<Peak> {
    let map = proc.pagemap(Pid::Id(pid)).ok()?;
    runs.clear();
    map.scan(
        start as usize,
        end as usize,
        ScanCategories::PRESENT,
        ScanCategories::PRESENT | ScanCategories::HUGE,
        runs,
    )
    .ok()?;
    let mut p = Peak::default();
    for r in runs.iter() {
        let n = (r.end - r.start) as u64;
        p.resident += n;
        if r.categories.has(ScanCategories::HUGE) {
            p.huge += n;
        }
    }
    Some(p)
}

impl Watched {
    /// Watch `pid` through the log at `path`, if that process made it (a name in /dev/shm
    /// another user could have taken). The programs `exec` starts run as this user; one that
    /// has already exited is read too, as its log says what it did.
    fn open(pid: i32, path: PathBuf) -> Option<Watched> {
        let writer = hugewise_sys::shm::Writer {
            pid,
            uid: hugewise_sys::caps::euid(),
        };
        Some(Watched {
            pid,
            log: AllocLog::open_written_by(&path, writer).ok()?,
            path,
            peaks: HashMap::new(),
            peak_rss: None,
            peak_anon_huge: None,
        })
    }

    /// Read every live allocation's backing and the process's totals; the tick's share. In a
    /// profile run also how much of each was accessed since the last reading.
    fn observe(&mut self, proc: &ProcFs, runs: &mut Vec<PageRun>, profile: bool) -> Tick {
        let mut t = Tick::default();
        let vmas = if profile {
            proc.smaps(Pid::Id(self.pid)).ok()
        } else {
            None
        };
        for e in self.log.entries().iter().filter(|e| e.freed_ns.is_none()) {
            let Some(now) = backing(proc, self.pid, e.start, e.start + e.len, runs) else {
                continue;
            };
            let p = self.peaks.entry((e.start, e.born_ns)).or_default();
            p.resident = p.resident.max(now.resident);
            p.huge = p.huge.max(now.huge);
            // A page faulted in since the last reading is referenced by its own first touch,
            // which says nothing about whether the program comes back to it: a record written
            // once at setup would otherwise look as hot as one read all the time.
            let fresh = now.resident.saturating_sub(p.last_resident);
            p.last_resident = now.resident;
            if let Some(vmas) = &vmas {
                let (resident, accessed) = accessed_in(vmas, e.start, e.start + e.len);
                p.resident_sum += resident.saturating_sub(fresh);
                p.accessed_sum += accessed.saturating_sub(fresh);
            }
            t.live += 1;
            t.resident_bytes += now.resident;
            t.huge_bytes += now.huge;
        }
        if let Ok(r) = proc.smaps_rollup(Pid::Id(self.pid)) {
            self.peak_rss = Some(self.peak_rss.unwrap_or(0).max(r.rss_bytes));
            self.peak_anon_huge = Some(self.peak_anon_huge.unwrap_or(0).max(r.anon_huge_bytes));
        }
        if vmas.is_some() {
            // Accessed bits count from here to the next reading. A process that just ended
            // refuses: nothing is lost.
            let _ = proc.clear_refs(Pid::Id(self.pid));
        }
        t
    }

    fn report(&self, t0_mono: u64, rules: &Rules) -> ExecProcess {
        let h = self.log.head();
        let allocations = self
            .log
            .entries()
            .iter()
            .map(|e| allocation(e, t0_mono, rules, self.peaks.get(&(e.start, e.born_ns))))
            .collect();
        ExecProcess {
            pid: self.pid,
            allocator: if h.flags & FLAG_FOREIGN_ALLOCATOR != 0 {
                "other"
            } else {
                "glibc"
            }
            .to_string(),
            rules_refused: h.flags & FLAG_BAD_RULES != 0,
            sites_missing: h.flags & FLAG_SITES_MISSING != 0,
            unlogged: h.dropped,
            fallbacks: h.fallbacks,
            last_fallback_error: (h.last_errno != 0).then(|| Errno(h.last_errno).name()),
            peak_rss_bytes: self.peak_rss,
            peak_anon_huge_bytes: self.peak_anon_huge,
            allocations,
        }
    }
}

/// Bytes resident and bytes accessed (smaps `Referenced`) in `[start, end)`. A mapping that
/// reaches outside the range counts in proportion to its overlap: the preload library's own
/// mappings of one policy can lie side by side and be one mapping to the kernel.
fn accessed_in(vmas: &[Vma], start: u64, end: u64) -> (u64, u64) {
    let from = vmas.partition_point(|v| (v.end as u64) <= start);
    let mut out = (0u64, 0u64);
    for v in vmas[from..].iter().take_while(|v| (v.start as u64) < end) {
        let (a, b) = (v.start as u64, v.end as u64);
        let overlap = b.min(end) - a.max(start);
        let share = |x: u64| (x as u128 * overlap as u128 / (b - a).max(1) as u128) as u64;
        out.0 += share(v.totals.rss_bytes);
        out.1 += share(v.totals.referenced_bytes);
    }
    out
}

fn allocation(e: &LogEntry, t0_mono: u64, rules: &Rules, peak: Option<&Peak>) -> ExecAllocation {
    let rule = (usize::from(e.rule) < rules.0.len()).then_some(u32::from(e.rule));
    ExecAllocation {
        start: e.start,
        len_bytes: e.len,
        requested_bytes: e.requested,
        policy: Placement::from_code(e.policy)
            .map_or("unknown", Placement::name)
            .to_string(),
        rule,
        name: e.name().map(String::from),
        origin: match e.origin {
            Origin::Malloc => "malloc",
            Origin::Mmap => "mmap",
            Origin::Arena => "arena",
        }
        .to_string(),
        advice_error: (e.advice_errno != 0).then(|| Errno(i32::from(e.advice_errno)).name()),
        born_ns: e.born_ns.saturating_sub(t0_mono),
        lifetime_ns: e.freed_ns.map(|f| f.saturating_sub(e.born_ns)),
        peak_resident_bytes: peak.map(|p| p.resident),
        peak_huge_bytes: peak.map(|p| p.huge),
        site: e.site().map(String::from),
        accessed_share: peak
            .filter(|p| p.resident_sum > 0)
            .map(|p| p.accessed_sum as f64 / p.resident_sum as f64),
    }
}

/// Run the program to its end with the preload library, reading its allocations' backing every
/// `interval`, and calling `tick` after each reading. When `stop` is raised (the user pressed
/// Ctrl-C, which the program gets too) the program is given a second to end, then SIGTERM.
pub fn run(cfg: &Config, stop: &AtomicBool, tick: impl FnMut(&Tick)) -> Result<ExecReport> {
    run_with(cfg, stop, &mut |_| {}, tick)
}

/// [`run`], telling `started` the program's pid as soon as it runs (for a caller that talks
/// to it, or measures it, meanwhile).
pub fn run_with(
    cfg: &Config,
    stop: &AtomicBool,
    started: &mut dyn FnMut(u32),
    mut tick: impl FnMut(&Tick),
) -> Result<ExecReport> {
    let program = cfg.argv.first().cloned().unwrap_or_default();
    if elf::resolve(&program).is_some_and(|p| elf::is_static(&p)) {
        return Err(Error::Static { program });
    }
    protocol::sweep_orphans();
    let preload = protocol::Preload {
        min_size: cfg.min_size,
        hot_arena: cfg.hot_arena,
        profile: cfg.profile,
        ..protocol::Preload::new(cfg.preload.clone(), cfg.rules.clone())
    };
    let session = preload.session.clone();
    let mut cmd = Command::new(&program);
    cmd.args(&cfg.argv[1..]);
    preload.apply(&mut cmd);
    if let Some(f) = &cfg.stdout_file {
        let file = std::fs::File::create(f).map_err(|source| Error::Launch {
            program: format!("{program} (its output file {})", f.display()),
            source,
        })?;
        cmd.stdout(file).stderr(std::process::Stdio::null());
    }
    if let Some(procs) = &cfg.cgroup_procs {
        hugewise_sys::process::join_cgroup_at_exec(&mut cmd, procs)?;
    }
    hugewise_sys::process::tie_to_parent(&mut cmd);
    let t0 = Instant::now();
    let t0_mono = monotonic_ns();
    let mut child = cmd.spawn().map_err(|source| Error::Launch {
        program: program.clone(),
        source,
    })?;
    started(child.id());
    let child_pid = child.id() as i32;
    let exited = AtomicBool::new(false);
    std::thread::scope(|s| {
        let daemon = cfg.promote.as_ref().map(|engine| {
            let exited = &exited;
            s.spawn(move || {
                let session = hugewise_promote::session::Config {
                    targets: hugewise_promote::session::Targets::Pids(vec![child_pid]),
                    engine: engine.clone(),
                    duration: None,
                    launch: Default::default(),
                };
                hugewise_promote::session::run(&session, exited, &mut |_| {}, &mut |_| {})
            })
        });
        let report = watch(cfg, stop, &mut child, &session, t0, t0_mono, &mut tick);
        exited.store(true, Ordering::Relaxed);
        let (promote, promote_error) = match daemon.map(|d| d.join()) {
            None => (None, None),
            Some(Ok(Ok(r))) => (Some(r), None),
            Some(Ok(Err(e))) => (None, Some(e.to_string())),
            Some(Err(_)) => (None, Some("the promotion daemon panicked".to_string())),
        };
        report.map(|r| ExecReport {
            promote,
            promote_error,
            ..r
        })
    })
}

/// Read the program's allocations until it exits; the report without the daemon's session.
fn watch(
    cfg: &Config,
    stop: &AtomicBool,
    child: &mut std::process::Child,
    session: &str,
    t0: Instant,
    t0_mono: u64,
    tick: &mut impl FnMut(&Tick),
) -> Result<ExecReport> {
    let program = cfg.argv.first().cloned().unwrap_or_default();
    let proc = ProcFs::default();
    let mut watched: Vec<Watched> = Vec::new();
    let mut runs = Vec::new();
    let mut stopped_at: Option<Instant> = None;
    let mut next_reading = t0;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|source| Error::Launch {
            program: program.clone(),
            source,
        })? {
            break status;
        }
        if stop.load(Ordering::Relaxed) {
            let at = *stopped_at.get_or_insert_with(Instant::now);
            if at.elapsed() > Duration::from_secs(1) {
                if let Ok(fd) = PidFd::open(child.id() as i32) {
                    let _ = fd.signal(Signal::Term);
                }
                stopped_at = Some(Instant::now());
            }
        }
        if Instant::now() >= next_reading {
            for (pid, path) in protocol::logs(session) {
                if watched.iter().any(|w| w.pid == pid) {
                    continue;
                }
                watched.extend(Watched::open(pid, path));
            }
            let mut now = Tick {
                elapsed: t0.elapsed(),
                processes: watched.len(),
                ..Tick::default()
            };
            for w in &mut watched {
                let t = w.observe(&proc, &mut runs, cfg.profile);
                now.live += t.live;
                now.resident_bytes += t.resident_bytes;
                now.huge_bytes += t.huge_bytes;
            }
            tick(&now);
            next_reading = Instant::now() + cfg.interval;
        }
        std::thread::sleep(Duration::from_millis(5).min(cfg.interval));
    };
    let wall_ns = t0.elapsed().as_nanos() as u64;
    // Processes that logged after the last reading (short-lived children) still count.
    for (pid, path) in protocol::logs(session) {
        if !watched.iter().any(|w| w.pid == pid) {
            watched.extend(Watched::open(pid, path));
        }
    }
    let started = child.id() as i32;
    watched.sort_by_key(|w| (w.pid != started, w.pid));
    let processes = watched
        .iter()
        .map(|w| w.report(t0_mono, &cfg.rules))
        .collect();
    for w in &watched {
        let _ = std::fs::remove_file(&w.path);
    }
    Ok(ExecReport {
        command: cfg.argv.clone(),
        rules: cfg.rules.to_string(),
        min_size_bytes: cfg.min_size,
        preload: cfg.preload.display().to_string(),
        interval_ns: cfg.interval.as_nanos() as u64,
        exit_code: status.code(),
        signal: status.signal(),
        wall_ns,
        processes,
        promote: None,
        promote_error: None,
        profile: cfg.profile,
        hot_arena_bytes: cfg
            .rules
            .0
            .iter()
            .any(|r| r.placement == Placement::Arena)
            .then_some(cfg.hot_arena),
    })
}
