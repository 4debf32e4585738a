//! One process under management: attached through a pidfd (so a recycled pid can never be
//! acted on, and what `/proc/PID` says is used only if the pidfd still says the process is
//! there after the read), every range checked against its mappings right before acting, promotions and
//! demotions recorded as [`Action`]s with the backing read back.

use std::ops::Range;
use std::time::Instant;

use hugewise_sys::errno::{EACCES, EINVAL, ENOENT, EPERM, ESRCH};
use hugewise_sys::mmap::Advice;
use hugewise_sys::proc::{KPageFlags, MapEntry, Pid, ProcFs};
use hugewise_sys::process::PidFd;
use hugewise_sys::shm::Writer;

use crate::action::{Action, ActionKind};
use crate::chunk::{self, Chunk};
use crate::{Error, Result, HUGE};

/// A running process hugewise may promote and demote memory of.
#[derive(Debug)]
pub struct Target {
    pid: i32,
    /// The user it runs as: the owner its sample ring and allocation log must have.
    uid: u32,
    pidfd: PidFd,
    proc: ProcFs,
    kpf: Option<KPageFlags>,
    t0: Instant,
    /// Addresses outside this range are not the engine's to manage.
    within: Option<Range<usize>>,
    /// Lift `MADV_NOHUGEPAGE` from a chunk the kernel refuses to collapse because of it (only
    /// for this process's own memory: `process_madvise` cannot give that advice).
    lift_no_huge: bool,
}

/// What one read of a target's `stat` says (see [`Target::activity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activity {
    /// Page faults since it started, minor and major.
    pub faults: u64,
    /// Its threads now.
    pub threads: u32,
    /// Its resident pages now.
    pub resident_pages: u64,
}

/// The `/proc/vmstat` counters of the kernel's changes to huge mappings that no page fault
/// of the process makes: a PMD or PUD mapping split, a huge page split (partly unmapped, or
/// reclaimed), collapsed (khugepaged or `MADV_COLLAPSE`), swapped out or split to migrate.
pub const THP_CHANGES: [&str; 7] = [
    "thp_split_pmd",
    "thp_split_pud",
    "thp_split_page",
    "thp_collapse_alloc",
    "thp_swpout",
    "thp_swpout_fallback",
    "thp_migration_split",
];

/// What a dropped target's [`Error::Gone`] says when its pidfd polled exited.
const EXITED: &str = "its pidfd polls exited";

fn gone_or(pid: i32, e: hugewise_sys::Error) -> Error {
    match e.errno() {
        Some(ESRCH | ENOENT) => Error::Gone {
            pid,
            seen: "its /proc entry is gone",
        },
        _ => Error::Sys(e),
    }
}

impl Target {
    /// Attach to `pid`: open a pidfd and its pagemap (which needs the same ptrace read access
    /// as `process_madvise`, so a refusal shows here, with the kernel's reason, before anything
    /// is done). `t0` is when the engine started: actions are timed from it.
    pub fn attach(proc: &ProcFs, pid: i32, t0: Instant) -> Result<Target> {
        // A kernel thread exists, but has no pagemap: without this it would read as gone.
        if let Some(s) = proc.stat(pid)?.filter(|s| s.kernel_thread()) {
            return Err(Error::KernelThread { pid, name: s.comm });
        }
        let pidfd = PidFd::open(pid).map_err(|e| gone_or(pid, e))?;
        if let Err(e) = proc.pagemap(Pid::Id(pid)) {
            return Err(match e.errno() {
                Some(errno @ (EPERM | EACCES)) => Error::Denied {
                    pid,
                    call: "open /proc/PID/pagemap",
                    reason: format!(
                        "{}: reading another process's page map needs ptrace read access to it \
                         (the same user, and kernel.yama.ptrace_scope allowing it), or root",
                        errno.name()
                    ),
                },
                Some(errno @ (ESRCH | ENOENT)) if !pidfd.exited() => Error::Denied {
                    pid,
                    call: "open /proc/PID/pagemap",
                    reason: format!(
                        "{}: its main thread has ended while its other threads run on, and the \
                         kernel reads a process's memory through its main thread",
                        errno.name()
                    ),
                },
                _ => gone_or(pid, e),
            });
        }
        let uid = proc.uid(pid).map_err(|e| gone_or(pid, e))?;
        // Read after the pidfd was opened: if the process is still there, the uid was its own.
        if pidfd.exited() {
            return Err(Error::Gone { pid, seen: EXITED });
        }
        Ok(Target {
            pid,
            uid,
            pidfd,
            proc: proc.clone(),
            kpf: proc.kpageflags().ok(),
            t0,
            within: None,
            lift_no_huge: false,
        })
    }

