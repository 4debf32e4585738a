//! The online promotion daemon: every interval it reads each target's chunks from the kernel
//! (mapped pages, huge or not) and the access samples the target publishes, asks a policy which
//! chunks deserve a huge page, and promotes and demotes within the budget. The budget is checked
//! against what the kernel reports as huge, not against the daemon's own bookkeeping: huge
//! pages the kernel made by itself count too, and are split when they push the total over.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_sys::alloclog::{self, AllocLog};
use hugewise_sys::errno::ENOENT;

use crate::action::{Action, ActionKind};
use crate::budget::{self, Limit, Share};
use crate::channel::Subscriber;
use crate::compact::{Controller as Compactor, Decision as CompactDecision, Lever, Waiting};
use crate::known::{may_have_changed, Known, Stamp, Sweep};
pub use crate::known::{may_wait_longer, turn_after, QUIET_STEPS, TURN_RUN};
use crate::pacing::{Pace, Pacer, Reading};
use crate::policy::{ChunkInfo, Policy};
use crate::refusals::Refusals;
use crate::room;
use crate::settle::Settle;
use crate::target::Target;
use crate::thinning::{Look, Thinning};
use crate::{Error, Result, BASE_PER_HUGE, HUGE};
pub use hugewise_results::promote::Interval;

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between two looks at the targets.
    pub interval: Duration,
    /// How much may be huge.
    pub limit: Limit,
    /// How targets share it.
    pub share: Share,
    /// Per-pid factor on the policy's scores (1 when absent).
    pub bias: HashMap<i32, f64>,
    /// Promotions a look makes whatever they take (the PCC paper promotes up to 128 regions
    /// at a time); past them it goes on only while it has lasted less than an interval. A hot
    /// set larger than this is then made huge as fast as collapses go, in one look, not one
    /// batch an interval later (with 163 hot chunks and 128 a look, the last 35 waited a whole
    /// interval on 4 KiB pages). A look still ends within about an interval, so the daemon's
    /// pace stays bounded.
    pub max_promotions: usize,
    /// A candidate takes the place of a huge chunk only when its score is this many times the
    /// huge chunk's: hysteresis, so two chunks of equal heat do not swap back and forth.
    pub swap_factor: f64,
    /// A sampled candidate takes a huge chunk's place only with at least this many samples
    /// of its own at this look. Thinned, one sample stands for up to 64: a score made of one
    /// or two is noise, and following it costs a split and a collapse.
    pub swap_min_samples: u32,
    /// Most samples counted per target and interval (the newest): what bounds the daemon's
    /// CPU time when a program publishes fast.
    pub max_samples: usize,
    /// Most 2 MiB chunks whose page tables are read per target and interval (0: all). A
    /// larger target is swept over several intervals, as khugepaged does; chunks new to the
    /// daemon are read at once, and the daemon's own actions update what it knows. Reading
    /// page tables is what the daemon's CPU time grows with.
    pub scan_chunks: usize,
    /// Samples to count before a policy that ranks by samples acts (0: act on the first
    /// look). Until then the daemon counts without promoting, and looks again as soon as this
    /// many are waiting instead of a whole interval later: a first decision on the few samples
    /// of a first scan picks chunks by noise, and each correction costs a collapse.
    pub first_samples: u64,
    /// Samples a chunk needs to count as well sampled, so that the daemon acts before
    /// `first_samples` where the heat is plain (0: never before); see [`crate::settle`].
    pub settled_samples: u64,
    /// The most thinning the daemon asks of a sampling target while its looks find nothing to
    /// do (1: always every sample); see [`crate::thinning`].
    pub max_thinning: u32,
    /// A chunk whose last two reads agreed (mapped pages and huge or not) is read again only
    /// every this many looks, staggered by address in runs of [`TURN_RUN`] chunks, unless the
    /// daemon acts on it (0 or 1: every look). A huge hot chunk, or a cold one, changes
    /// seldom, and once the budget is full reading page tables is most of what the daemon
    /// costs; a change is seen within this many looks, or within 4 times as many for a chunk
    /// of 4 KiB pages mapped whole in a target whose samples the policy ranks by (see
    /// [`QUIET_STEPS`]). Until it is seen, a chunk the kernel collapsed by itself counts as
    /// small toward the budget, and one the program freed as mapped. A chunk not wholly
    /// mapped is read at every look that follows page faults of its target's: it may be
    /// filling.
    pub settled_every: u64,
    /// How many times as long a settled chunk waits for its next read when it was read after
    /// the last sign that one may have changed (1: no longer): since then its target's
    /// resident pages grew by at least its page faults and the kernel split or collapsed no
    /// huge page anywhere (see [`crate::known::may_have_changed`]). Such a chunk can have
    /// changed only by what those counters miss, and once a program's memory is in place most
    /// looks find no sign; at one that does, chunks read before it get their plain turns.
    pub quiet_stretch: u64,
    /// What one page walk that a huge page removes costs the program, in nanoseconds: between
    /// a walk served from the caches and one that misses them. With the sampling period a
    /// target publishes, it turns a chunk's sampled walks into time saved per second.
    pub walk_ns: f64,
    /// How long a promoted chunk is expected to keep its heat, in seconds: its collapse (a core
    /// busy for its latency, the target's TLB flushed) must be paid back within it, or the
    /// chunk is left on 4 KiB pages. Applies to targets that say their sampling period.
    pub payback_s: f64,
    /// Entries of the last-level TLB for 4 KiB pages: a huge page removes only the walks of
    /// pages that do not stay in it. Accesses to a set of pages that fits it walk seldom
    /// whatever its pages' size, and a collapse there is paid for nothing. 1536 is the
    /// second-level TLB of Intel cores from Skylake to Ice Lake; Golden Cove and AMD Zen 2–3
    /// have 2048, Zen 4 3072: the smallest of them, so that a set the daemon takes to fit
    /// does fit where it runs. 0: every sampled walk is taken to be one.
    pub tlb_entries: u32,
    /// When and how much the daemon compacts memory for collapses refused for want of free
    /// 2 MiB blocks (see [`crate::compact`]).
    pub compact: crate::compact::Settings,
    /// Most of a target's page faults its collapses may hold up, as a share of the faults it
    /// has taken since the daemon first read it (see [`crate::pacing`]): 0.0002 keeps them a
    /// fifth of what its 99.9th percentile fault looks past; 0 makes no collapse while it
    /// faults, 1 never waits.
    pub fault_waits: f64,
    /// Fault in and free a 2 MiB page right before each collapse, so that the collapse copies
    /// into memory the machine already backs and holds the target's memory map for the copy
    /// alone (see [`crate::warm`]).
    pub warm: bool,
    /// The nice value the daemon's thread gives way with while it runs, 0 to 19: 0 (the
    /// default) competes as an ordinary thread; at 19, as khugepaged runs, a CPU the programs
    /// beside it keep busy is theirs and the daemon's looks and collapses take what they
    /// leave, so that where every core is busy promotion slows down, not those programs (nor
    /// its own target, whose huge pages then come later). The thread's value is only raised
    /// to it, never lowered, and put back when the daemon returns (see
    /// [`hugewise_sys::priority::give_way`]).
    pub nice: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            interval: Duration::from_secs(1),
            limit: Limit::Share(0.04),
            share: Share::HighestFirst,
            bias: HashMap::new(),
            max_promotions: 128,
            swap_factor: 2.0,
            swap_min_samples: 8,
            max_samples: 1 << 18,
            scan_chunks: 2048,
            first_samples: 1 << 16,
            settled_samples: 64,
            max_thinning: 64,
            settled_every: 8,
            quiet_stretch: 8,
            walk_ns: 30.0,
            payback_s: 10.0,
            tlb_entries: 1536,
            compact: Default::default(),
            fault_waits: 0.0002,
            warm: true,
            nice: 0,
        }
    }
}

