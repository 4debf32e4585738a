//! Scoped shaping: apply a [`Plan`] (settings, swap, pressure, fragmentation), measure the
//! result, run a command in it or hold it until cancelled ([`shape_and`]), and put everything
//! back.
//!
//! Order matters and is fixed: settings and swap first; then memory. With both pressure and
//! fragmentation, base pages are taken first (they eat the existing small free blocks, leaving
//! whole ones), then blocks are broken, then whole 2 MiB blocks only are taken down to what
//! should be left, so that the broken blocks stay free and the level holds for what remains.

use std::process::{Command, ExitStatus};

use std::time::{Duration, Instant};

pub use hugewise_results::env::{
    FinishReport, Plan, ProbeSize, RunOutcome, ShapeReport, ShapedRun, SwapPlan, DEFAULT_FLOOR,
};
use serde::Serialize;

use crate::cgroup;
use crate::flush::StatsFlusher;
use crate::fragment::{self, FragmentPages, Fragmenter};
use crate::host::Host;
use crate::journal::Lifetime;
use crate::knob::{KhugepagedSetting, Knob};
use crate::pressure::{self, Holder, PressurePages, PressureTarget};
use crate::probe;
use crate::session::Session;
use hugewise_sys::process::Signal;

use crate::state::{self, MemoryState};
use crate::{Error, Result};

/// What an automatic THP probe leaves available.
pub const PROBE_MARGIN: u64 = 256 << 20;

/// The knob writes a plan asks for, in order.
pub(crate) fn settings(plan: &Plan) -> Vec<(Knob, String)> {
    let mut s = Vec::new();
    if let Some(v) = &plan.thp_enabled {
        s.push((Knob::ThpEnabled, v.clone()));
    }
    if let Some(v) = &plan.thp_defrag {
        s.push((Knob::ThpDefrag, v.clone()));
    }
    for (kib, v) in &plan.mthp {
        s.push((Knob::MthpEnabled { size_kib: *kib }, v.clone()));
    }
    for (k, v) in &plan.khugepaged {
        s.push((Knob::Khugepaged { setting: *k }, v.to_string()));
    }
    for (kib, n) in &plan.hugetlb {
        s.push((Knob::HugetlbPages { size_kib: *kib }, n.to_string()));
    }
    if let Some(v) = plan.page_cluster {
        s.push((Knob::PageCluster, v.to_string()));
    }
    if let Some(v) = plan.compaction_proactiveness {
        s.push((Knob::CompactionProactiveness, v.to_string()));
    }
    s
}

/// A shaped machine: changes in force, memory held. Dropping it puts everything back.
#[derive(Debug)]
pub struct Shaped {
    // Field order is drop order: memory first, then the journaled changes.
    top_ups: Vec<Holder>,
    fragmenters: Vec<Fragmenter>,
    holder: Option<Holder>,
    session: Session,
    report: ShapeReport,
}

/// Progress callback: (phase, done, total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

pub use crate::actions::{compact, drop_caches};