    /// The same target, managed only within `range`: the chunks a daemon weighs, and the
    /// huge pages its budget counts, are those inside it. For a benchmark that runs its
    /// workload in the daemon's own process beside other memory that is not the workload's.
    pub fn within(self, range: Range<usize>) -> Target {
        Target {
            within: Some(range),
            ..self
        }
    }

    /// The same target (this process, whose own arrays a plan promotes), lifting a
    /// `MADV_NOHUGEPAGE` hint from exactly the chunks it is asked to promote: a plan names
    /// chunks a `base` page policy put on 4 KiB pages, and the kernel refuses to collapse
    /// those (`EINVAL`) while the hint stands. Another process's hint cannot be lifted
    /// (`process_madvise` does not take `MADV_HUGEPAGE`) and is respected.
    pub fn lifting_no_huge(self) -> Target {
        Target {
            lift_no_huge: self.pid == std::process::id() as i32,
            ..self
        }
    }

    /// The same target, its actions timed from `t0` on.
    pub fn timed_from(self, t0: Instant) -> Target {
        Target { t0, ..self }
    }

    /// The target's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether the target has exited (a zombie not yet waited for included).
    pub fn exited(&self) -> bool {
        self.pidfd.exited()
    }

    /// The target's pidfd, to wait for its exit.
    pub fn pidfd(&self) -> &PidFd {
        &self.pidfd
    }

    /// The writer the target's shared files (sample ring, allocation log) must come from.
    pub fn writer(&self) -> Writer {
        Writer {
            pid: self.pid,
            uid: self.uid,
        }
    }

    /// What `read` read from `/proc/PID`, if the target was still there when it ended: once
    /// the target has exited, its pid may be another process's, whose memory is not ours to
    /// read or act on.
    fn still_there<T>(&self, read: Result<T>) -> Result<T> {
        let v = read?;
        if self.pidfd.exited() {
            return Err(Error::Gone {
                pid: self.pid,
                seen: EXITED,
            });
        }
        Ok(v)
    }

    /// What a failed read of the target's `/proc` files means: `Ok` when there is nothing to
    /// read now though it lives (`ESRCH` or `ENOENT` while its pidfd says it runs: its main
    /// thread has ended while others run on, or it is on its way out, and the kernel reads a
    /// process's memory through that thread), else the error, `Gone` only on the pidfd's word.
    fn unreadable(&self, e: hugewise_sys::Error) -> Result<()> {
        match e.errno() {
            Some(ESRCH | ENOENT) if self.pidfd.exited() => Err(Error::Gone {
                pid: self.pid,
                seen: EXITED,
            }),
            Some(ESRCH | ENOENT) => Ok(()),
            _ => Err(Error::Sys(e)),
        }
    }

    /// Page faults the target has taken since it started (minor and major), its threads
    /// and its resident pages now.
    pub fn activity(&self) -> Result<Activity> {
        let read = self
            .proc
            .process_activity(Pid::Id(self.pid))
            .map_err(|e| gone_or(self.pid, e));
        let a = self.still_there(read)?;
        Ok(Activity {
            faults: a.faults.minor + a.faults.major,
            threads: a.threads,
            resident_pages: a.resident_pages,
        })
    }

    /// Huge pages the kernel has split or collapsed since boot, in any process (the sum of
    /// [`THP_CHANGES`] in `/proc/vmstat`): while it stays the same, no huge page of the
    /// target's came or went but by a fault. `None` where it cannot be read.
    pub fn thp_changes(&self) -> Option<u64> {
        let v = self.proc.vmstat().ok()?;
        Some(
            THP_CHANGES
                .iter()
                .filter_map(|k| v.get(*k))
                .map(|&n| n.max(0) as u64)
                .sum(),
        )
    }

    /// The target's mappings now (none while they cannot be read, see `unreadable`).
    pub fn maps(&self) -> Result<Vec<MapEntry>> {
        let read = match self.proc.maps(Pid::Id(self.pid)) {
            Ok(maps) => Ok(maps),
            Err(e) => self.unreadable(e).map(|()| Vec::new()),
        };
        self.still_there(read)
    }