struct Managed {
    target: Target,
    samples: Option<Subscriber>,
    /// Where to look for the target's samples while it publishes none yet (a program opens
    /// its channel when its work starts, which may be after the daemon attached).
    channel: Option<std::path::PathBuf>,
    /// What the daemon last read of each chunk, and when each is due to be read again.
    known: Known,
    /// The target's resident pages and the kernel's huge-page splits and collapses at the
    /// last look (see [`crate::known::may_have_changed`]).
    last_stamp: Option<Stamp>,
    /// What the samples counted at the last look stand for against all those published since
    /// the look before (1 when none were passed over): the daemon keeps only the newest.
    sample_scale: f64,
    /// The allocation log the target keeps when it runs under `hugewise exec` (or linked the
    /// preload library): allocations its rules put on 4 KiB pages are left alone.
    log: Option<AllocLog>,
    /// A shared file of the target's (ring or log) refused and said so once.
    refusals_said: std::collections::BTreeSet<std::path::PathBuf>,
    /// Whether the target sampled when the policy last said what it acts on.
    signal_said: Option<bool>,
    /// Chunks read huge before and now neither huge nor wholly mapped: the program freed part
    /// of a huge page (an allocator returning pages), the kernel split its mapping, and the
    /// page stays whole, freed part and all, until something splits it. Released this
    /// interval.
    broken: Vec<usize>,
    /// The faults its collapses may hold up (see [`crate::pacing`]).
    pacer: Pacer,
    /// Whether the daemon said that its collapses wait while it faults.
    pacing_said: bool,
    /// The target's fault count at the last look that read it.
    last_faults: Option<u64>,
}

impl Managed {
    /// A file of the target's that was there and refused (another user's, another
    /// process's): said in `notes` the first time.
    fn refused(
        &mut self,
        path: &std::path::Path,
        e: &dyn std::fmt::Display,
        notes: &mut Vec<String>,
    ) {
        if self.refusals_said.insert(path.to_path_buf()) {
            notes.push(format!("pid {}: not read: {e}", self.target.pid()));
        }
    }

    /// The target's fault count now, timed from `t0`; `None` when it cannot be read (the
    /// target gone: the next sweep says so). A daemon that runs in its target's process
    /// (a benchmark's workload, a test) leaves out its own thread: its faults never wait
    /// behind its own collapses.
    fn fault_reading(&self, t0: Instant) -> Option<(Reading, u64)> {
        let now = self.target.activity().ok()?;
        let (mut faults, mut threads) = (now.faults, now.threads);
        if self.target.pid() == std::process::id() as i32 {
            let own = hugewise_sys::rusage::thread_faults();
            faults = faults.saturating_sub(own.minor + own.major);
            threads = threads.saturating_sub(1).max(1);
        }
        let reading = Reading {
            at_ns: t0.elapsed().as_nanos() as u64,
            faults,
            threads,
        };
        Some((reading, now.resident_pages))
    }

    /// Open the target's sample ring if it publishes one now.
    fn open_samples(&mut self, notes: &mut Vec<String>) {
        if self.samples.is_some() {
            return;
        }
        let Some(path) = self.channel.clone() else {
            return;
        };
        match Subscriber::open_at(&path, self.target.writer()) {
            Ok(s) => self.samples = Some(s),
            Err(Error::Sys(e)) if e.errno() == Some(ENOENT) => {}
            Err(e) => self.refused(&path, &e, notes),
        }
    }

    /// The live allocations the target's log says its rules put on 4 KiB pages.
    fn base_allocations(&mut self, notes: &mut Vec<String>) -> Vec<std::ops::Range<usize>> {
        // Looked for at every sweep until found: a program makes it at its first allocation
        // taken over, and the directory holds a few files.
        if self.log.is_none() {
            // Every log under the target's pid, until one is its own: another user may have put
            // one there first.
            for p in alloclog::logs_of(self.target.pid()) {
                match AllocLog::open_written_by(&p, self.target.writer()) {
                    Ok(log) => {
                        self.log = Some(log);
                        notes.push(format!(
                            "pid {}: it runs under the preload library, whose allocation log \
                             is read: its large allocations count whole toward the budget's \
                             share, the part the budget had room for was advised huge at first \
                             fault (what is huge is read from its page tables), and its `base` \
                             allocations are left alone",
                            self.target.pid()
                        ));
                        break;
                    }
                    Err(e) => self.refused(&p, &e, notes),
                }
            }
        }
        let Some(log) = &self.log else {
            return Vec::new();
        };
        log.entries()
            .iter()
            .filter(|e| e.freed_ns.is_none() && e.policy == alloclog::POLICY_BASE)
            .map(|e| e.start as usize..(e.start + e.len) as usize)
            .collect()
    }

    /// Bytes of the live allocations in the target's log that are not mapped yet (per the
    /// chunks as last read): a program started under the preload library was given huge pages
    /// at first fault on a share of its allocations' whole size, and the daemon's budget must
    /// stand on a basis at least as large, or it would split those pages while the program
    /// is still touching the rest. None without a log.
    fn unfaulted(&self, chunks: &[ChunkInfo]) -> Option<u64> {
        let log = self.log.as_ref()?;
        let mut total = 0u64;
        for e in log.entries().iter().filter(|e| e.freed_ns.is_none()) {
            let (a, b) = (e.start as usize, (e.start + e.len) as usize);
            let from = chunks.partition_point(|c| c.addr < a);
            let mapped: u64 = chunks[from..]
                .iter()
                .take_while(|c| c.addr + HUGE <= b)
                .map(|c| u64::from(c.mapped_pages) * 4096)
                .sum();
            total += e.len.saturating_sub(mapped);
        }
        Some(total)
    }

    fn new(
        target: Target,
        samples: Option<Subscriber>,
        channel: Option<std::path::PathBuf>,
        fault_waits: f64,
    ) -> Self {
        Managed {
            pacer: Pacer::new(fault_waits),
            pacing_said: false,
            last_faults: None,
            target,
            samples,
            channel,
            known: Known::default(),
            last_stamp: None,
            sample_scale: 1.0,
            broken: Vec::new(),
            log: None,
            refusals_said: Default::default(),
            signal_said: None,
        }
    }