/// Apply `plan`. On error or cancellation everything done so far is put back before returning.
pub fn shape(
    host: &Host,
    plan: &Plan,
    cancel: &dyn Fn() -> bool,
    progress: Progress<'_>,
) -> Result<Shaped> {
    if let Some(l) = plan.fragment {
        if !(0.0..=0.95).contains(&l) {
            return Err(Error::Invalid(format!(
                "fragmentation level {:.0}% is outside 0..95%",
                l * 100.0
            )));
        }
    }
    pressure::check_floor(plan.floor_bytes)?;
    let session = Session::open(host, Lifetime::Run)?;
    let before = state::measure(host)?;
    let mut sh = Shaped {
        top_ups: Vec::new(),
        fragmenters: Vec::new(),
        holder: None,
        session,
        report: ShapeReport {
            plan: plan.clone(),
            before,
            settings: Vec::new(),
            actions: Vec::new(),
            pressure: None,
            fragment: None,
            pressure_whole_blocks: None,
            shaped: state::measure(host)?,
            probe: None,
            after_probe: None,
            warnings: Vec::new(),
        },
    };
    // `sh` restores on drop whatever happens below.
    for (knob, value) in settings(plan) {
        let set = sh.session.set(knob, &value)?;
        if let Knob::HugetlbPages { .. } = knob {
            if set.now != set.asked {
                sh.report.warnings.push(format!(
                    "{}: asked {} pages, the kernel found {} (memory too fragmented or full)",
                    set.knob, set.asked, set.now
                ));
            }
        }
        sh.report.settings.push(set);
    }
    if let Some(sw) = &plan.swap {
        sh.session.add_swap(&sw.path, sw.bytes)?;
        sh.report
            .actions
            .push(format!("swap file {} enabled", sw.path.display()));
    }
    if plan.drop_caches || plan.fragment.is_some() {
        drop_caches(host)?;
        sh.report.actions.push("dropped the page cache".into());
    }
    if plan.compact {
        compact(host)?;
        sh.report.actions.push("compacted memory".into());
    }
    if plan.fragment.is_some() {
        let sets = fragment::prepare(&mut sh.session)?;
        sh.report.settings.extend(sets);
        let listed = pressure::hand_over(host, plan.floor_bytes, cancel, &mut |d, n| {
            progress("list free memory", d, n)
        })?;
        if let Some(l) = listed {
            sh.report.actions.push(listed_action(&l));
            if l.still_outside_bytes >= pressure::OUTSIDE_LISTS {
                sh.report.warnings.push(format!(
                    "{} MiB of free memory is still outside the buddy allocator's lists: the \
                     fragmentation level holds for the lists only",
                    l.still_outside_bytes >> 20
                ));
            }
        }
    }
    let movable = plan.fragment.is_some() && plan.fragment_pages == FragmentPages::Movable;
    if movable {
        // A THP fault under `defrag` madvise or always compacts: the squeeze would move the
        // kept pages away while it takes whole blocks. Shaping takes the blocks it finds.
        let defrag = Knob::ThpDefrag.read(host)?;
        sh.report
            .settings
            .push(sh.session.set(Knob::ThpDefrag, "never")?);
        let shaped = shape_memory(host, plan, &mut sh, cancel, progress);
        let back = sh.session.set(Knob::ThpDefrag, &defrag);
        // A shaping error says more than a failed write back (which `sh` retries on drop).
        shaped?;
        sh.report.settings.push(back?);
    } else {
        shape_memory(host, plan, &mut sh, cancel, progress)?;
    }
    sh.report.shaped = state::settled(host)?;
    let probe_bytes = match plan.probe {
        ProbeSize::Off => 0,
        ProbeSize::Bytes(b) => b,
        ProbeSize::Auto if movable => {
            sh.report.warnings.push(
                "THP probe skipped: its faults would compact the movable pages away and leave \
                 less fragmentation than shaped (ask --probe SIZE to run it anyway)"
                    .into(),
            );
            0
        }
        ProbeSize::Auto => sh
            .report
            .shaped
            .available()
            .saturating_sub(PROBE_MARGIN)
            .min(4 << 30),
    };
    if probe_bytes >= state::BLOCK_BYTES {
        if sh.report.shaped.available().saturating_sub(probe_bytes) < PROBE_MARGIN {
            sh.report.warnings.push(format!(
                "THP probe skipped: {} MiB would break the floor",
                probe_bytes >> 20
            ));
        } else {
            progress("probe", 0, 1);
            sh.report.probe = Some(probe::thp_probe(host, probe_bytes)?);
            sh.report.after_probe = Some(state::settled(host)?);
        }
    }
    Ok(sh)
}

/// The action line of a [`pressure::hand_over`] that listed memory.
pub fn listed_action(l: &pressure::Listing) -> String {
    format!(
        "took 4 KiB pages down to the floor and gave them back ({:.0} s), which put {} MiB the \
         kernel counted free but had not yet listed into its free lists, so that the \
         fragmentation reaches all of free memory",
        l.seconds,
        l.listed_bytes >> 20
    )
}