    /// The target's private anonymous mappings, trimmed to whole 2 MiB chunks (and to the
    /// range it is managed within, if any): the ranges a promotion can apply to.
    pub fn huge_capable(&self) -> Result<Vec<Range<usize>>> {
        // Empty maps do not mean gone: a process whose main thread has ended while others
        // run reads none, so does one releasing its memory on its way out, and so does a
        // read that straddles an exec (the file was opened on the address space the exec
        // replaced: a program started through a shell script or pyenv's shims execs once or
        // more just as the first look reads it). `maps` asked the pidfd, the only word on
        // whether it has exited, and an empty list offers nothing this look.
        let maps = self.maps()?;
        Ok(maps
            .iter()
            .filter(|m| m.is_private_anon() && m.read)
            .filter_map(|m| {
                let (lo, hi) = match &self.within {
                    Some(w) => (m.start.max(w.start), m.end.min(w.end)),
                    None => (m.start, m.end),
                };
                let start = lo.next_multiple_of(HUGE);
                let end = hi / HUGE * HUGE;
                (end > start).then_some(start..end)
            })
            .collect())
    }

    /// Refuse a range that is unaligned or not wholly inside one private anonymous mapping of
    /// the target, read from its maps right now.
    pub fn check(&self, range: &Range<usize>) -> Result<()> {
        let bad = |why: String| Error::BadRange {
            pid: self.pid,
            start: range.start,
            end: range.end,
            why,
        };
        if !range.start.is_multiple_of(HUGE)
            || !range.end.is_multiple_of(HUGE)
            || range.end <= range.start
        {
            return Err(bad("not a non-empty range of whole 2 MiB chunks".into()));
        }
        if let Some(w) = &self.within {
            if range.start < w.start || range.end > w.end {
                return Err(bad(format!(
                    "outside {:#x}..{:#x}, the range the engine manages",
                    w.start, w.end
                )));
            }
        }
        let maps = self.maps()?;
        let Some(m) = maps
            .iter()
            .find(|m| m.start <= range.start && range.start < m.end)
        else {
            return Err(bad("not inside any mapping of the process".into()));
        };
        if range.end > m.end {
            return Err(bad(format!(
                "runs past the end of its mapping {:#x}..{:#x}",
                m.start, m.end
            )));
        }
        if !m.is_private_anon() {
            return Err(bad(format!(
                "its mapping {:#x}..{:#x} ({}) is not private anonymous memory",
                m.start,
                m.end,
                m.name.as_deref().unwrap_or("anonymous, shared")
            )));
        }
        Ok(())
    }

    /// The chunks of a range now (none while they cannot be read, see `unreadable`).
    pub fn scan(&self, range: &Range<usize>) -> Result<Vec<Chunk>> {
        let read = match chunk::scan(
            &self.proc,
            Pid::Id(self.pid),
            range.start,
            range.end - range.start,
            self.kpf.as_ref(),
        ) {
            Err(Error::Sys(e)) => self.unreadable(e).map(|()| Vec::new()),
            other => other,
        };
        self.still_there(read)
    }

    /// Collapse `range` (whole 2 MiB chunks of one private anonymous mapping) into huge pages
    /// with `process_madvise(MADV_COLLAPSE)`. A kernel refusal (`EAGAIN`, `ENOMEM`, ...) and
    /// a target that exited are recorded in the action, not errors; a bad range or a denied
    /// call is.
    pub fn promote(&self, range: Range<usize>) -> Result<Action> {
        self.act(
            range.clone(),
            ActionKind::Promote,
            vec![range],
            Advice::Collapse,
        )
    }

    /// Split the huge pages of `range` back into 4 KiB pages: `MADV_COLD` over the last 4 KiB
    /// of each chunk, which makes the kernel split a PMD-mapped huge page to deactivate just
    /// that part. The data stays; one base page per chunk is marked cold.
    pub fn demote(&self, range: Range<usize>) -> Result<Action> {
        let tails = range
            .clone()
            .step_by(HUGE)
            .map(|c| c + HUGE - 4096..c + HUGE)
            .collect();
        self.act(range, ActionKind::Demote, tails, Advice::Cold)
    }