    /// Read the chunks due this interval (see [`crate::known`]) and return every chunk of the
    /// target's huge-capable ranges as last read, sorted by address.
    fn sweep(
        &mut self,
        how: Sweep,
        read: &mut u64,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(usize, u16, bool)>> {
        let ranges = self.target.huge_capable()?;
        let kept_small = self.base_allocations(notes);
        let mut addrs: Vec<usize> = ranges
            .iter()
            .flat_map(|r| (r.start..r.end).step_by(HUGE))
            .filter(|&a| !kept_small.iter().any(|b| a < b.end && b.start < a + HUGE))
            .collect();
        if !addrs.is_sorted() {
            addrs.sort_unstable();
        }
        let target = &self.target;
        self.known.sweep(
            &addrs,
            how,
            &mut |r| target.scan(&r),
            read,
            &mut self.broken,
        )?;
        Ok(self.known.chunks().collect())
    }
}

/// The most a page walk may be said to cost ([`Config::walk_ns`]), in nanoseconds: a walk that
/// misses every cache takes a few hundred, so a figure past this is a unit mistaken.
pub const MAX_WALK_NS: f64 = 10_000.0;

/// Whether `ns` can be a page walk's cost: a number above 0 and at most [`MAX_WALK_NS`].
pub fn walk_ns_valid(ns: f64) -> bool {
    ns > 0.0 && ns <= MAX_WALK_NS
}

/// Why the kernel refuses to collapse a chunk with `EINVAL`, and what the daemon does then.
pub const NO_HUGE_HINT: &str = "the kernel refuses to collapse memory marked MADV_NOHUGEPAGE \
     (EINVAL): the program asked for 4 KiB pages there (its own advice, a `base` rule of \
     hugewise exec, or hugewise run --pages ...=base), and hugewise leaves those chunks alone";

/// The daemon.
pub struct Daemon {
    cfg: Config,
    policy: Box<dyn Policy>,
    targets: Vec<Managed>,
    t0: Instant,
    last: Option<Instant>,
    /// The thread the last look ran on and its CPU time when that look ended.
    cpu_mark: Option<(std::thread::ThreadId, u64)>,
    ever_sampled: std::collections::BTreeSet<i32>,
    /// Samples counted so far, over every target, and when the first were.
    counted: u64,
    first_counted: Option<Instant>,
    /// Samples per chunk until the first decision, and whether the heat was plain before
    /// `first_samples` were counted.
    settle: Settle,
    settled: bool,
    /// Chunks the kernel refused to collapse with `EINVAL` (their mapping says no huge pages,
    /// `MADV_NOHUGEPAGE`): asking again would only be refused again.
    refused: std::collections::HashSet<(i32, usize)>,
    /// How many samples the targets are asked for.
    thinning: Thinning,
    /// CPU time of the last successful collapses, newest last: what a collapse costs here. Not
    /// their latency: on a busy machine most of that is the daemon waiting for a core, which
    /// costs the program nothing, and counting it declined the hot chunks of an 8 GiB hot spot
    /// that ran beside other work.
    collapses: std::collections::VecDeque<u64>,
    /// Targets told that chunks were not worth their collapse.
    told_not_worth: std::collections::BTreeSet<i32>,
    /// Bytes the targets' allocation logs hold that are not mapped yet, at the last scan
    /// (see `Managed::unfaulted`): part of the budget's basis.
    unfaulted: u64,
    /// This interval's collapses refused for want of memory (`ENOMEM`, `EAGAIN`) or held back
    /// after such refusals (see [`crate::refusals`]), and those slowed by direct compaction.
    refused_now: Vec<ChunkInfo>,
    /// Whether the last action was a collapse refused for want of memory (`ENOMEM`), for the
    /// look's [`Refusals`].
    no_memory_last: bool,
    /// A collapse of this look was still refused with `EAGAIN` after its tries: the look's
    /// later collapses get one try each, so that busy memory costs a look one chunk's pauses.
    busy_now: bool,
    /// Chunks still refused with `EAGAIN` after their tries, with the look that found them
    /// so, for [`BUSY_LOOKS`] looks or until one of their collapses succeeds: pages held for
    /// long (pinned for I/O, say) rather than for a moment. Each gets one try a look, leaves
    /// the look's other collapses their tries, and takes no huge chunk's place.
    busy: HashMap<(i32, usize), u64>,
    /// Looks made (`step` calls).
    looks: u64,
    slow_now: u32,
    /// Weighs and makes compactions.
    compactor: Compactor,
    /// The nice value its thread ran at in `run` (`None` before, or where it could not be
    /// read or set).
    nice: Option<i32>,
}

/// What a collapse is taken to cost before the daemon has timed one: the middle of the
/// 0.4–5 ms `MADV_COLLAPSE` takes per 2 MiB in a virtual machine.
const COLLAPSE_NS_GUESS: u64 = 2_000_000;

/// Samples between two looks while the daemon waits for its first decision and may settle
/// early: at one sample in 64 reads of 96 ns, a look every 25 ms.
const SETTLE_STEP: u64 = 4096;

/// Between two looks, how often a daemon still counting toward its first decision checks
/// whether enough samples wait.
const WARMING_NAP: Duration = Duration::from_millis(10);

/// Between two looks, how often the daemon wakes to see whether it was cancelled: a Ctrl-C or
/// a session's `--duration` ends it within this (and the session watcher's own nap). An exit
/// of a target wakes it at once. Each wakeup costs a few microseconds of a core in this VM,
/// and naps of 20 ms (50 a second, and as many again in the session's watcher) were a fifth
/// of a settled daemon's time on PageRank at kron:26.
const CANCEL_NAP: Duration = Duration::from_millis(100);

/// Collapses whose latency the estimate of a collapse's cost keeps.
const COLLAPSES_KEPT: usize = 32;

/// Looks for which a chunk still refused with `EAGAIN` after its tries is taken to be held
/// for long: at a look a second, 8 s, after which a swap may split a huge chunk for it again
/// (one split in vain at most every 8 looks, if its pages stay held).
const BUSY_LOOKS: u64 = 8;

/// Pause before a collapse refused with `EAGAIN` is tried again within the look (a sleep, no
/// CPU: at most [`crate::replay::AGAIN_RETRIES`] of them a chunk).
const AGAIN_PAUSE: Duration = Duration::from_millis(10);

/// A collapse whose CPU time is this many times the fastest of the last ones compacted first
/// (a collapse that found a free block costs about the same each time, its copy of 2 MiB; one
/// that had to compact first, in the daemon's thread, several times as much)...
const SLOW_FACTOR: u64 = 4;
/// ... and at least this much more, so that the noise of short collapses does not count.
const SLOW_MARGIN_NS: u64 = 2_000_000;
/// Collapses timed before any is judged slow by the others.
const SLOW_AFTER: usize = 4;
/// A collapse of this much CPU time compacted first whatever the others took: copying 2 MiB
/// takes 0.4–5 ms in a virtual machine, and a run whose every collapse compacts has no fast
/// one to compare with (on memory 99 % broken up here, the median collapse took 47 ms).
const SLOW_NS: u64 = 20_000_000;

impl Daemon {
    /// A daemon with `policy`, timed from `t0`.
    pub fn new(mut policy: Box<dyn Policy>, cfg: Config, t0: Instant) -> Daemon {
        policy.looks_every(cfg.interval.as_secs_f64());
        // Thinned samples keep their scale only for a policy that scores walks (a walk read
        // stands for as many as it was thinned by); coverage and utilization would read lower
        // at every step of thinning.
        let thin_max = if policy.weighs_walks() {
            cfg.max_thinning
        } else {
            1
        };
        Daemon {
            policy,
            targets: Vec::new(),
            t0,
            last: None,
            cpu_mark: None,
            ever_sampled: Default::default(),
            counted: 0,
            first_counted: None,
            settle: Settle::new(cfg.settled_samples),
            settled: false,
            refused: Default::default(),
            collapses: Default::default(),
            told_not_worth: Default::default(),
            unfaulted: 0,
            thinning: Thinning::new(thin_max),
            refused_now: Vec::new(),
            no_memory_last: false,
            busy_now: false,
            busy: Default::default(),
            looks: 0,
            slow_now: 0,
            compactor: Compactor::new(cfg.compact, Lever::default()),
            nice: None,
            cfg,
        }
    }

    /// The nice value the daemon's thread ran at in [`Daemon::run`]: what it gave way with,
    /// or higher where the thread already had less priority (`None` before it ran, or where
    /// the value could not be read or set).
    pub fn nice(&self) -> Option<i32> {
        self.nice
    }

    /// Manage `target`; its access samples are read when it publishes them.
    pub fn add(&mut self, target: Target) {
        let channel = crate::channel::path(target.pid());
        // A ring refused now is tried again, and said why, at the first interval.
        let samples = Subscriber::open(target.writer());
        let waits = self.cfg.fault_waits;
        self.targets
            .push(Managed::new(target, samples, Some(channel), waits));
        self.targets.sort_by_key(|m| m.target.pid());
    }

    /// Manage `target`, reading samples from `samples` only.
    pub fn add_with(&mut self, target: Target, samples: Option<Subscriber>) {
        let waits = self.cfg.fault_waits;
        self.targets
            .push(Managed::new(target, samples, None, waits));
        self.targets.sort_by_key(|m| m.target.pid());
    }

    /// Pids managed now.
    pub fn pids(&self) -> Vec<i32> {
        self.targets.iter().map(|m| m.target.pid()).collect()
    }

    /// Which pids publish samples now or did at any interval so far.
    pub fn sampled(&self) -> Vec<i32> {
        let mut v: std::collections::BTreeSet<i32> = self.ever_sampled.clone();
        v.extend(
            self.targets
                .iter()
                .filter(|m| m.samples.is_some())
                .map(|m| m.target.pid()),
        );
        v.into_iter().collect()
    }

    /// The policy's name.
    pub fn policy(&self) -> &'static str {
        self.policy.name()
    }

