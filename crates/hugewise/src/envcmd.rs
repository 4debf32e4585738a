//! `hugewise env ...`: turn arguments into env-crate calls, print their reports, map the
//! outcome to an exit code.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::bail;
use hugewise_env::journal::Lifetime;
use hugewise_env::pressure::Target;
use hugewise_env::scoped::{self, CommandSpec, Plan, ProbeSize, SwapPlan};
use hugewise_env::{state, Host, KhugepagedSetting, Knob, Session};
use hugewise_report::envview;
use hugewise_results::env::{ActionReport, SetReport, ShapedRun, SwapReport};
use hugewise_results::Saved;
use hugewise_study::save;

use crate::envcli::{EnvCommand, HoldArgs};
use crate::{bar, cancel_flag, emit, meta};

fn need_root(what: &str) -> anyhow::Result<()> {
    if !hugewise_sys::caps::is_root() {
        bail!("hugewise env {what} changes the machine and needs root; run it with sudo");
    }
    Ok(())
}

/// Progress of shaping on the project's progress bars: one bar per phase, in MiB for memory
/// taken and in blocks for fragmentation.
fn progress_sink(enabled: bool) -> impl FnMut(&str, u64, u64) {
    let mut current: Option<(String, indicatif::ProgressBar)> = None;
    move |phase: &str, done: u64, total: u64| {
        if current.as_ref().is_none_or(|(p, _)| p != phase) {
            if let Some((_, b)) = current.take() {
                b.finish_and_clear();
            }
            current = Some((phase.to_string(), bar(enabled, phase, phase != "fragment")));
        }
        if let Some((_, b)) = &current {
            b.set_length(total);
            b.set_position(done);
        }
    }
}

fn set_kept(
    what: &str,
    sets: Vec<(Knob, String)>,
    out: &crate::cli::Output,
) -> anyhow::Result<i32> {
    need_root(what)?;
    if sets.is_empty() {
        bail!("hugewise env {what}: nothing to set (see --help)");
    }
    let host = Host::real();
    let mut s = Session::open(&host, Lifetime::Kept)?;
    let mut done = Vec::new();
    for (k, v) in sets {
        done.push(s.set(k, &v)?);
    }
    emit(out, SetReport { settings: done }, envview::set_report)?;
    Ok(0)
}

fn action(
    name: &'static str,
    f: fn(&Host) -> hugewise_env::Result<()>,
    out: &crate::cli::Output,
) -> anyhow::Result<i32> {
    need_root(name)?;
    let host = Host::real();
    let before = state::settled(&host)?;
    f(&host)?;
    let after = state::settled(&host)?;
    let r = ActionReport {
        action: name.to_string(),
        before,
        after,
    };
    emit(out, r, envview::action)?;
    Ok(0)
}

fn save_report(path: Option<&std::path::Path>, r: ShapedRun) -> anyhow::Result<()> {
    if let Some(p) = path {
        save::write_json(p, &Saved::new(meta(), r))?;
    }
    Ok(())
}

