//! Does promotion pay on a graph kernel? The kernel run four ways, each arm its own worker
//! process (a typed [`crate::worker`] request), alternated round by round: 4 KiB pages
//! (`base`), every array asking for THP (`ideal`), a PCC plan replayed in the run's process
//! (`plan`), and the online daemon promoting the running kernel from its samples (`daemon`, a
//! promote worker that starts the run).
//!
//! Separate processes give each arm a fresh load, so the graph's own arrays fault with the
//! arm's pages, and the ideal is the whole footprint huge. Every run has the untimed warm-up
//! that a run makes (first touch of the kernel's arrays; sampled for the daemon, whose
//! ramp happens in it when the warm-up outlasts the ramp, as a PageRank at kron:26 does, and
//! in the timed trials of shorter runs); a replay starts with the run's first trial, so the
//! plan arm runs one trial more and drops it, its steps made in it (those due at its start
//! just before it). The timed trials after them measure what the promoted pages buy. The
//! plan, unless given, comes from a trace of the same kernel on the same graph (one PageRank
//! iteration is enough: every iteration reads alike) and the simulator's plan for the `pcc`
//! policy at the same budget. Every share is read back from the kernel by the runs
//! themselves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hugewise_graph::kernels::Spec;
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::Layout;
use hugewise_results::promote::{ActionKind, Interval, PromoteReport};
use hugewise_results::run::RunReport;
use hugewise_results::{AnyResult, Kind, Saved};

use hugewise_results::promote::{Arm, PromoteBenchSample, PromoteBenchWorkload};

use crate::promote::driver::{summarize_arms, watched};
use crate::quiet;
use crate::run::{self as kernel_run, Replay};
use crate::stats::median;
use crate::worker::{self, PromoteRequest, PromotedRun, Request, RunRequest, SimulateRequest};
use crate::{Error, Progress, Result};

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The hugewise binary whose workers run the arms.
    pub exe: PathBuf,
    /// The kernel and its settings. A kernel that starts from sources picked trial by trial
    /// (BFS, SSSP, BC) makes every arm drop a first trial, not only the plan's, so that all
    /// arms time the same sources.
    pub kernel: Spec,
    /// The graph as the user gave it (`kron:22`, a file: a `.hwg` loads fastest), parsed by
    /// [`Input::parse`].
    pub graph: String,
    /// How every arm, and the trace that makes the plan, load it.
    pub load: LoadOptions,
    /// Threads of every arm's run (`None`: one per CPU) and streams of the plan's trace
    /// (`None`: one, so that the trace is the same on every run).
    pub threads: Option<usize>,
    /// Start vertices in the input's ids, used in turn across trials (empty: picked from the
    /// seed).
    pub sources: Vec<u32>,
    /// Timed trials per run, after the run's untimed warm-up (and the trials
    /// [`setup_trials`] drops).
    pub trials: u32,
    /// Rounds (each runs every arm once), at least.
    pub rounds: u32,
    /// More rounds until every arm's speedup interval is narrow enough.
    pub until: crate::stats::Until,
    /// Share of the footprint the plan and the daemon may make huge.
    pub budget_share: f64,
    /// The daemon's interval.
    pub interval: Duration,
    /// The daemon arm's run publishes one access in this many.
    pub sample_every: u32,
    /// A plan file to replay (from `hugewise sim --plan`); made here when absent.
    pub plan: Option<PathBuf>,
    /// Where the plan, its trace (removed once simulated) and every arm's result files go.
    pub work_dir: PathBuf,
    /// The daemon arm's compaction controller.
    pub compact: hugewise_promote::compact::Mode,
    /// The daemon arm's pacing (as `hugewise promote --fault-waits`).
    pub fault_waits: f64,
    /// The daemon arm faults in the page each collapse copies into first.
    pub warm: bool,
    /// What the daemon arm takes a page walk a huge page removes to cost, in nanoseconds.
    pub walk_ns: f64,
    /// The nice value the daemon arm's thread gives way with.
    pub nice: i32,
}