    /// Read every target's chunks and samples. Targets that exited are dropped and named.
    fn scan(&mut self, iv: &mut Interval) -> Result<Vec<ChunkInfo>> {
        let mut chunks = Vec::new();
        self.unfaulted = 0;
        let mut keep = Vec::with_capacity(self.targets.len());
        let mut addrs = Vec::new();
        for mut m in std::mem::take(&mut self.targets) {
            let pid = m.target.pid();
            m.open_samples(&mut iv.notes);
            let sampled = m.samples.is_some();
            if m.signal_said != Some(sampled) {
                m.signal_said = Some(sampled);
                iv.notes
                    .push(format!("pid {pid}: {}", self.policy.signal(sampled)));
            }
            let first = chunks.len();
            let mut faulted = false;
            let (mut resident, mut faults) = (None, None);
            if let Some((r, pages)) = m.fault_reading(self.t0) {
                m.pacer.observe(r);
                faults = m.last_faults.map(|f| r.faults.saturating_sub(f));
                faulted = faults.is_some_and(|n| n > 0);
                m.last_faults = Some(r.faults);
                resident = Some(pages);
            }
            let stamp =
                resident
                    .zip(m.target.thp_changes())
                    .map(|(resident_pages, thp_changes)| Stamp {
                        resident_pages,
                        thp_changes,
                    });
            let changed = may_have_changed(m.last_stamp, stamp, faults);
            m.last_stamp = stamp;
            // Chunks of 4 KiB pages mapped whole may wait longer for a target whose heat the
            // policy reads from its samples; a policy on mapped pages must see them change.
            let quiet_steps = if sampled && self.policy.ranks_by_samples() {
                QUIET_STEPS
            } else {
                0
            };
            let how = Sweep {
                limit: self.cfg.scan_chunks,
                every: self.cfg.settled_every,
                quiet_steps,
                faulted,
                changed,
                stretch: self.cfg.quiet_stretch,
            };
            match m.sweep(how, iv.chunks_read.get_or_insert(0), &mut iv.notes) {
                Ok(read) => chunks.extend(read.into_iter().map(|(addr, mapped, huge)| ChunkInfo {
                    pid,
                    addr,
                    mapped_pages: mapped,
                    huge,
                    samples: 0,
                    sampled_pages: 0,
                    walks: 0,
                    sampled: m.samples.is_some(),
                })),
                Err(Error::Gone { seen, .. }) => {
                    iv.gone.push(pid);
                    iv.notes.push(format!("pid {pid}: gone ({seen})"));
                    continue;
                }
                Err(e) => return Err(e),
            }
            if let Some(sub) = m.samples.as_mut() {
                self.ever_sampled.insert(pid);
                addrs.clear();
                let read = sub.drain(&mut addrs, self.cfg.max_samples);
                m.sample_scale = if addrs.is_empty() {
                    1.0
                } else {
                    (addrs.len() as u64 + read.passed) as f64 / addrs.len() as f64
                };
                iv.samples_lost += read.passed;
                iv.samples += addrs.len() as u64;
                count_samples(&mut chunks[first..], &addrs, read.weight);
            }
            self.unfaulted += m.unfaulted(&chunks[first..]).unwrap_or(0);
            keep.push(m);
        }
        self.targets = keep;
        Ok(chunks)
    }

    fn target(&self, pid: i32) -> Option<&Target> {
        self.targets
            .iter()
            .find(|m| m.target.pid() == pid)
            .map(|m| &m.target)
    }

    fn act(
        &mut self,
        c: &ChunkInfo,
        kind: ActionKind,
        iv: &mut Interval,
        huge: &mut u64,
        on_action: &mut dyn FnMut(&Action),
    ) -> Result<bool> {
        self.no_memory_last = false;
        let Some(t) = self.target(c.pid) else {
            return Ok(false);
        };
        let range = c.addr..c.addr + HUGE;
        // Once a collapse of this look was refused for want of a free 2 MiB block, a warm page
        // would come on 4 KiB pages (512 faults, then freed) and help nothing: the look's
        // later collapses go without one.
        if kind == ActionKind::Promote && self.cfg.warm && self.refused_now.is_empty() {
            crate::warm::warm_page();
        }
        let mut attempt = 0;
        let (a, cpu_ns) = loop {
            let cpu0 = hugewise_sys::rusage::thread_cpu_ns();
            let done = match kind {
                ActionKind::Promote => t.promote(range.clone()),
                ActionKind::Demote => t.demote(range.clone()),
                ActionKind::Release => t.release(range.clone()),
            };
            let cpu_ns = hugewise_sys::rusage::thread_cpu_ns().saturating_sub(cpu0);
            let a = match done {
                Ok(a) => a,
                // The target unmapped or remapped the chunk since the scan: a race with the
                // program, not a fault of the daemon's.
                Err(Error::BadRange { why, .. }) => Action {
                    t_ms: self.t0.elapsed().as_secs_f64() * 1e3,
                    pid: c.pid,
                    start: range.start,
                    len_bytes: HUGE as u64,
                    kind,
                    outcome: format!("skipped: {why}"),
                    latency_ns: 0,
                    huge_bytes_after: None,
                    tried_again: false,
                },
                Err(e) => return Err(e),
            };
            // `EAGAIN` is a page the kernel could not take this time (locked or referenced
            // while being migrated or compacted, say), not a want of memory: tried again
            // shortly, as a plan's step is, each attempt logged. Without it a swap would have
            // split its old chunk for nothing until the next look.
            let busy = kind == ActionKind::Promote && a.outcome == "EAGAIN";
            let known = self.busy.contains_key(&(c.pid, c.addr));
            let again = busy && !known && !self.busy_now && attempt < crate::replay::AGAIN_RETRIES;
            let a = Action {
                tried_again: again,
                ..a
            };
            on_action(&a);
            if !again {
                if busy && !known {
                    self.busy_now = true;
                    if attempt == crate::replay::AGAIN_RETRIES {
                        self.busy.insert((c.pid, c.addr), self.looks);
                    }
                } else if !busy && kind == ActionKind::Promote {
                    self.busy.remove(&(c.pid, c.addr));
                }
                break (a, cpu_ns);
            }
            attempt += 1;
            std::thread::sleep(AGAIN_PAUSE);
        };
        let slow = self.slow(cpu_ns);
        if a.outcome == "gone" {
            return Ok(false);
        }
        if kind == ActionKind::Promote && a.outcome == "EINVAL" {
            if !self.refused.iter().any(|&(pid, _)| pid == c.pid) {
                iv.notes.push(format!("pid {}: {}", c.pid, NO_HUGE_HINT));
            }
            self.refused.insert((c.pid, c.addr));
        }
        let ok = a.succeeded();
        if ok {
            // What the action read back is what the kernel holds now, until the next sweep.
            if let Some(m) = self.targets.iter_mut().find(|m| m.target.pid() == c.pid) {
                // Acted on: read again at the next look, to see that it stayed as it was left.
                m.known.acted(c.addr, kind == ActionKind::Promote);
            }
        }
        if kind == ActionKind::Promote && (a.outcome == "ENOMEM" || a.outcome == "EAGAIN") {
            self.refused_now.push(*c);
        }
        self.no_memory_last = kind == ActionKind::Promote && a.outcome == "ENOMEM";
        match (kind, ok) {
            (ActionKind::Promote, true) => {
                if self.collapses.len() == COLLAPSES_KEPT {
                    self.collapses.pop_front();
                }
                if slow {
                    self.slow_now += 1;
                }
                self.collapses.push_back(cpu_ns);
                iv.promoted += 1;
                *huge += HUGE as u64;
            }
            (ActionKind::Demote, true) => {
                iv.demoted += 1;
                *huge = huge.saturating_sub(HUGE as u64);
            }
            _ => iv.failed += 1,
        }
        Ok(ok)
    }

    /// Split the huge pages the programs broke (see `Managed::broken`), so that the part they
    /// freed goes back to the kernel: a huge page only partly mapped is bloat until split.
    fn release_broken(
        &mut self,
        iv: &mut Interval,
        on_action: &mut dyn FnMut(&Action),
    ) -> Result<()> {
        for i in 0..self.targets.len() {
            for addr in std::mem::take(&mut self.targets[i].broken) {
                let a = match self.targets[i].target.release(addr..addr + HUGE) {
                    Ok(a) => a,
                    // Unmapped since the scan: nothing left to release.
                    Err(Error::BadRange { .. }) => continue,
                    Err(e) => return Err(e),
                };
                on_action(&a);
                if a.succeeded() {
                    iv.released += 1;
                } else if a.outcome != "gone" {
                    iv.failed += 1;
                }
            }
        }
        Ok(())
    }