fn shape_memory(
    host: &Host,
    plan: &Plan,
    sh: &mut Shaped,
    cancel: &dyn Fn() -> bool,
    progress: Progress<'_>,
) -> Result<()> {
    let floor = plan.floor_bytes;
    match (plan.pressure, plan.fragment) {
        (None, None) => {}
        (Some(t), None) => {
            let (h, r) =
                pressure::hold(host, t, PressurePages::Base, floor, cancel, &mut |d, n| {
                    progress("pressure", d, n)
                })?;
            sh.holder = Some(h);
            sh.report.pressure = Some(r);
        }
        (None, Some(level)) => {
            let (f, r) = fragment::fragment(
                host,
                fragment::FragmentTarget::Level(level),
                plan.fragment_pages,
                plan.fragment_tolerance,
                floor,
                cancel,
                &mut |d, n| progress("fragment", d, n),
            )?;
            if !r.reached {
                sh.report
                    .warnings
                    .push(r.note.clone().unwrap_or_else(|| "level not reached".into()));
            }
            sh.fragmenters.push(f);
            sh.report.fragment = Some(r);
        }
        (Some(t), Some(level)) => {
            let now = state::settled(host)?;
            let leave = match t {
                PressureTarget::Leave(b) => b,
                PressureTarget::Take(b) => now.available().saturating_sub(b),
            };
            if leave < floor {
                return Err(Error::Floor {
                    what: "the pressure asked".into(),
                    available_mib: now.available() >> 20,
                    left_mib: leave >> 20,
                    floor_mib: floor >> 20,
                });
            }
            // The buddy lists hold a little more than MemAvailable says (it subtracts the
            // kernel's reserves): aim at the free memory expected once squeezed.
            let expected_free = |s: &MemoryState| {
                (leave as i64 + s.buddy_free_bytes as i64 - s.available() as i64).max(0) as u64
            };
            let holes = (level * expected_free(&now) as f64) as u64;
            // Room to find whole blocks in, above the floor, before the final squeeze.
            let room = (floor + holes + holes / 511 + (256 << 20)).saturating_sub(leave);
            let (h, r) = pressure::hold(
                host,
                PressureTarget::Leave(leave + room),
                PressurePages::Base,
                floor,
                cancel,
                &mut |d, n| progress("pressure", d, n),
            )?;
            sh.holder = Some(h);
            sh.report.pressure = Some(r);
            let mut want = holes.max(state::settled(host)?.unusable_bytes);
            for round in 0..4 {
                let (f, mut r) = fragment::fragment(
                    host,
                    fragment::FragmentTarget::UnusableBytes(want),
                    plan.fragment_pages,
                    plan.fragment_tolerance,
                    floor,
                    cancel,
                    &mut |d, n| progress("fragment", d, n),
                )?;
                sh.fragmenters.push(f);
                r.pinned_blocks = sh.fragmenters.iter().map(|f| f.pinned_blocks()).sum();
                r.rounds += sh.report.fragment.as_ref().map_or(0, |p| p.rounds);
                sh.report.fragment = Some(r);
                let (h, r) = pressure::hold(
                    host,
                    PressureTarget::Leave(leave),
                    PressurePages::WholeBlocks,
                    floor.min(leave),
                    cancel,
                    &mut |d, n| progress("squeeze", d, n),
                )?;
                let ran_out = r.ran_out_of_2m_blocks;
                sh.top_ups.push(h);
                sh.report.pressure_whole_blocks = Some(r);
                let s = state::settled(host)?;
                let err = s.unusable_share - level;
                if err.abs() <= plan.fragment_tolerance || round == 3 {
                    break;
                }
                if err > 0.0 {
                    // Too many broken blocks for what is left: give some back whole.
                    let mut n = (err * s.buddy_free_bytes as f64 / state::BLOCK_BYTES as f64).ceil()
                        as usize;
                    for f in sh.fragmenters.iter_mut().rev() {
                        let k = n.min(f.pinned_blocks() as usize);
                        f.unpin(k)?;
                        n -= k;
                    }
                    let s = state::settled(host)?;
                    if (s.unusable_share - level).abs() <= plan.fragment_tolerance {
                        break;
                    }
                } else {
                    if ran_out {
                        break;
                    }
                    // Too few: free the squeeze to make room, break more, squeeze again.
                    want = s.unusable_bytes + ((-err) * s.buddy_free_bytes as f64) as u64;
                    sh.top_ups.clear();
                }
            }
            let s = state::settled(host)?;
            if (s.unusable_share - level).abs() > plan.fragment_tolerance {
                sh.report.warnings.push(format!(
                    "fragmentation is {:.1}% where {:.0}% was asked",
                    s.unusable_share * 100.0,
                    level * 100.0
                ));
            }
            if sh
                .report
                .pressure_whole_blocks
                .as_ref()
                .is_some_and(|r| r.ran_out_of_2m_blocks)
            {
                sh.report.warnings.push(
                    "ran out of free 2 MiB blocks before reaching the pressure target".into(),
                );
            }
        }
    }
    Ok(())
}