/// The policy whose plan the plan arm replays, and whose daemon the daemon arm runs.
const POLICY: &str = "pcc";

/// Run the benchmark. `progress` counts runs done of the total (the plan's making counts as
/// one when it is made here); `cancel` ends it between runs.
pub fn run(
    cfg: &Config,
    cancel: &AtomicBool,
    progress: Progress<'_>,
) -> Result<PromoteBenchWorkload> {
    if cfg.rounds == 0 || cfg.trials == 0 {
        return Err(Error::Config("rounds and trials must be at least 1".into()));
    }
    if !(cfg.budget_share > 0.0 && cfg.budget_share <= 1.0) {
        return Err(Error::Config(
            "the budget is a share above 0 and at most 1".into(),
        ));
    }
    // Refused before minutes of loading and tracing, not after the base arm: under THP
    // `always` its run would get huge pages at fault.
    if hugewise_sys::sysfs::SysFs::default()
        .thp()
        .is_ok_and(|t| t.enabled.current == "always")
    {
        return Err(thp_always());
    }
    Input::parse(&cfg.graph)?;
    if let Some(p) = &cfg.plan {
        check_plan(p, cfg.budget_share)?;
    }
    std::fs::create_dir_all(&cfg.work_dir).map_err(|source| Error::Write {
        path: cfg.work_dir.clone(),
        source,
    })?;
    let runs = u64::from(cfg.until.planned(cfg.rounds)) * Arm::ALL.len() as u64;
    let total = runs + u64::from(cfg.plan.is_none());
    let (plan, plan_made_s) = match &cfg.plan {
        Some(p) => (p.clone(), None),
        None => {
            let t = Instant::now();
            let p = make_plan(cfg, cancel)?;
            progress(1, total);
            (p, Some(t.elapsed().as_secs_f64()))
        }
    };
    let mut samples = Vec::with_capacity(runs as usize);
    let mut footprint = 0u64;
    let mut plan_chunks = 0u64;
    let (_, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        &|| cancel.load(Ordering::Relaxed),
        watched,
        |round, samples| {
            let mut arms = Arm::ALL.to_vec();
            if round % 2 == 1 {
                arms.reverse();
            }
            for arm in arms {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let q = quiet::wait_quiet(0.10, Duration::from_millis(200), 5);
                let (s, bytes, chunks) = run_arm(cfg, arm, round, &plan, cancel)?;
                if arm == Arm::Base {
                    if s.huge_share > 0.0 {
                        return Err(thp_always());
                    }
                    footprint = bytes;
                }
                if arm == Arm::Plan {
                    plan_chunks = plan_chunks.max(chunks);
                }
                samples.push(PromoteBenchSample { quiet: q, ..s });
                progress(total - runs + samples.len() as u64, total);
            }
            Ok(())
        },
    )?;
    let summary = summarize_arms(&samples);
    let mut w = PromoteBenchWorkload {
        stopped: Some(stopped),
        workload: format!("{}:{}", cfg.kernel.name(), cfg.graph),
        unit: PromoteBenchWorkload::SECONDS.into(),
        bytes: footprint,
        reads: u64::from(cfg.trials),
        graph: Some(hugewise_results::promote::GraphWorkload {
            kernel: cfg.kernel.name().to_string(),
            graph: cfg.graph.clone(),
            plan: plan.display().to_string(),
            plan_made_s,
            spec: Some(cfg.kernel),
            threads: cfg.threads,
        }),
        budget_share: cfg.budget_share,
        plan_chunks,
        interval_ms: cfg.interval.as_millis() as u64,
        sample_every: cfg.sample_every,
        compact: Some(cfg.compact.name().into()),
        fault_waits: Some(cfg.fault_waits),
        walk_ns: Some(cfg.walk_ns),
        nice: Some(cfg.nice),
        samples,
        summary,
        ..PromoteBenchWorkload::default()
    };
    w.fill_headline();
    Ok(w)
}