    /// One interval's work: scan, decide, demote, promote. `on_action` hears every action.
    pub fn step(&mut self, on_action: &mut dyn FnMut(&Action)) -> Result<Interval> {
        self.busy_now = false;
        self.looks += 1;
        let looks = self.looks;
        self.busy.retain(|_, found| looks - *found < BUSY_LOOKS);
        // From where the last look on this thread ended: the wait between looks (its wakeups)
        // is the daemon's cost too.
        let me = std::thread::current().id();
        let cpu0 = match self.cpu_mark {
            Some((thread, at)) if thread == me => at,
            _ => hugewise_sys::rusage::thread_cpu_ns(),
        };
        let now = Instant::now();
        let dt = self
            .last
            .map_or(self.cfg.interval, |l| now.duration_since(l))
            .as_secs_f64();
        self.last = Some(now);
        let mut iv = Interval {
            t_ms: self.t0.elapsed().as_secs_f64() * 1e3,
            ..Interval::default()
        };
        let chunks = self.scan(&mut iv)?;
        iv.scan_ns = now.elapsed().as_nanos() as u64;
        iv.targets = self.targets.len();
        iv.mapped_bytes = chunks
            .iter()
            .map(|c| u64::from(c.mapped_pages))
            .sum::<u64>()
            * 4096;
        iv.budget_bytes = self.cfg.limit.bytes(iv.mapped_bytes + self.unfaulted);
        let mut huge = chunks.iter().filter(|c| c.huge).count() as u64 * HUGE as u64;
        iv.huge_bytes_before = huge;
        self.release_broken(&mut iv, on_action)?;

        self.policy
            .budget_chunks((iv.budget_bytes / HUGE as u64) as usize);
        self.counted += iv.samples;
        if self.counted > 0 && self.first_counted.is_none() {
            self.first_counted = Some(now);
        }
        if self.warming_up() {
            self.settle.count(&chunks);
            let room = iv.budget_bytes.saturating_sub(huge) / HUGE as u64;
            self.settled = self.settle.plain(room as usize);
            if self.settled {
                iv.notes.push(format!(
                    "the hot set was plain after {} samples (its chunks counted {} times or \
                     more each fill the budget or hold {:.0} % of them): acting before {}",
                    self.counted,
                    self.cfg.settled_samples,
                    crate::settle::PLAIN_SHARE * 100.0,
                    self.cfg.first_samples
                ));
            }
        }
        if !self.warming_up() {
            self.settle.done();
        }
        let mut d = self.policy.decide(&chunks, dt);
        if self.warming_up() {
            // The policy has seen the samples (its scores build up), but too few to act on;
            // the budget is still held.
            d.promote.clear();
            d.demote.clear();
        }
        let mut demoted = vec![false; chunks.len()];
        for &i in &d.demote {
            if chunks[i].huge
                && self.act(
                    &chunks[i],
                    ActionKind::Demote,
                    &mut iv,
                    &mut huge,
                    on_action,
                )?
            {
                demoted[i] = true;
            }
        }
        // Huge chunks by how much the policy values them, least first; those it did not
        // mention at all (made by the kernel, or no longer scored) go before any it values.
        let scores: HashMap<usize, f64> = d.keep.iter().copied().collect();
        let mut kept: Vec<(usize, f64)> = chunks
            .iter()
            .enumerate()
            .filter(|(i, c)| c.huge && !demoted[*i])
            .map(|(i, _)| (i, scores.get(&i).copied().unwrap_or(f64::NEG_INFINITY)))
            .collect();
        kept.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
        let mut kept = std::collections::VecDeque::from(kept);
        while huge > iv.budget_bytes {
            let Some((i, _)) = kept.pop_front() else {
                break;
            };
            self.act(
                &chunks[i],
                ActionKind::Demote,
                &mut iv,
                &mut huge,
                on_action,
            )?;
        }

        let wanted: Vec<(usize, f64)> = d
            .promote
            .iter()
            .copied()
            .filter(|&(i, _)| !self.refused.contains(&(chunks[i].pid, chunks[i].addr)))
            .collect();
        let order = budget::order(&wanted, &chunks, self.cfg.share, &self.cfg.bias);
        // Accesses one counted sample stands for: the target's sampling period, times what the
        // samples kept stand for among all it published (the daemon counts the newest only).
        let periods: HashMap<i32, f64> = self
            .targets
            .iter()
            .filter_map(|m| {
                let period = m.samples.as_ref()?.period()?;
                Some((m.target.pid(), period as f64 * m.sample_scale))
            })
            .collect();
        let collapse_ns = self.collapse_ns();
        // Each candidate's share of walks a huge page removes, worked out for its target at
        // the first candidate the cost rule weighs.
        let mut misses: HashMap<i32, HashMap<usize, f64>> = HashMap::new();
        let mut not_worth: HashMap<i32, u32> = HashMap::new();
        let mut score: HashMap<usize, f64> = d.promote.iter().copied().collect();
        // A candidate takes a huge chunk's place on the heat that lasted.
        score.extend(d.lasting.iter().copied());
        // Demotions made (and read back split) to take a huge chunk's place.
        let mut swaps = 0u32;
        let promoted_before = iv.promoted;
        // Targets whose collapses wait for a later look: they are faulting (see
        // [`crate::pacing`]).
        let mut faulting: Vec<i32> = Vec::new();
        let mut paced = 0u32;
        let mut refusals = Refusals::default();
        for i in order {
            if iv.promoted - promoted_before >= self.cfg.max_promotions as u32
                && now.elapsed() >= self.cfg.interval
            {
                break;
            }
            let pid = chunks[i].pid;
            if faulting.contains(&pid) {
                paced += 1;
                continue;
            }
            if let Some(&period) = periods.get(&pid) {
                let entries = self.cfg.tlb_entries;
                let miss = misses
                    .entry(pid)
                    .or_insert_with(|| tlb_miss_shares(&chunks, pid, entries))
                    .get(&i)
                    .copied()
                    .unwrap_or(1.0);
                if saving_ns(&chunks[i], period, dt, &self.cfg) * miss < collapse_ns as f64 {
                    *not_worth.entry(pid).or_default() += 1;
                    continue;
                }
            }
            if refusals.holding() {
                // The kernel has no block for it either (see [`crate::refusals`]): held back,
                // waiting for room as the refused ones are, while the budget has room for it.
                let waiting = u64::from(refusals.waiting()) + 1;
                if huge + waiting * HUGE as u64 > iv.budget_bytes {
                    break;
                }
                refusals.hold_one();
                self.refused_now.push(chunks[i]);
                continue;
            }
            // Full: take the place of the least valued huge chunk if this one is worth
            // clearly more; otherwise the look is done.
            let full = huge + HUGE as u64 > iv.budget_bytes;
            if full && self.busy.contains_key(&(pid, chunks[i].addr)) {
                // Its pages were still held after its tries at a recent look: a huge chunk
                // split for it would most likely be split for nothing. Tried again once the
                // budget has room, or once [`BUSY_LOOKS`] looks have passed.
                continue;
            }
            let mut swap_with = None;
            if full {
                let s = score.get(&i).copied().unwrap_or(0.0);
                let evidence = !chunks[i].sampled || chunks[i].samples >= self.cfg.swap_min_samples;
                match kept.front() {
                    Some(&(j, sj)) if s > sj * self.cfg.swap_factor && s > 0.0 && evidence => {
                        swap_with = Some(j);
                    }
                    _ => break,
                }
            }
            // Asked only of a collapse about to be made: a pass charges the target's faults.
            if !self.may_collapse(pid, collapse_ns, &mut iv) {
                faulting.push(pid);
                paced += 1;
                continue;
            }
            if let Some(j) = swap_with {
                kept.pop_front();
                if self.act(
                    &chunks[j],
                    ActionKind::Demote,
                    &mut iv,
                    &mut huge,
                    on_action,
                )? {
                    swaps += 1;
                }
                if huge + HUGE as u64 > iv.budget_bytes {
                    break;
                }
            }
            let made = self.act(
                &chunks[i],
                ActionKind::Promote,
                &mut iv,
                &mut huge,
                on_action,
            )?;
            if made || self.no_memory_last {
                refusals.record(self.no_memory_last);
            }
        }
        iv.huge_bytes_after = huge;
        iv.held_back = (refusals.held_back() > 0).then_some(refusals.held_back());
        iv.swaps = Some(swaps);
        iv.paced = (paced > 0).then_some(paced);
        if !not_worth.is_empty() {
            iv.not_worth = Some(not_worth.values().sum());
        }
        for (pid, n) in not_worth {
            if self.told_not_worth.insert(pid) {
                iv.notes.push(format!(
                    "pid {pid}: {n} chunk(s) would save less than their collapse costs \
                     ({:.1} ms, at {} ns a walk over {} s), so they stay on 4 KiB pages",
                    collapse_ns as f64 / 1e6,
                    self.cfg.walk_ns,
                    self.cfg.payback_s
                ));
            }
        }
        let kept: Vec<(usize, f64)> = kept.into_iter().collect();
        self.weigh_compaction(&mut iv, (&periods, dt), (&chunks, &kept), on_action)?;
        let look = Look::of(self.warming_up(), iv.promoted, iv.demoted, iv.failed, swaps);
        let factor = self.thinning.after(look);
        let mut asked = false;
        for sub in self.targets.iter().filter_map(|m| m.samples.as_ref()) {
            asked |= sub.ask_thinning(factor);
        }
        iv.sample_thinning = asked.then_some(factor);
        let cpu1 = hugewise_sys::rusage::thread_cpu_ns();
        iv.cpu_ns = cpu1.saturating_sub(cpu0);
        self.cpu_mark = Some((me, cpu1));
        Ok(iv)
    }