    /// Split huge pages that are mapped with 4 KiB entries and partly unmapped (an allocator
    /// gave part of one back): `MADV_COLD` over the whole of each chunk, which makes the
    /// kernel split such a page (it covers fewer entries than the page has), and the parts
    /// no longer mapped go back to the kernel at once instead of when memory runs short.
    pub fn release(&self, range: Range<usize>) -> Result<Action> {
        self.act(
            range.clone(),
            ActionKind::Release,
            vec![range],
            Advice::Cold,
        )
    }

    fn act(
        &self,
        range: Range<usize>,
        kind: ActionKind,
        ranges: Vec<Range<usize>>,
        advice: Advice,
    ) -> Result<Action> {
        let t_ms = self.t0.elapsed().as_secs_f64() * 1e3;
        let mut action = Action {
            t_ms,
            pid: self.pid,
            start: range.start,
            len_bytes: (range.end - range.start) as u64,
            kind,
            outcome: "ok".into(),
            latency_ns: 0,
            huge_bytes_after: None,
            tried_again: false,
        };
        match self.check(&range) {
            Err(Error::Gone { .. }) => {
                action.outcome = "gone".into();
                return Ok(action);
            }
            r => r?,
        }
        let t = Instant::now();
        let mut r = self.pidfd.madvise(&ranges, advice);
        if self.lift_no_huge
            && advice == Advice::Collapse
            && r.as_ref().is_err_and(|e| e.errno() == Some(EINVAL))
            && hugewise_sys::mmap::advise_own(range.clone(), Advice::HugePage).is_ok()
        {
            r = self.pidfd.madvise(&ranges, advice);
        }
        action.latency_ns = t.elapsed().as_nanos() as u64;
        if let Err(e) = r {
            match e.errno() {
                Some(ESRCH) => {
                    action.outcome = "gone".into();
                    return Ok(action);
                }
                Some(EPERM) => {
                    return Err(Error::Denied {
                        pid: self.pid,
                        call: "process_madvise",
                        reason: "EPERM: advising another process needs CAP_SYS_NICE and ptrace \
                                 read access to it"
                            .into(),
                    })
                }
                Some(errno) => action.outcome = errno.name(),
                None => return Err(Error::Sys(e)),
            }
        }
        // PAGEMAP_SCAN tells huge mappings apart without root; older kernels need kpageflags.
        match self.scan(&range) {
            Ok(chunks) if !chunks.is_empty() && chunks.iter().all(|c| c.huge.is_some()) => {
                action.huge_bytes_after = Some(chunk::huge_bytes(&chunks))
            }
            Ok(_) => {}
            Err(Error::Gone { .. }) => action.outcome = "gone".into(),
            Err(e) => return Err(e),
        }
        Ok(action)
    }
}

/// A program hugewise started to promote its memory.
#[derive(Debug)]
pub struct Launched {
    /// The running program (the caller waits for it).
    pub child: std::process::Child,
    /// The same process as a target.
    pub target: Target,
}

/// How a program is started, beyond its command.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Start it under the preload library with these settings, so that its large allocations
    /// are advised at their first fault within the budget (`hugewise promote` does by default).
    pub preload: Option<hugewise_rules::protocol::Preload>,
    /// Write its stdout to this file and drop its stderr (benchmarks), instead of passing both
    /// on.
    pub stdout_file: Option<std::path::PathBuf>,
}

/// Start `program` with `args` without address-space randomisation (so the addresses of a plan
/// made from a traced run of it match), as `opts` say, and attach to it.
pub fn launch(
    proc: &ProcFs,
    program: &str,
    args: &[String],
    opts: &LaunchOptions,
    t0: Instant,
) -> Result<Launched> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(p) = &opts.preload {
        p.apply(&mut cmd);
    }
    if let Some(f) = &opts.stdout_file {
        let file = std::fs::File::create(f).map_err(|e| Error::Launch {
            program: format!("{program} (its output file {})", f.display()),
            source: e,
        })?;
        cmd.stdout(file).stderr(std::process::Stdio::null());
    }
    hugewise_sys::lock::exec_without_aslr(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| Error::Launch {
        program: program.to_string(),
        source: e,
    })?;
    match Target::attach(proc, child.id() as i32, t0) {
        Ok(target) => Ok(Launched { child, target }),
        Err(e) => {
            // Never leave a program running that nobody will wait for.
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}