fn thp_always() -> Error {
    Error::Config(
        "THP is `always`, so the base arm's run would get huge pages without asking: run with \
         THP `madvise` (hugewise env thp --enabled madvise) so that it faults 4 KiB pages"
            .into(),
    )
}

/// A given plan is read and its `pcc` plan at the budget found before any arm runs, not when
/// the plan arm's turn comes minutes later.
fn check_plan(path: &Path, budget_share: f64) -> Result<()> {
    let plans = read_kind(
        path,
        "a promotion plan (from hugewise sim --plan)",
        |r| match r {
            AnyResult::Plans(p) => Ok(p.result),
            other => Err(other),
        },
    )?;
    hugewise_promote::plan::select(&plans, Some(POLICY), Some(budget_share))
        .map(|_| ())
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

/// Trace the kernel (PageRank: one iteration) and simulate `pcc` at the budget: the plan file.
fn make_plan(cfg: &Config, cancel: &AtomicBool) -> Result<PathBuf> {
    let trace = cfg.work_dir.join("plan.hwt");
    let plan = cfg.work_dir.join("plan.json");
    let kernel = match cfg.kernel {
        // Every iteration reads alike; a trace of more only takes longer.
        Spec::Pr {
            mode, tolerance, ..
        } => Spec::Pr {
            mode,
            tolerance,
            max_iters: 1,
        },
        k => k,
    };
    let capture = crate::capture::Config {
        input: Input::parse(&cfg.graph)?,
        load: LoadOptions {
            fit: hugewise_graph::fits::Fit {
                vertex_extra_bytes: 0,
                ..cfg.load.fit
            },
            ..cfg.load
        },
        layout: Layout::default(),
        kernel,
        threads: cfg.threads.unwrap_or(1),
        reorder: None,
        reorder_cache: None,
        sources: cfg.sources.clone(),
        out: trace.clone(),
        rate_runs: 1,
        // The arms check nothing either; PageRank's serial reference on kron:26 would take
        // longer than the whole benchmark.
        verify: false,
        calibrate_runs: 0,
    };
    worker::call::<serde::de::IgnoredAny>(&cfg.exe, &Request::Trace(capture), cancel)?;
    let sim = worker::call::<serde::de::IgnoredAny>(
        &cfg.exe,
        &Request::Simulate(SimulateRequest {
            trace: trace.clone(),
            policies: vec![POLICY.into()],
            budgets: vec![cfg.budget_share],
            tlb: "haswell".into(),
            plan: plan.clone(),
        }),
        cancel,
    );
    // The trace is as large as the graph; the plan is what is kept.
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(trace.with_extension("hwt.json"));
    sim?;
    Ok(plan)
}

/// The run an arm asks for: `pages` for every array, `trials` in all.
fn run_request(cfg: &Config, pages: &str, trials: u32) -> Result<RunRequest> {
    Ok(RunRequest::new(kernel_run::Config {
        input: Input::parse(&cfg.graph)?,
        load: cfg.load,
        layout: Layout::parse(pages, "natural")?,
        kernel: cfg.kernel,
        reorder: None,
        reorder_cache: None,
        trials,
        sources: cfg.sources.clone(),
        verify: false,
        threads: cfg.threads.unwrap_or_else(kernel_run::overcommit::cpus),
        sample_every: None,
        replay: None,
    }))
}

/// Keep a worker's result in the work directory, as a result file of its kind.
fn keep<T: Kind>(cfg: &Config, path: &Path, result: T) -> Result<()> {
    let meta = crate::meta::collect(
        env!("CARGO_PKG_VERSION"),
        vec![cfg.exe.display().to_string(), worker::COMMAND.into()],
    );
    crate::save::write_json(path, &Saved::new(meta, result))
}

/// One arm's run: its sample (quiet not yet set), its arrays' footprint, and the plan's
/// steps that promoted (plan arm).
fn run_arm(
    cfg: &Config,
    arm: Arm,
    round: u32,
    plan: &Path,
    cancel: &AtomicBool,
) -> Result<(PromoteBenchSample, u64, u64)> {
    let out = cfg
        .work_dir
        .join(format!("round{round}-{}.json", arm.name()));
    let record = cfg
        .work_dir
        .join(format!("round{round}-{}-promote.json", arm.name()));
    let pages = match arm {
        Arm::Ideal => "all=thp",
        // No advice: 4 KiB faults under THP `madvise`, and collapse stays allowed.
        Arm::Base | Arm::Plan | Arm::Daemon => "all=system",
    };
    let mut run = run_request(cfg, pages, cfg.trials + setup_trials(cfg, arm))?;
    let t0 = Instant::now();
    let (report, session) = match arm {
        Arm::Plan => {
            run.config.replay = Some(Replay {
                plan: plan.to_path_buf(),
                policy: Some(POLICY.into()),
                budget_share: Some(cfg.budget_share),
            });
            (
                worker::call::<RunReport>(&cfg.exe, &Request::Run(run), cancel)?,
                None,
            )
        }
        Arm::Daemon => {
            run.config.sample_every = Some(cfg.sample_every);
            let p: PromotedRun = worker::call(
                &cfg.exe,
                &Request::Promote(PromoteRequest {
                    policy: POLICY.into(),
                    budget_share: cfg.budget_share,
                    interval: cfg.interval,
                    target: run,
                    compact: Some(cfg.compact.name().into()),
                    fault_waits: Some(cfg.fault_waits),
                    warm: Some(cfg.warm),
                    walk_ns: Some(cfg.walk_ns),
                    nice: Some(cfg.nice),
                }),
                cancel,
            )?;
            (p.run, Some(p.session))
        }
        Arm::Base | Arm::Ideal => (
            worker::call::<RunReport>(&cfg.exe, &Request::Run(run), cancel)?,
            None,
        ),
    };
    let wall_ns = t0.elapsed().as_nanos() as u64;
    keep(cfg, &out, report.clone())?;
    if let Some(d) = &session {
        keep(cfg, &record, d.clone())?;
    }
    let timed: Vec<f64> = report
        .trials
        .iter()
        .skip(setup_trials(cfg, arm) as usize)
        .map(|t| t.kernel_ns as f64 / 1e9)
        .collect();
    let time = median(&timed).ok_or_else(|| {
        Error::Config(format!(
            "{}: no timed trial after the warm-up",
            out.display()
        ))
    })?;
    let footprint: u64 = report.regions.iter().map(|r| r.data_bytes).sum();
    let mut s = PromoteBenchSample {
        huge_share: report.huge_footprint_share,
        setup_ns: report.load.load_ns,
        wall_ns,
        ..PromoteBenchSample::timed(round, arm, time)
    };
    let mut chunks = 0;
    if let Some(r) = &report.replay {
        s.collapse_ns = collapse_latencies(&r.actions);
        s.promotions = Some((r.totals.promoted as u32, r.totals.promote_failed as u32));
        chunks = r.totals.promoted;
    }
    if let Some(d) = &session {
        daemon_fields(&mut s, d);
    }
    Ok((s, footprint, chunks))
}

/// Trials an arm's run makes and drops before its timed ones: the plan's replay starts with
/// the first trial (the run's own warm-up is before it), so its steps get a trial of their
/// own; and when trials differ by their sources, every arm drops one, to time the same ones.
pub fn setup_trials(cfg: &Config, arm: Arm) -> u32 {
    u32::from(arm == Arm::Plan || cfg.kernel.sources_per_trial() > 0)
}

fn collapse_latencies(actions: &[hugewise_results::promote::Action]) -> Vec<u64> {
    actions
        .iter()
        .filter(|a| a.kind == ActionKind::Promote && a.succeeded())
        .map(|a| a.latency_ns)
        .collect()
}

/// The daemon's cost and reach from its session record; its wall time stands for the run's.
fn daemon_fields(s: &mut PromoteBenchSample, d: &PromoteReport) {
    s.wall_ns = d.wall_ns;
    s.daemon_cpu_ns = d.totals.daemon_cpu_ns;
    s.reach_budget_ms = d.totals.reach_budget_ms;
    s.promotions = Some((d.totals.promoted as u32, d.totals.promote_failed as u32));
    s.demotions = Some((d.totals.demoted as u32, d.totals.swaps.map(|n| n as u32)));
    s.collapse_ns = collapse_latencies(&d.actions);
    s.compactions = Some((
        d.totals.compactions.unwrap_or(0) as u32,
        d.totals.compaction_cpu_ns.unwrap_or(0),
    ));
    s.reach_90_ms = d
        .intervals
        .iter()
        .find(|i| {
            i.huge_bytes_after >= hugewise_promote::compact::ninety_percent_of(i.budget_bytes)
        })
        .map(|i| i.t_ms);
    if let Some((cpu, wall)) = d
        .totals
        .reach_budget_ms
        .and_then(|reach| steady(&d.intervals, d.wall_ns, reach))
    {
        s.daemon_steady_cpu_ns = Some(cpu);
        s.daemon_steady_wall_ns = Some(wall);
    }
}

/// The daemon's CPU time and the wall time of its steady state: from the start of the look
/// after the one that filled the budget (which began at `reach_ms`) to the session's end
/// (`wall_ns` after its start). The look that filled the budget is the ramp's last: on
/// PageRank at kron:26 its 30 to 52 collapses took 0.2–0.4 s of a core, a third of what the
/// steady state's 80 s cost, when it was counted in. `None` when no look came after it.
fn steady(intervals: &[Interval], wall_ns: u64, reach_ms: f64) -> Option<(u64, u64)> {
    let mut after = intervals.iter().filter(|i| i.t_ms > reach_ms).peekable();
    let from_ns = (after.peek()?.t_ms * 1e6) as u64;
    let cpu = after.map(|i| i.cpu_ns).sum();
    Some((cpu, wall_ns.saturating_sub(from_ns)))
}

/// The result saved at `path`, when `pick` finds it the kind wanted (`what`).
fn read_kind<T>(
    path: &Path,
    what: &str,
    pick: impl FnOnce(AnyResult) -> std::result::Result<T, AnyResult>,
) -> Result<T> {
    // The results crate's error names the file already.
    let r = hugewise_sys::read::result(path).map_err(|e| Error::Config(e.to_string()))?;
    pick(r).map_err(|other| {
        Error::Config(format!(
            "{}: a {} result, not {what}",
            path.display(),
            other.schema()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_state_begins_with_the_look_after_the_one_that_filled_the_budget() {
        let look = |t_ms: f64, cpu_ns: u64| Interval {
            t_ms,
            cpu_ns,
            ..Interval::default()
        };
        // The budget filled in the look of 10 s, at 300 ms of collapses; the three after it
        // cost 4, 5 and 6 ms; the session ended 31 s after its start.
        let looks = [
            look(9_000.0, 50_000_000),
            look(10_000.0, 300_000_000),
            look(11_000.0, 4_000_000),
            look(12_000.0, 5_000_000),
            look(30_000.0, 6_000_000),
        ];
        assert_eq!(
            steady(&looks, 31_000_000_000, 10_000.0),
            Some((15_000_000, 20_000_000_000))
        );
        // Filled in the last look: no steady state to speak of.
        assert_eq!(steady(&looks, 31_000_000_000, 30_000.0), None);
    }
}