    /// Whether the daemon may collapse a chunk of `pid` now, one of `collapse_ns`, by the
    /// faults of `pid`'s it would hold up (see [`crate::pacing`]). A target whose fault count
    /// cannot be read is not held back: the action finds out whether it is gone.
    fn may_collapse(&mut self, pid: i32, collapse_ns: u64, iv: &mut Interval) -> bool {
        let t0 = self.t0;
        let share = self.cfg.fault_waits;
        let Some(m) = self.targets.iter_mut().find(|m| m.target.pid() == pid) else {
            return true;
        };
        // A rate read over less than a collapse's length tells one fault from a burst poorly:
        // the first collapse of a look waits out the rest of that window (2 ms or so).
        let wait = m.pacer.wait_ns(t0.elapsed().as_nanos() as u64, collapse_ns);
        if wait > 0 {
            std::thread::sleep(Duration::from_nanos(wait));
        }
        let Some((r, _)) = m.fault_reading(t0) else {
            return true;
        };
        match m.pacer.before_collapse(r, collapse_ns) {
            Pace::Go { .. } => true,
            Pace::Wait { faults_per_s } => {
                if !m.pacing_said {
                    m.pacing_said = true;
                    iv.notes.push(format!(
                        "pid {pid}: faulting ({faults_per_s:.0} a second): its collapses wait \
                         while they would hold up more than {}% of its faults (a fault that \
                         comes during a collapse waits for it, {:.1} ms)",
                        share * 100.0,
                        collapse_ns as f64 / 1e6
                    ));
                }
                false
            }
        }
    }

    /// Whether a collapse that took `cpu_ns` of the daemon's CPU compacted first, by the CPU
    /// time of the last ones. CPU time, not latency: on a busy machine most of a collapse's
    /// latency can be the daemon waiting for a core.
    fn slow(&self, cpu_ns: u64) -> bool {
        if cpu_ns > SLOW_NS {
            return true;
        }
        if self.collapses.len() < SLOW_AFTER {
            return false;
        }
        let fastest = self.collapses.iter().copied().min().unwrap_or(0);
        cpu_ns > fastest * SLOW_FACTOR && cpu_ns > fastest + SLOW_MARGIN_NS
    }

    /// Weigh compacting for this interval's refused and slowed collapses, and compact when it
    /// pays (see [`crate::compact`]).
    ///
    /// When the last compaction made no block (free memory broken up by pages it cannot
    /// move), the coldest huge chunks of targets of lower priority than the refused ones' are
    /// split first, so that compaction has their pages to move (see [`crate::room`]); `kept`
    /// are the huge chunks left, least valued first.
    fn weigh_compaction(
        &mut self,
        iv: &mut Interval,
        (periods, dt): (&HashMap<i32, f64>, f64),
        (chunks, kept): (&[ChunkInfo], &[(usize, f64)]),
        on_action: &mut dyn FnMut(&Action),
    ) -> Result<()> {
        let refused = std::mem::take(&mut self.refused_now);
        let slow = std::mem::take(&mut self.slow_now);
        // What the refused chunks would save, when every one's target says its sampling
        // period; unknown otherwise.
        let saving_ns = refused
            .iter()
            .map(|c| periods.get(&c.pid).map(|&p| saving_ns(c, p, dt, &self.cfg)))
            .sum::<Option<f64>>()
            .filter(|_| !refused.is_empty());
        let mut waiting = Waiting {
            refused: refused.len() as u32,
            slow,
            saving_ns,
            unspent_bytes: iv.budget_bytes.saturating_sub(iv.huge_bytes_after),
            split_for_room: 0,
        };
        let elapsed = self.t0.elapsed();
        let mut decision = match self.compactor.decide(&waiting, elapsed) {
            Ok(d) => d,
            Err(e) => {
                iv.compaction_declined = Some(format!("free memory unreadable: {e}"));
                return Ok(());
            }
        };
        let barren = matches!(&decision, CompactDecision::Decline(why)
            if why.starts_with(crate::compact::BARREN));
        if barren {
            let split = self.split_for_room(&refused, chunks, kept, iv, on_action)?;
            if split > 0 {
                iv.room_splits = Some(split);
                waiting.split_for_room = split;
                decision = match self.compactor.decide(&waiting, elapsed) {
                    Ok(d) => d,
                    Err(e) => {
                        iv.compaction_declined = Some(format!("free memory unreadable: {e}"));
                        return Ok(());
                    }
                };
            }
        }
        match decision {
            CompactDecision::Idle => {}
            CompactDecision::Decline(why) => iv.compaction_declined = Some(why),
            CompactDecision::Compact { aim_bytes, why } => {
                let t_ms = elapsed.as_secs_f64() * 1e3;
                iv.compaction = Some(self.compactor.compact(aim_bytes, why, t_ms)?);
            }
        }
        Ok(())
    }

    /// Split the coldest huge chunks of targets below the `refused` chunks' priority, one a
    /// refused collapse and no more than a compaction aims for (see [`crate::room`]); how
    /// many read back split.
    fn split_for_room(
        &mut self,
        refused: &[ChunkInfo],
        chunks: &[ChunkInfo],
        kept: &[(usize, f64)],
        iv: &mut Interval,
        on_action: &mut dyn FnMut(&Action),
    ) -> Result<u32> {
        let huge: Vec<room::Huge> = kept
            .iter()
            .map(|&(index, score)| room::Huge {
                index,
                pid: chunks[index].pid,
                score,
            })
            .collect();
        let pids: Vec<i32> = refused.iter().map(|c| c.pid).collect();
        let bias = &self.cfg.bias;
        let priority = |pid: i32| bias.get(&pid).copied().unwrap_or(1.0);
        let mut huge_bytes = iv.huge_bytes_after;
        let mut split = 0;
        let most = (self.compactor.settings().max_bytes / HUGE as u64).max(1) as usize;
        for i in room::victims(&pids, &huge, priority, most) {
            if self.act(
                &chunks[i],
                ActionKind::Demote,
                iv,
                &mut huge_bytes,
                on_action,
            )? {
                split += 1;
            }
        }
        iv.huge_bytes_after = huge_bytes;
        Ok(split)
    }

    /// What a collapse costs here: the median CPU time of the last ones this daemon made, or a
    /// guess before the first.
    fn collapse_ns(&self) -> u64 {
        let mut v: Vec<u64> = self.collapses.iter().copied().collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(COLLAPSE_NS_GUESS)
    }

    /// Run intervals until `cancel` is set or no target is left. `on_interval` hears each
    /// interval with its actions.
    pub fn run(
        &mut self,
        cancel: &AtomicBool,
        on_interval: &mut dyn FnMut(&Interval, &[Action]),
    ) -> Result<()> {
        // Held until the daemon returns: the calling thread then gets its own value back, so
        // that what it starts next (a bench's next program) does not start at the daemon's.
        // A refusal leaves the thread as it was: its priority is a courtesy, not the work.
        let (giving, mut refused) = match hugewise_sys::priority::give_way(self.cfg.nice) {
            Ok(g) => (Some(g), None),
            Err(e) => (
                None,
                Some(format!(
                    "the daemon's thread runs at its own priority: nice {} refused ({e})",
                    self.cfg.nice
                )),
            ),
        };
        self.nice = giving.as_ref().map(|g| g.nice());
        while !cancel.load(Ordering::Relaxed) && !self.targets.is_empty() {
            let start = Instant::now();
            let mut actions = Vec::new();
            let mut iv = self.step(&mut |a| actions.push(a.clone()))?;
            // Said once, at the first interval.
            iv.notes.extend(refused.take());
            on_interval(&iv, &actions);
            let early = self.warming_up();
            // While waiting, looks come every `SETTLE_STEP` samples to see whether the heat is
            // already plain.
            let missing = match self.cfg.settled_samples {
                0 => self.cfg.first_samples.saturating_sub(self.counted),
                _ => (self.cfg.first_samples.saturating_sub(self.counted)).min(SETTLE_STEP),
            };
            while !cancel.load(Ordering::Relaxed) && start.elapsed() < self.cfg.interval {
                if early && self.samples_waiting() >= missing {
                    break;
                }
                // A program `hugewise promote` started is waited for by the session once the
                // daemon is done: noticing its end only at the next look would add up to an
                // interval to its run. So the daemon sleeps on its targets' pidfds, which wake
                // it when one exits.
                let live: Vec<&hugewise_sys::process::PidFd> = self
                    .targets
                    .iter()
                    .filter(|m| !m.target.exited())
                    .map(|m| m.target.pidfd())
                    .collect();
                if live.is_empty() {
                    break;
                }
                // Saturating: on a busy machine the interval can run out between the check
                // above and this line, and a Duration below zero panics.
                let left = self.cfg.interval.saturating_sub(start.elapsed());
                let nap = if early { WARMING_NAP } else { CANCEL_NAP };
                hugewise_sys::process::wait_exit(&live, left.min(nap));
            }
        }
        Ok(())
    }