/// A command to run in the shaped machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
}

fn outcome_of(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}

/// Run `cmd`, in a fresh memory cgroup limited to `limit_bytes` when given (created in
/// `session`, removed when it ends, its statistics kept fresh by a [`StatsFlusher`] while the
/// command runs). On cancel the command gets SIGTERM, then SIGKILL after
/// five seconds.
pub fn run_command(
    session: &mut Session,
    cmd: &CommandSpec,
    limit_bytes: Option<u64>,
    cancel: &dyn Fn() -> bool,
) -> Result<RunOutcome> {
    let (program, args) = cmd
        .argv
        .split_first()
        .ok_or_else(|| Error::Invalid("no command given after --".into()))?;
    let mut c = Command::new(program);
    c.args(args);
    let cg = match limit_bytes {
        Some(l) => {
            let cg = session.create_cgroup(l)?;
            hugewise_sys::process::join_cgroup_at_exec(&mut c, &cg.procs_file())?;
            Some(cg)
        }
        None => None,
    };
    // The command dies with this process, even when it is killed, and leads a process group of
    // its own, journaled before the command gets far: what it starts in turn is in that group,
    // which its end (or a later restore) ends.
    hugewise_sys::process::tie_to_parent(&mut c);
    let t0 = Instant::now();
    let mut child = c.spawn().map_err(|source| Error::Spawn {
        program: program.clone(),
        source,
    })?;
    let pid = child.id() as i32;
    let seq = match session.record_command(pid, &cmd.argv) {
        Ok(seq) => seq,
        Err(e) => {
            let _ = hugewise_sys::process::signal_group(pid, Signal::Kill);
            let _ = child.wait();
            return Err(e);
        }
    };
    // Fresh statistics for the kernel's OOM decisions while the command runs (see `flush`).
    let flusher = cg
        .as_ref()
        .map(|c| StatsFlusher::start(&c.path, crate::flush::STATS_FLUSH));
    // The session's restore ends the group if waiting fails.
    let status =
        crate::group::wait_or_end(&mut child, pid, cancel).map_err(|e| Error::io(program, e))?;
    let wall_seconds = t0.elapsed().as_secs_f64();
    let stats_flush = flusher.and_then(StatsFlusher::finish);
    let (exit_code, signal) = outcome_of(status);
    // Whatever the command left running in its group ends with it.
    let left = session.end_command(seq)?;
    let usage = cg.as_ref().map(|c| c.usage());
    if let Some(c) = &cg {
        // Whatever the command left running in its cgroup ends with it.
        cgroup::remove(&c.path)?;
    }
    Ok(RunOutcome {
        argv: cmd.argv.clone(),
        exit_code,
        signal,
        wall_seconds,
        cgroup: cg.map(|c| c.path),
        cgroup_usage: usage,
        stats_flush,
        left_running: (left.processes > 0).then_some(left.outcome),
    })
}

impl Shaped {
    /// What shaping did.
    pub fn report(&self) -> &ShapeReport {
        &self.report
    }

    /// Run a command in the shaped machine.
    pub fn run(&mut self, cmd: &CommandSpec, cancel: &dyn Fn() -> bool) -> Result<RunOutcome> {
        let limit = self.report.plan.limit_bytes;
        run_command(&mut self.session, cmd, limit, cancel)
    }

    /// Give the memory back and undo every change, newest first.
    pub fn finish(mut self) -> Result<FinishReport> {
        self.top_ups.clear();
        self.fragmenters.clear();
        self.holder = None;
        let restore = self.session.restore();
        let after = state::settled(self.session.host())?;
        Ok(FinishReport { restore, after })
    }
}

