//! `hugewise env ...`: turn arguments into env-crate calls, print their reports, map the
//! outcome to an exit code.

use std::sync::atomic::Ordering;

use anyhow::bail;
use hugewise_env::journal::Lifetime;
use hugewise_env::pressure::Target;
use hugewise_env::scoped::{self, CommandSpec, Plan, ProbeSize, Stage, SwapPlan, Then};
use hugewise_env::{state, Host, KhugepagedSetting, Knob, Session};
use hugewise_report::envview;
use hugewise_results::env::{ActionReport, SetReport, SwapReport};

use crate::envcli::{EnvCommand, HoldArgs};
use crate::output::{self, Output, Stream};
use crate::progress::{Mode, Steps, Unit};
use crate::{cancel_flag, emit};

fn need_root(what: &str) -> anyhow::Result<()> {
    if !hugewise_sys::caps::is_root() {
        bail!("hugewise env {what} changes the machine and needs root; run it with sudo");
    }
    Ok(())
}

/// Progress of shaping: one step per phase, in bytes for memory taken and in blocks for
/// fragmentation.
fn progress_sink(mode: Mode) -> impl FnMut(&str, u64, u64) {
    let mut current: Option<(String, Steps)> = None;
    move |phase: &str, done: u64, total: u64| {
        if current.as_ref().is_none_or(|(p, _)| p != phase) {
            if let Some((_, s)) = current.take() {
                s.finish();
            }
            let unit = if phase == "fragment" {
                Unit::Items
            } else {
                Unit::Bytes
            };
            current = Some((phase.to_string(), Steps::new(mode, phase, unit)));
        }
        if let Some((_, s)) = &current {
            s.update(done, total);
        }
    }
}

fn set_kept(what: &str, sets: Vec<(Knob, String)>, out: &Output) -> anyhow::Result<i32> {
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
    out: &Output,
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

/// Shape, then run a command or hold, then restore; the report goes to stderr stage by stage
/// (or as JSON at the end: to stdout when hugewise owns it, to stderr when a command does).
fn shape_and(plan: Plan, then: Then, out: &Output, progress: Mode) -> anyhow::Result<i32> {
    let cancel = cancel_flag()?;
    let is_cancelled = || cancel.load(Ordering::Relaxed);
    let text = !out.json;
    let mut sink = progress_sink(progress);
    let mut show = |stage: Stage<'_>| {
        if !text {
            return;
        }
        match stage {
            Stage::Shaped(r) => eprint!("{}", envview::shape(r)),
            Stage::Holding(Some(d)) => eprintln!(
                "hugewise: holding for {:.0} s (Ctrl-C ends it early)",
                d.as_secs_f64()
            ),
            Stage::Holding(None) => eprintln!("hugewise: holding until Ctrl-C"),
            Stage::Ran(r) => eprint!("{}", envview::run_outcome(r)),
            Stage::Finished(f) => eprint!("{}", envview::finish(f)),
        }
    };
    let r = match scoped::shape_and(
        &Host::real(),
        &plan,
        &then,
        &is_cancelled,
        &mut sink,
        &mut show,
    ) {
        Ok(r) => r,
        // The exit code is 128 + the signal (see `signals`).
        Err(hugewise_env::Error::Interrupted) => {
            bail!("interrupted while shaping; everything done so far was put back")
        }
        Err(e) => return Err(e.into()),
    };
    let restored = r.finish.as_ref().is_none_or(|f| f.restore.complete());
    let run_error = r.error.clone();
    let code = r.run.as_ref().map_or(0, |run| run.shell_code().into());
    let stream = match then {
        Then::Run(_) => Stream::Stderr,
        Then::Hold(_) => Stream::Stdout,
    };
    output::emit_to(
        stream,
        out.json,
        out.out.as_ref(),
        r,
        None::<fn(&_) -> String>,
    )?;
    if !restored {
        bail!("some changes could not be put back (listed above); they stay in the journal for `hugewise env restore`");
    }
    if let Some(e) = run_error {
        bail!("{e}");
    }
    Ok(code)
}

fn hold_plan(h: &HoldArgs) -> Plan {
    let mut p = Plan::new();
    p.floor_bytes = h.floor.0;
    p
}

/// Run one `hugewise env` subcommand; returns the exit code.
pub fn run(cmd: EnvCommand, progress: Mode) -> anyhow::Result<i32> {
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
            shape_and(plan, Then::Hold(a.hold.hold_for), &a.hold.output, progress)
        }
        EnvCommand::Fragment(a) => {
            need_root("fragment")?;
            let mut plan = hold_plan(&a.hold);
            plan.fragment = Some(a.level);
            plan.probe = a.probe;
            shape_and(plan, Then::Hold(a.hold.hold_for), &a.hold.output, progress)
        }
        EnvCommand::Limit(a) => {
            need_root("limit")?;
            let mut plan = Plan::new();
            plan.limit_bytes = Some(a.memory.0);
            plan.probe = ProbeSize::Off;
            let cmd = CommandSpec { argv: a.command };
            shape_and(plan, Then::Run(cmd), &a.output, progress)
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
            shape_and(plan, Then::Run(cmd), &a.output, progress)
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