    /// Whether the policy ranks by samples and too few have been counted to act on: fewer
    /// than `first_samples`, and the first came less than an interval ago (a program that
    /// names its hot ranges once, or publishes slowly, is acted on an interval later, not
    /// never). A daemon whose targets publish none does not wait: the policy has nothing to go
    /// on either way and says so.
    fn warming_up(&self) -> bool {
        self.policy.ranks_by_samples()
            && !self.settled
            && self.counted < self.cfg.first_samples
            && self
                .first_counted
                .is_none_or(|t| t.elapsed() < self.cfg.interval)
            && self.targets.iter().any(|m| m.samples.is_some())
    }

    /// The most samples any target has published since the daemon last read its ring.
    fn samples_waiting(&self) -> u64 {
        self.targets
            .iter()
            .filter_map(|m| m.samples.as_ref().map(Subscriber::waiting))
            .max()
            .unwrap_or(0)
    }
}

/// The time a huge page for `c` would save its program over the payback time, in
/// nanoseconds: its walks this look (already weighed by the thinning) times the accesses one
/// counted sample stands for (`period`), per second of the look, at `walk_ns` a walk.
fn saving_ns(c: &ChunkInfo, period: f64, dt_s: f64, cfg: &Config) -> f64 {
    let walks_per_s = f64::from(c.walks) * period / dt_s.max(1e-3);
    walks_per_s * cfg.walk_ns * cfg.payback_s
}

/// For each 4 KiB chunk of `pid` with samples (by index into `chunks`), the share of its
/// accesses that miss a TLB of `entries` entries shared by the target's pages, huge or not:
/// the walks a huge page for it would remove, of those its samples count.
///
/// The TLB is taken to keep pages as a least-recently-used cache does, worked out by Che's
/// approximation: a page read at rate r misses with probability exp(-r T), where the
/// characteristic time T makes the pages expected in the TLB add up to its entries. A huge
/// chunk is one entry read at the rate of all its samples; a 4 KiB chunk holds as many pages
/// as its samples say it reads evenly (its distinct sampled pages, corrected for those a
/// sample has not yet landed on), each read at its share of the chunk's samples. When every
/// page read fits the TLB, nothing misses. Samples only see the rates: pages the program reads
/// but the samples missed are not counted, so a set is taken to fit a little sooner than it
/// does, and only a set within a small factor of the reach can be mistaken so.
fn tlb_miss_shares(chunks: &[ChunkInfo], pid: i32, entries: u32) -> HashMap<usize, f64> {
    // (index, pages, rate of each page) of each chunk read.
    let read: Vec<(usize, f64, f64)> = chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| c.pid == pid && c.samples > 0)
        .map(|(i, c)| {
            let s = f64::from(c.samples);
            let pages = if c.huge {
                1.0
            } else {
                pages_read(s, f64::from(c.sampled_pages), f64::from(c.mapped_pages))
            };
            (i, pages, s / pages)
        })
        .collect();
    let e = f64::from(entries);
    let pages: f64 = read.iter().map(|r| r.1).sum();
    if entries == 0 || pages <= e {
        let miss = if entries == 0 { 1.0 } else { 0.0 };
        return read.iter().map(|r| (r.0, miss)).collect();
    }
    // Pages held at characteristic time t: rises from 0 towards every page read.
    let held = |t: f64| -> f64 { read.iter().map(|r| r.1 * -(-r.2 * t).exp_m1()).sum() };
    let mut hi = 1.0 / read.iter().map(|r| r.2).fold(f64::MIN_POSITIVE, f64::max);
    for _ in 0..200 {
        if held(hi) >= e {
            break;
        }
        hi *= 2.0;
    }
    let t = bisect(0.0, hi, 48, |t| held(t) < e);
    read.iter().map(|r| (r.0, (-r.2 * t).exp())).collect()
}

/// The boundary between `lo`, where `below` holds, and `hi`, where it does not (for a
/// `below` that holds up to one point and no further), narrowed `steps` times by half; its
/// upper end.
fn bisect(mut lo: f64, mut hi: f64, steps: u32, below: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..steps {
        let mid = 0.5 * (lo + hi);
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// How many pages of a chunk are read, if `samples` samples spread evenly over them landed on
/// `distinct` of them: the n whose expected distinct pages, n (1 - exp(-samples / n)), is
/// `distinct`, from `distinct` up to the `mapped` pages (all of them when no sample landed on a
/// page twice).
fn pages_read(samples: f64, distinct: f64, mapped: f64) -> f64 {
    let most = mapped.max(distinct).max(1.0);
    let seen = |n: f64| n * -(-samples / n).exp_m1();
    if distinct >= samples || seen(most) <= distinct {
        return most;
    }
    bisect(distinct.max(1.0), most, 40, |n| seen(n) < distinct)
}

/// Count `addrs` (one target's samples, in the order written) into its `chunks` (sorted by
/// address): samples per chunk, distinct base pages, and walks (samples on another page than
/// the chunk's sample before), the walks weighed by what one sample stands for (`weight`: the
/// thinning the target published them at, as its ring says). Weighed so, scores keep one
/// scale while the rate changes. Without it a chunk's score of the look before, at the full
/// rate, would be weighed against a huge chunk's score of now, at a quarter of it, and a
/// candidate would take a huge chunk's place on heat it does not have (a PageRank on kron:26
/// swapped a thousand chunks a run so).
///
/// A sample thinned access by access (the C ABI's, `bench promote`'s, a kernel's plain loops)
/// stands alone for `weight` accesses, and its page change stands for `weight` walks only where
/// the reads between it and the chunk's sample before went anywhere in the chunk (random
/// reads): then each access the thinning dropped would have been a walk too. A stream read in
/// order is not so: thinned by 64, its kept samples land a page or two apart, and the pages in
/// between are all the walks it made, not 64 each. So such a step forward of at most
/// [`STREAM_STEP`] pages counts as the pages it crosses (at most `weight`); any other change
/// counts `weight`. A random read over a whole chunk lands that close ahead about once in 32
/// and still counts its step, so it loses at most about 3 % (at a thinning of 64; reads over a
/// few pages, which the TLB holds anyway, lose more); a stream was overcounted up to `weight`
/// times, which made a chunk read once in order look as hot as one read at random. A dense
/// sample (taken inside a kernel's watched pass, which thinning skips whole) had its
/// neighbours in the pass kept: its change counts `weight`, for the passes skipped.
fn count_samples(chunks: &mut [ChunkInfo], addrs: &[usize], weight: f64) {
    // (first address, one past the last, index of the first chunk) of each contiguous run.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.1 == c.addr => r.1 += HUGE,
            _ => runs.push((c.addr, c.addr + HUGE, i)),
        }
    }
    let mut bits = vec![[0u64; BASE_PER_HUGE / 64]; chunks.len()];
    let mut last_page = vec![usize::MAX; chunks.len()];
    let mut walks = vec![0.0f64; chunks.len()];
    let weight = weight.max(1.0);
    for &a in addrs {
        let (dense, a) = crate::channel::is_dense(a);
        let k = runs.partition_point(|r| r.1 <= a);
        let Some(&(start, end, first)) = runs.get(k) else {
            continue;
        };
        if a < start || a >= end {
            continue;
        }
        let i = first + (a - start) / HUGE;
        chunks[i].samples += 1;
        let page = (a - start) % HUGE / 4096;
        bits[i][page / 64] |= 1 << (page % 64);
        let last = last_page[i];
        if last != page {
            walks[i] += match page.checked_sub(last) {
                Some(step) if step <= STREAM_STEP && !dense => (step as f64).min(weight),
                _ => weight,
            };
            last_page[i] = page;
        }
    }
    for ((c, b), w) in chunks.iter_mut().zip(&bits).zip(walks) {
        if c.samples > 0 {
            c.sampled_pages = b.iter().map(|w| w.count_ones() as u16).sum();
            c.walks = w.round().min(f64::from(u32::MAX)) as u32;
        }
    }
}