/// What happens in the shaped machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Run a command; shaping ends when it does.
    Run(CommandSpec),
    /// Hold the shape this long, or until cancelled when `None`.
    Hold(Option<Duration>),
}

/// A stage of a shaped run as it is reached, for a caller that shows it.
#[derive(Debug, Clone, Copy)]
pub enum Stage<'a> {
    /// The machine is shaped and measured.
    Shaped(&'a ShapeReport),
    /// Holding starts, for this long (`None`: until cancelled).
    Holding(Option<Duration>),
    /// The command ended.
    Ran(&'a RunOutcome),
    /// Everything is put back (or what could not be is listed).
    Finished(&'a FinishReport),
}

/// The khugepaged settings of a plan, from the values given (`None`: left alone).
pub fn khugepaged_settings(
    pages_to_scan: Option<u64>,
    scan_sleep_ms: Option<u64>,
    max_ptes_none: Option<u64>,
) -> Vec<(KhugepagedSetting, u64)> {
    [
        (KhugepagedSetting::PagesToScan, pages_to_scan),
        (KhugepagedSetting::ScanSleepMillisecs, scan_sleep_ms),
        (KhugepagedSetting::MaxPtesNone, max_ptes_none),
    ]
    .into_iter()
    .filter_map(|(s, v)| Some((s, v?)))
    .collect()
}

/// The hugetlb pools of a plan (page size in KiB, pages), from the sizes given.
pub fn hugetlb_pools(pages_2m: Option<u64>, pages_1g: Option<u64>) -> Vec<(u64, u64)> {
    [(2048, pages_2m), (1 << 20, pages_1g)]
        .into_iter()
        .filter_map(|(kib, n)| Some((kib, n?)))
        .collect()
}

/// Pressure that leaves `leave` bytes available, else takes `take` bytes.
pub fn pressure_target(leave: Option<u64>, take: Option<u64>) -> Option<PressureTarget> {
    match (leave, take) {
        (Some(l), _) => Some(PressureTarget::Leave(l)),
        (None, Some(t)) => Some(PressureTarget::Take(t)),
        (None, None) => None,
    }
}

/// The exit code a shaped run ends with: its command's (0 for a hold); an error when a change
/// could not be put back, or the command could not be started.
pub fn verdict(r: &ShapedRun) -> Result<i32> {
    if !r.finish.as_ref().is_none_or(|f| f.restore.complete()) {
        return Err(Error::Unrestored);
    }
    if let Some(e) = &r.error {
        return Err(Error::Command(e.clone()));
    }
    Ok(r.run.as_ref().map_or(0, |run| run.shell_code().into()))
}

/// How often a hold looks at `cancel`.
const HOLD_POLL: Duration = Duration::from_millis(100);

/// Shape the machine by `plan`, do `then`, and put everything back, telling `stage` as each
/// stage is reached. A command that could not be started is recorded in the report's `error`,
/// after restoring. Cancellation while shaping puts back what was done and returns
/// [`Error::Interrupted`]; while holding it ends the hold; while a command runs the command
/// gets SIGTERM (see [`run_command`]).
pub fn shape_and(
    host: &Host,
    plan: &Plan,
    then: &Then,
    cancel: &dyn Fn() -> bool,
    progress: Progress<'_>,
    stage: &mut dyn FnMut(Stage<'_>),
) -> Result<ShapedRun> {
    let mut shaped = shape(host, plan, cancel, progress)?;
    stage(Stage::Shaped(shaped.report()));
    let run = match then {
        Then::Run(cmd) => Some(shaped.run(cmd, cancel)),
        Then::Hold(hold_for) => {
            stage(Stage::Holding(*hold_for));
            let t0 = Instant::now();
            while !cancel() && hold_for.is_none_or(|d| t0.elapsed() < d) {
                std::thread::sleep(HOLD_POLL);
            }
            None
        }
    };
    let (run, error) = match run {
        Some(Ok(r)) => {
            stage(Stage::Ran(&r));
            (Some(r), None)
        }
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let shape = shaped.report().clone();
    let finish = shaped.finish()?;
    stage(Stage::Finished(&finish));
    Ok(ShapedRun {
        shape: Some(shape),
        run,
        finish: Some(finish),
        error,
    })
}