/// Shape, then either run a command or hold until cancelled or `hold_for` passes, then restore.
fn shape_and(
    plan: Plan,
    command: Option<CommandSpec>,
    hold_for: Option<Duration>,
    out: Option<&std::path::Path>,
    progress: bool,
) -> anyhow::Result<i32> {
    let cancel = cancel_flag()?;
    let is_cancelled = || cancel.load(Ordering::Relaxed);
    let host = Host::real();
    let mut sink = progress_sink(progress);
    let shaped = match scoped::shape(&host, &plan, &is_cancelled, &mut sink) {
        Ok(s) => s,
        Err(hugewise_env::Error::Interrupted) => {
            eprintln!("hugewise: interrupted while shaping; everything done so far was put back");
            return Ok(130);
        }
        Err(e) => return Err(e.into()),
    };
    eprint!("{}", envview::shape(shaped.report()));
    let mut shaped = shaped;
    let run = match &command {
        Some(cmd) => Some(shaped.run(cmd, &is_cancelled)),
        None => {
            match hold_for {
                Some(d) => eprintln!(
                    "hugewise: holding for {:.0} s (Ctrl-C ends it early)",
                    d.as_secs_f64()
                ),
                None => eprintln!("hugewise: holding until Ctrl-C"),
            }
            let t0 = Instant::now();
            while !is_cancelled() && hold_for.is_none_or(|d| t0.elapsed() < d) {
                std::thread::sleep(Duration::from_millis(100));
            }
            None
        }
    };
    let (run_ok, run_err) = match &run {
        Some(Ok(r)) => {
            eprint!("{}", envview::run_outcome(r));
            (Some(r), None)
        }
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let shape_report = shaped.report().clone();
    let finish = shaped.finish()?;
    eprint!("{}", envview::finish(&finish));
    save_report(
        out,
        ShapedRun {
            shape: Some(shape_report),
            run: run_ok.cloned(),
            finish: Some(finish.clone()),
            error: run_err.clone(),
        },
    )?;
    if !finish.restore.complete() {
        bail!("some changes could not be put back (listed above); they stay in the journal for `hugewise env restore`");
    }
    if let Some(e) = run_err {
        bail!("{e}");
    }
    Ok(match run_ok {
        Some(r) => r.shell_code(),
        None => 0,
    })
}

fn hold_plan(h: &HoldArgs) -> Plan {
    let mut p = Plan::new();
    p.floor_bytes = h.floor.0;
    p
}

/// Run one `hugewise env` subcommand; returns the exit code.
pub fn run(cmd: EnvCommand, progress: bool) -> anyhow::Result<i32> {
    match cmd {
        EnvCommand::Show(a) => {
            let r = hugewise_env::show::show(&Host::real())?;
            emit(&a.output, r, envview::show)?;
            Ok(0)
        }
        EnvCommand::Thp(a) => {
            let mut sets = Vec::new();
            if let Some(v) = a.enabled {
                sets.push((Knob::ThpEnabled, v));
            }
            if let Some(v) = a.defrag {
                sets.push((Knob::ThpDefrag, v));
            }
            for (kib, v) in a.sizes {
                sets.push((Knob::MthpEnabled { size_kib: kib }, v));
            }
            set_kept("thp", sets, &a.output)
        }
        EnvCommand::Hugetlb(a) => {
            let mut sets = Vec::new();
            if let Some(n) = a.pages_2m {
                sets.push((Knob::HugetlbPages { size_kib: 2048 }, n.to_string()));
            }
            if let Some(n) = a.pages_1g {
                sets.push((Knob::HugetlbPages { size_kib: 1 << 20 }, n.to_string()));
            }
            set_kept("hugetlb", sets, &a.output)
        }
        EnvCommand::Khugepaged(a) => {
            let mut sets = Vec::new();
            for (s, v) in [
                (KhugepagedSetting::PagesToScan, a.pages_to_scan),
                (KhugepagedSetting::ScanSleepMillisecs, a.scan_sleep_ms),
                (KhugepagedSetting::MaxPtesNone, a.max_ptes_none),
            ] {
                if let Some(v) = v {
                    sets.push((Knob::Khugepaged { setting: s }, v.to_string()));
                }
            }
            set_kept("khugepaged", sets, &a.output)
        }
        EnvCommand::PageCluster(a) => set_kept(
            "page-cluster",
            vec![(Knob::PageCluster, a.value.to_string())],
            &a.output,
        ),
        EnvCommand::Compact(a) => action("compact", scoped::compact, &a.output),
        EnvCommand::DropCaches(a) => action("drop-caches", scoped::drop_caches, &a.output),
        EnvCommand::Swap(a) => {
            need_root("swap")?;
            let host = Host::real();
            let mut s = Session::open(&host, Lifetime::Kept)?;
            s.add_swap(&a.file, a.size.0)?;
            let r = SwapReport {
                file: a.file.clone(),
                size_bytes: a.size.0,
                swaps: host.proc.swaps()?,
            };
            emit(&a.output, r, envview::swap)?;
            Ok(0)
        }
        EnvCommand::Pressure(a) => {
            need_root("pressure")?;
            let mut plan = hold_plan(&a.hold);
            plan.pressure = match (a.leave, a.take) {
                (Some(l), _) => Some(Target::Leave(l.0)),
                (None, Some(t)) => Some(Target::Take(t.0)),
                (None, None) => None,
            };
            plan.probe = ProbeSize::Off;
            shape_and(plan, None, a.hold.hold_for, a.hold.out.as_deref(), progress)
        }
        EnvCommand::Fragment(a) => {
            need_root("fragment")?;
            let mut plan = hold_plan(&a.hold);
            plan.fragment = Some(a.level);
            plan.probe = a.probe;
            shape_and(plan, None, a.hold.hold_for, a.hold.out.as_deref(), progress)
        }
        EnvCommand::Limit(a) => {
            need_root("limit")?;
            let mut plan = Plan::new();
            plan.limit_bytes = Some(a.memory.0);
            plan.probe = ProbeSize::Off;
            let cmd = CommandSpec { argv: a.command };
            shape_and(plan, Some(cmd), None, a.out.as_deref(), progress)
        }
        EnvCommand::With(a) => {
            need_root("with")?;
            let mut plan = Plan::new();
            plan.thp_enabled = a.thp;
            plan.thp_defrag = a.thp_defrag;
            plan.mthp = a.mthp;
            for (s, v) in [
                (KhugepagedSetting::PagesToScan, a.khugepaged_pages_to_scan),
                (
                    KhugepagedSetting::ScanSleepMillisecs,
                    a.khugepaged_scan_sleep_ms,
                ),
                (KhugepagedSetting::MaxPtesNone, a.khugepaged_max_ptes_none),
            ] {
                if let Some(v) = v {
                    plan.khugepaged.push((s, v));
                }
            }
            if let Some(n) = a.hugetlb_2m {
                plan.hugetlb.push((2048, n));
            }
            if let Some(n) = a.hugetlb_1g {
                plan.hugetlb.push((1 << 20, n));
            }
            plan.page_cluster = a.page_cluster;
            plan.swap = a.swap.map(|b| SwapPlan {
                bytes: b.0,
                path: a.swap_file.clone(),
            });
            plan.drop_caches = a.drop_caches;
            plan.compact = a.compact;
            plan.pressure = match (a.pressure_leave, a.pressure_take) {
                (Some(l), _) => Some(Target::Leave(l.0)),
                (None, Some(t)) => Some(Target::Take(t.0)),
                (None, None) => None,
            };
            plan.fragment = a.fragment;
            plan.limit_bytes = a.limit_memory.map(|b| b.0);
            plan.probe = a.probe;
            plan.floor_bytes = a.floor.0;
            let cmd = CommandSpec { argv: a.command };
            shape_and(plan, Some(cmd), None, a.out.as_deref(), progress)
        }
        EnvCommand::Restore(a) => {
            need_root("restore")?;
            let r = hugewise_env::restore_all(&Host::real())?;
            let complete = r.complete();
            emit(&a.output, r, envview::restore)?;
            if !complete {
                bail!("some changes could not be undone; they stay in the journal");
            }
            Ok(0)
        }
    }
}