/// The longest step forward, in base pages, between two of a chunk's samples that
/// [`count_samples`] takes for a stream read in order rather than a jump.
const STREAM_STEP: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of 4 KiB pages mapped whole, with no sample counted yet.
    fn unsampled(addr: usize) -> ChunkInfo {
        ChunkInfo {
            pid: 1,
            addr,
            mapped_pages: 512,
            huge: false,
            samples: 0,
            sampled_pages: 0,
            walks: 0,
            sampled: true,
        }
    }

    #[test]
    fn samples_land_in_their_chunks_and_pages() {
        let mut chunks = [
            unsampled(0x4000_0000),
            unsampled(0x4020_0000),
            unsampled(0x4080_0000),
        ];
        // Three samples in page 0 and 1 of the first chunk, one in the last page of the
        // second, one outside every chunk (0x4040_0000 is not managed).
        let addrs = [
            0x4000_0008,
            0x4000_0ff0,
            0x4000_1000,
            0x403f_f000,
            0x4040_0000,
        ];
        let mut thinned = chunks;
        count_samples(&mut chunks, &addrs, 1.0);
        let got: Vec<(u32, u16, u32)> = chunks
            .iter()
            .map(|c| (c.samples, c.sampled_pages, c.walks))
            .collect();
        // The first chunk's samples fall on page 0, 0, then 1: two walks.
        assert_eq!(got, [(3, 2, 2), (1, 1, 1), (0, 0, 0)]);
        // Published at one in 16 of the usual, a jump stands for 16 walks (the first sample of
        // a chunk is one), a step to the next page for the one page it crosses.
        count_samples(&mut thinned, &addrs, 16.0);
        let walks: Vec<u32> = thinned.iter().map(|c| c.walks).collect();
        assert_eq!(walks, [16 + 1, 16, 0]);
    }

    #[test]
    fn a_thinned_stream_counts_the_pages_it_crosses_and_random_reads_their_weight() {
        let walks = |addrs: &[usize], weight: f64| {
            let mut c = [unsampled(0x4000_0000)];
            count_samples(&mut c, addrs, weight);
            c[0].walks
        };
        // A chunk read in order, one sample every 64 bytes at the full rate: a walk a page.
        let stream: Vec<usize> = (0..HUGE).step_by(64).map(|o| 0x4000_0000 + o).collect();
        assert_eq!(walks(&stream, 1.0), 512);
        // Thinned by 64, a sample every 4 KiB: the first stands for 64, then each step to the
        // next page for that page. Weighing every change by 64 made it 32 768, as hot as 512
        // random reads a page.
        let thinned: Vec<usize> = stream.iter().copied().step_by(64).collect();
        assert_eq!(walks(&thinned, 64.0), 64 + 511);
        // Thinned by 4, four samples a page: the same 512 walks, give or take the first.
        let quarter: Vec<usize> = stream.iter().copied().step_by(4).collect();
        assert_eq!(walks(&quarter, 4.0), 4 + 511);
        // Random reads over the chunk's 512 pages: every change stands for the weight, but for
        // the few that land at most 16 pages ahead (about one in 32), counted as their step.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let random: Vec<usize> = (0..4096)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                0x4000_0000 + ((x >> 33) as usize % 512) * 4096
            })
            .collect();
        let changes = f64::from(walks(&random, 1.0));
        assert!(changes > 4000.0, "{changes} of 4096 samples changed page");
        let weighed = f64::from(walks(&random, 16.0));
        assert!(
            weighed <= 16.0 * changes && weighed >= 0.95 * 16.0 * changes,
            "{weighed} walks against {changes} changes at 16 each"
        );
        // Dense samples (a kernel's watched pass, thinned by skipping whole passes) were not
        // thinned between each other: every change stands for the 64 passes skipped.
        let dense: Vec<usize> = thinned
            .iter()
            .map(|&a| a | hugewise_sys::shm::DENSE_BIT as usize)
            .collect();
        assert_eq!(walks(&dense, 64.0), 64 * 512);
    }

    fn read(pid: i32, i: usize, huge: bool, samples: u32, pages: u16) -> ChunkInfo {
        ChunkInfo {
            pid,
            addr: 0x4000_0000 + i * HUGE,
            mapped_pages: 512,
            huge,
            samples,
            sampled_pages: pages,
            walks: samples,
            sampled: true,
        }
    }

    #[test]
    fn pages_that_fit_the_tlb_miss_nothing_and_an_even_set_past_it_misses_the_rest() {
        // 4 096 samples on 64 pages of one chunk: 64 pages read, within 1 536 entries.
        let small = [read(1, 0, false, 4096, 64)];
        assert_eq!(tlb_miss_shares(&small, 1, 1536)[&0], 0.0);
        // Four chunks read evenly on all 512 pages: 2 048 pages, each read alike, so 1 536 of
        // them are held and a read misses with probability 1 - 1536 / 2048 = 0.25.
        let even: Vec<ChunkInfo> = (0..4).map(|i| read(1, i, false, 100_000, 512)).collect();
        let m = tlb_miss_shares(&even, 1, 1536);
        for i in 0..4 {
            assert!((m[&i] - 0.25).abs() < 1e-9, "{m:?}");
        }
        // Two of them huge: one entry each, 512 + 512 + 2 = 1 026 pages, which fit.
        let mixed: Vec<ChunkInfo> = (0..4).map(|i| read(1, i, i < 2, 100_000, 512)).collect();
        let m = tlb_miss_shares(&mixed, 1, 1536);
        assert_eq!((m[&2], m[&3]), (0.0, 0.0));
        // Another target's pages are its own TLB's, and 0 entries counts every walk.
        let other: Vec<ChunkInfo> = even.iter().map(|c| ChunkInfo { pid: 2, ..*c }).collect();
        let both: Vec<ChunkInfo> = small.iter().chain(&other).copied().collect();
        assert_eq!(tlb_miss_shares(&both, 1, 1536)[&0], 0.0);
        assert!((tlb_miss_shares(&both, 2, 1536)[&1] - 0.25).abs() < 1e-9);
        assert_eq!(tlb_miss_shares(&small, 1, 0)[&0], 1.0);
    }

    #[test]
    fn a_hot_chunk_keeps_its_pages_while_a_cold_one_past_the_reach_misses() {
        // 512 entries; chunk 0's 256 pages read 1 000 times each, chunk 1's 512 pages once.
        // Held pages 256 (1 - exp(-1000 T)) + 512 (1 - exp(-T)) = 512 at T = ln 2 (the hot
        // pages all held, half the cold ones), so a cold read misses half the time and a hot
        // one exp(-693), never.
        let c = [read(1, 0, false, 256_000, 256), read(1, 1, false, 512, 512)];
        let m = tlb_miss_shares(&c, 1, 512);
        assert!(m[&0] < 1e-12, "{m:?}");
        assert!((m[&1] - 0.5).abs() < 1e-3, "{m:?}");
    }

    #[test]
    fn the_pages_a_chunk_reads_are_estimated_from_its_samples_repeats() {
        // No page sampled twice: as many pages as are mapped.
        assert_eq!(pages_read(10.0, 10.0, 512.0), 512.0);
        // 4 096 samples on 64 pages: 64 (another page would have been hit by now).
        assert!((pages_read(4096.0, 64.0, 512.0) - 64.0).abs() < 1e-6);
        // 100 samples landing on 100 (1 - exp(-1)) = 63.2 pages of 100 read: 100.
        let seen = 100.0 * -(-1.0f64).exp_m1();
        assert!((pages_read(100.0, seen, 512.0) - 100.0).abs() < 1e-6);
    }
}
