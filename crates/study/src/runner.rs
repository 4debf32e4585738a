//! Running a study: its plan saved first (`study.json`), then each run in its machine shape
//! (always put back, also on error or cancellation), its result written atomically to
//! `runs/<id>.json` as soon as it exists. A resumed study skips the runs whose file reads back
//! as a whole result of that run; a half-written file cannot exist (atomic rename), and a file
//! that does not read back is run again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hugewise_env::scoped;
use hugewise_env::Host;
use hugewise_graph::cache::Cache;
use hugewise_graph::kernels::Spec;
use hugewise_graph::layout::{ALL_REGIONS, KERNEL_REGIONS};
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_mem::{Bytes, PagePolicy, PolicyMap};
use hugewise_results::env::{Plan as ShapePlan, PressureTarget};
use hugewise_results::study::{PlannedRun, Shape, StudyPlan, StudyTag, Work};
use hugewise_results::{AnyResult, Kind, Meta, Saved};
use hugewise_sim::curve::{self, CurveSpec};
use hugewise_sim::TlbConfig;

use hugewise_bench::{
    bloat, capture, faultbench, faultlat, packing, pagebench, promote, save, Error, Result,
};

use crate::swapsweep;

/// The plan's file in a study directory.
pub const PLAN_FILE: &str = "study.json";
/// The directory of run results in a study directory.
pub const RUNS_DIR: &str = "runs";
/// Generated graphs, built once per study and loaded by every run that uses them; removed
/// when every run of the study has finished.
pub const GRAPHS_DIR: &str = "graphs";
/// The TLB the simulated curves use: the seeds' evaluation machine, so that curves compare
/// across the machines a study runs on.
pub const CURVE_TLB: &str = "haswell";

/// How long a shaped run waits for another hugewise run to give the machine back.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Where a run's result goes.
pub fn run_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(RUNS_DIR).join(format!("{id}.json"))
}

/// How to run a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The study directory.
    pub dir: PathBuf,
    /// Skip runs already finished; without it a directory holding results is refused.
    pub resume: bool,
    /// Run only these runs (by id); empty: all.
    pub only: Vec<String>,
    /// Seed of graphs and sources.
    pub seed: u64,
    /// This program, whose `worker` command serves the points of `swap` runs and, as root, the
    /// daemon of `faultlat` runs (`None`: swap runs fail with a clear error, and the daemon runs
    /// in a thread of the faulting process).
    pub exe: Option<PathBuf>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Ran and saved.
    Done {
        /// The result file.
        path: PathBuf,
        /// Wall time, shaping included.
        wall_s: f64,
        /// Samples timed while other processes kept the CPUs busy.
        busy_samples: usize,
    },
    /// Already finished in an earlier run of the study.
    Kept(PathBuf),
    /// Failed; the study went on with the next run.
    Failed(String),
}

/// Hears how a study goes.
pub trait Observer {
    /// Run `index` of `total` starts.
    fn started(&mut self, index: usize, total: usize, run: &PlannedRun);
    /// The run reached a phase (`shaping`, `loading`, `timing`, `simulating`).
    fn phase(&mut self, phase: &str);
    /// Progress within the phase, in its own units.
    fn progress(&mut self, done: u64, total: u64);
    /// The run ended.
    fn finished(&mut self, index: usize, run: &PlannedRun, outcome: &Outcome);
}

/// Write the plan into `dir`, or, when `resume` and `dir` already holds a plan, check that it
/// is the same study and keep it (the ids of its runs name the files already there). Its
/// headlines' claims are taken from this build's plan: they are a view of the runs, not a
/// measurement, and a claim mended since (a metric, a kernel it is about) then reads the runs
/// already made.
pub fn prepare(dir: &Path, plan: &StudyPlan, meta: Meta, resume: bool) -> Result<StudyPlan> {
    let path = dir.join(PLAN_FILE);
    if path.exists() {
        let saved = match hugewise_sys::read::result(&path) {
            Ok(AnyResult::Study(s)) => *s,
            Ok(other) => {
                return Err(Error::Config(format!(
                    "{}: a {} result, not a study plan; choose another --out",
                    path.display(),
                    other.schema()
                )))
            }
            Err(e) => return Err(Error::Config(format!("{e}; choose another --out"))),
        };
        let old = &saved.result;
        if !resume {
            return Err(Error::Config(format!(
                "{} already holds a study ({}); give --resume to finish it, or another --out",
                dir.display(),
                old.preset
            )));
        }
        if old.preset == plan.preset && old.quick == plan.quick && !same_runs(old, plan) {
            return Err(Error::Config(format!(
                "{} holds a study of {}{} whose plan differs from the one asked for ({}); \
                 resume it with the options and the hugewise it was planned with, or choose \
                 another --out",
                dir.display(),
                old.preset,
                options(old),
                plan_change(old, plan)
            )));
        }
        if old.preset != plan.preset || old.quick != plan.quick {
            return Err(Error::Config(format!(
                "{} holds another study ({}{}, {} runs) than the one asked for; resume it with \
                 the same preset and options, or choose another --out",
                dir.display(),
                old.preset,
                options(old),
                old.runs.len()
            )));
        }
        if old.claims == plan.claims {
            return Ok(saved.result);
        }
        // The plan keeps its meta (the command, time and host it was made with).
        let kept = Saved {
            result: StudyPlan {
                claims: plan.claims.clone(),
                ..saved.result
            },
            ..saved
        };
        save::write_json(&path, &kept)?;
        return Ok(kept.result);
    }
    std::fs::create_dir_all(dir.join(RUNS_DIR)).map_err(|source| Error::Write {
        path: dir.join(RUNS_DIR),
        source,
    })?;
    save::write_json(&path, &Saved::new(meta, plan.clone()))?;
    Ok(plan.clone())
}

/// How the runs of `new` differ from those of `old`, in a few words: runs added, gone or
/// changed, the first three of each named.
fn plan_change(old: &StudyPlan, new: &StudyPlan) -> String {
    let ids = |p: &StudyPlan| -> Vec<String> { p.runs.iter().map(|r| r.id.clone()).collect() };
    let (was, now) = (ids(old), ids(new));
    let named = |what: &str, xs: Vec<&String>| -> Option<String> {
        (!xs.is_empty()).then(|| {
            let first: Vec<&str> = xs.iter().take(3).map(|s| s.as_str()).collect();
            let more = if xs.len() > 3 { ", ..." } else { "" };
            format!("{} {what}: {}{more}", xs.len(), first.join(", "))
        })
    };
    let changed: Vec<&String> = old
        .runs
        .iter()
        .filter(|o| {
            new.runs
                .iter()
                .any(|n| n.id == o.id && (n.work != o.work || n.shape != o.shape))
        })
        .map(|o| &o.id)
        .collect();
    let parts: Vec<String> = [
        named("new", now.iter().filter(|id| !was.contains(id)).collect()),
        named("gone", was.iter().filter(|id| !now.contains(id)).collect()),
        named("changed", changed),
    ]
    .into_iter()
    .flatten()
    .collect();
    let what = if parts.is_empty() {
        "the same runs in another order".to_string()
    } else {
        parts.join("; ")
    };
    format!("{} runs then, {} now; {what}", was.len(), now.len())
}

fn same_runs(a: &StudyPlan, b: &StudyPlan) -> bool {
    a.runs.len() == b.runs.len()
        && a.runs
            .iter()
            .zip(&b.runs)
            .all(|(x, y)| x.id == y.id && x.work == y.work && x.shape == y.shape)
}

/// Where the generated graph `spec` is kept for the study in `dir`: named by the generators'
/// output version too, so that a study resumed by a hugewise whose generators changed makes
/// the graph anew instead of measuring the old one.
pub fn graph_path(dir: &Path, spec: &str, seed: u64) -> PathBuf {
    let name: String = spec
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    dir.join(GRAPHS_DIR).join(format!(
        "{name}-seed{seed}-g{}.hwg",
        hugewise_graph::gen::OUTPUT_VERSION
    ))
}

/// The input a run loads: a generated graph from the study's cache (generating it the first
/// time: generation costs far more than loading), a file as it is. Weighted kernels hash
/// weights in [1, 255] onto the cached graph.
fn input_for(graph: &str, opts: &Options, threads: usize, obs: &mut dyn Observer) -> Result<Input> {
    let input = Input::parse(graph)?;
    if !matches!(input, Input::Gen(_)) {
        return Ok(input);
    }
    let path = graph_path(&opts.dir, graph, opts.seed);
    if !path.exists() {
        obs.phase(&format!("generating {graph}"));
        std::fs::create_dir_all(opts.dir.join(GRAPHS_DIR)).map_err(|source| Error::Write {
            path: opts.dir.join(GRAPHS_DIR),
            source,
        })?;
        let cfg = hugewise_bench::run::WriteConfig {
            input,
            load: load_options(opts.seed),
            reorder: None,
            out: path.clone(),
        };
        hugewise_bench::thread_pool(threads)?
            .install(|| hugewise_bench::run::write(&cfg, &mut |_| {}))?;
    }
    Ok(Input::File(path))
}

/// The options a plan was expanded with, as the command gave them (` --quick --scale 26`).
pub(crate) fn options(p: &StudyPlan) -> String {
    format!(
        "{}{}",
        if p.quick { " --quick" } else { "" },
        p.scale.map_or(String::new(), |s| format!(" --scale {s}"))
    )
}

/// Where a study keeps the reordered graphs of its runs: beside the graphs it generated.
fn reorder_cache(opts: &Options) -> Cache {
    Cache::new(opts.dir.join(GRAPHS_DIR).join("reordered"))
}

/// The reorderings `work` loads, each as the cache tells them apart (graph, method, weights
/// or not), with how many times it loads each.
fn reordered_loads(work: &Work) -> Vec<((&str, &str, bool), usize)> {
    let weighted = |kernel: &str| kernel_spec(kernel).is_ok_and(|k| k.needs_weights());
    match work {
        Work::Pages {
            graph,
            kernel,
            variants,
            ..
        } => {
            let mut methods: Vec<&str> = variants
                .iter()
                .filter_map(|v| v.reorder.as_deref())
                .collect();
            methods.sort_unstable();
            methods.dedup();
            methods
                .into_iter()
                .map(|m| ((graph.as_str(), m, weighted(kernel)), 1))
                .collect()
        }
        Work::Curve {
            graph,
            kernel,
            reorder: Some(m),
            ..
        } => vec![((graph.as_str(), m.as_str(), weighted(kernel)), 1)],
        Work::Swap {
            graph,
            kernel,
            reorder: Some(m),
            shares,
            factors,
            ..
        } => vec![(
            (graph.as_str(), m.as_str(), weighted(kernel)),
            shares.len() * factors.len(),
        )],
        _ => Vec::new(),
    }
}

/// The cache for `run`'s reorderings when the plan loads one of them more than once (a later
/// run, or another point of the same run, reads what this one keeps); `None` otherwise, so
/// that a study does not write a graph nobody reads again.
fn reorder_cache_for(plan: &StudyPlan, run: &PlannedRun, opts: &Options) -> Option<Cache> {
    let mine = reordered_loads(&run.work);
    let reused = mine.iter().any(|(key, _)| {
        let loads: usize = plan
            .runs
            .iter()
            .flat_map(|r| reordered_loads(&r.work))
            .filter(|(k, _)| k == key)
            .map(|(_, n)| n)
            .sum();
        loads > 1
    });
    reused.then(|| reorder_cache(opts))
}

fn load_options(seed: u64) -> LoadOptions {
    LoadOptions {
        seed,
        weighted: false,
        symmetrize: true,
        fit: Default::default(),
    }
}

/// Whether run `id` has a whole result in `dir`.
pub fn finished(dir: &Path, id: &str) -> bool {
    let Ok(r) = hugewise_sys::read::result(&run_path(dir, id)) else {
        return false;
    };
    let meta = match &r {
        AnyResult::Pages(s) => &s.meta,
        AnyResult::Curves(s) => &s.meta,
        AnyResult::Faultlat(s) => &s.meta,
        AnyResult::Swap(s) => &s.meta,
        AnyResult::BenchBloat(s) => &s.meta,
        AnyResult::BenchPacking(s) => &s.meta,
        AnyResult::BenchPromote(s) => &s.meta,
        _ => return false,
    };
    meta.study.as_ref().is_some_and(|t| t.run == id)
}

/// Run `plan` (already [`prepare`]d in `opts.dir`). A run that fails is reported and the study
/// goes on; cancellation stops it after putting the machine back, with
/// [`Error::Interrupted`].
pub fn execute(
    plan: &StudyPlan,
    opts: &Options,
    meta: &dyn Fn() -> Meta,
    obs: &mut dyn Observer,
    cancel: &dyn Fn() -> bool,
) -> Result<Vec<(String, Outcome)>> {
    for id in &opts.only {
        if !plan.runs.iter().any(|r| &r.id == id) {
            return Err(Error::Config(format!(
                "the study has no run '{id}' (its runs: {})",
                plan.runs
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let chosen: Vec<&PlannedRun> = plan
        .runs
        .iter()
        .filter(|r| opts.only.is_empty() || opts.only.contains(&r.id))
        .collect();
    let mut outcomes = Vec::new();
    for (i, run) in chosen.iter().enumerate() {
        if cancel() {
            return Err(Error::Interrupted);
        }
        obs.started(i, chosen.len(), run);
        let outcome = if opts.resume && finished(&opts.dir, &run.id) {
            Outcome::Kept(run_path(&opts.dir, &run.id))
        } else {
            match one(plan, run, opts, meta, obs, cancel) {
                Ok(o) => o,
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        };
        obs.finished(i, run, &outcome);
        outcomes.push((run.id.clone(), outcome));
    }
    // Every run of the study is saved: the generated graphs are no longer needed (a single
    // run, as a scheduler's task, leaves them to its siblings).
    if opts.only.is_empty() && plan.runs.iter().all(|r| finished(&opts.dir, &r.id)) {
        let _ = std::fs::remove_dir_all(opts.dir.join(GRAPHS_DIR));
    }
    Ok(outcomes)
}

/// The machine shape `shape` asks for, for a run holding `footprint` bytes.
fn shape_plan(shape: &Shape, footprint: Option<u64>) -> Result<ShapePlan> {
    let mut p = ShapePlan::new();
    p.fragment = shape.fragment;
    p.fragment_pages = shape.fragment_pages;
    p.compaction_proactiveness = shape.proactiveness;
    if let Some(extra) = shape.free_beyond_footprint_bytes {
        let f = footprint.ok_or_else(|| {
            Error::Config(
                "memory pressure is set against the run's footprint, which is not known for \
                 this input"
                    .into(),
            )
        })?;
        p.pressure = Some(PressureTarget::Leave(f.saturating_add(extra)));
    }
    Ok(p)
}

/// Run one planned run: shape, work, save, put back.
fn one(
    plan: &StudyPlan,
    run: &PlannedRun,
    opts: &Options,
    meta: &dyn Fn() -> Meta,
    obs: &mut dyn Observer,
    cancel: &dyn Fn() -> bool,
) -> Result<Outcome> {
    let t0 = Instant::now();
    let shaped = if run.shape.is_none() {
        None
    } else {
        obs.phase("shaping");
        let host = Host::real();
        let sp = shape_plan(&run.shape, run.footprint_bytes)?;
        // Another hugewise run shaping the machine holds the env lock: wait for it (a shaped
        // run must have the machine to itself), up to LOCK_WAIT, then give up on this run.
        let waited = Instant::now();
        let shaped = loop {
            match scoped::shape(&host, &sp, cancel, &mut |_, d, t| obs.progress(d, t)) {
                Err(hugewise_env::Error::Busy { pid, .. }) if waited.elapsed() < LOCK_WAIT => {
                    obs.phase(&format!(
                        "waiting for another hugewise run (pid {pid}) to put the machine back"
                    ));
                    if cancel() {
                        return Err(Error::Interrupted);
                    }
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
                Err(hugewise_env::Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => {
                    return Err(Error::Config(format!(
                        "shaping the machine ({}): {e}",
                        run.shape.describe()
                    )))
                }
                Ok(s) => break s,
            }
        };
        obs.phase("shaped");
        Some(shaped)
    };
    let mut m = meta();
    m.study = Some(Box::new(StudyTag {
        preset: plan.preset.clone(),
        run: run.id.clone(),
        label: run.label.clone(),
        shape: run.shape.clone(),
        shaped: shaped.as_ref().map(|s| s.report().clone()),
    }));
    let path = run_path(&opts.dir, &run.id);
    let work = work(plan, run, opts, obs, cancel);
    // The machine is put back before the result is judged or written.
    if let Some(s) = shaped {
        s.finish()
            .map_err(|e| Error::Config(format!("putting the machine back: {e}")))?;
    }
    // A bench stopped by a signal keeps the rounds it had done, and a run the signal made fail
    // fails with another error; a study saves neither as the run, which --resume then runs
    // again whole.
    if cancel() {
        return Err(Error::Interrupted);
    }
    let done = work?;
    let busy_samples = match done {
        Done::Pages(r) => {
            let busy = busy(r.samples.iter().map(|s| &s.quiet));
            write(&path, m, r)?;
            busy
        }
        Done::Curves(r) => {
            write(&path, m, *r)?;
            0
        }
        Done::Faultlat(r) => {
            write(&path, m, r)?;
            0
        }
        Done::FaultBench(r) => {
            let busy = busy(r.samples.iter().map(|s| &s.quiet));
            write(&path, m, r)?;
            busy
        }
        Done::Swap(r) => {
            write(&path, m, r)?;
            0
        }
        Done::Bloat(r) => {
            write(&path, m, r)?;
            0
        }
        Done::Packing(r) => {
            write(&path, m, *r)?;
            0
        }
        Done::Promote(r) => {
            let samples = r.workloads.iter().flat_map(|w| &w.samples);
            let busy = busy(samples.map(|s| &s.quiet));
            write(&path, m, r)?;
            busy
        }
    };
    Ok(Outcome::Done {
        path,
        wall_s: t0.elapsed().as_secs_f64(),
        busy_samples,
    })
}

/// Samples taken while other processes kept the machine busy.
fn busy<'a>(quiet: impl Iterator<Item = &'a Option<hugewise_results::stats::Quiet>>) -> usize {
    quiet
        .filter(|q| q.as_ref().is_some_and(|q| q.busy()))
        .count()
}

fn write<T: Kind>(path: &Path, meta: Meta, r: T) -> Result<()> {
    save::write_json(path, &Saved::new(meta, r))
}

enum Done {
    Pages(hugewise_results::pagebench::PagesReport),
    Curves(Box<hugewise_results::sim::Curves>),
    Faultlat(hugewise_results::faultlat::FaultlatReport),
    FaultBench(hugewise_results::faultlat::FaultBenchReport),
    Swap(hugewise_results::swapstudy::SwapStudy),
    Bloat(hugewise_results::bloat::BloatReport),
    Packing(Box<hugewise_results::packing::PackingReport>),
    Promote(hugewise_results::promote::PromoteBenchReport),
}

fn config(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Config(format!("{what}: {e}"))
}

fn kernel_spec(name: &str) -> Result<Spec> {
    Spec::default_for(name).ok_or_else(|| config("kernel", format!("unknown kernel '{name}'")))
}

fn work(
    plan: &StudyPlan,
    run: &PlannedRun,
    opts: &Options,
    obs: &mut dyn Observer,
    cancel: &dyn Fn() -> bool,
) -> Result<Done> {
    let load = load_options(opts.seed);
    match &run.work {
        Work::Pages {
            graph,
            kernel,
            variants,
            rounds,
        } => {
            let first = variants.first().ok_or_else(|| config("variants", "none"))?;
            let graph_pages = PolicyMap::parse(&first.graph_pages, ALL_REGIONS)
                .map_err(|e| config(&first.name, e))?;
            let vs = variants
                .iter()
                .map(|v| -> Result<pagebench::Variant> {
                    let own = v.graph_pages != first.graph_pages;
                    Ok(pagebench::Variant {
                        name: Some(v.name.clone()),
                        kernel_pages: PolicyMap::parse(&v.kernel_pages, KERNEL_REGIONS)
                            .map_err(|e| config(&v.name, e))?,
                        graph_pages: if own {
                            Some(
                                PolicyMap::parse(&v.graph_pages, ALL_REGIONS)
                                    .map_err(|e| config(&v.name, e))?,
                            )
                        } else {
                            None
                        },
                        reorder: match &v.reorder {
                            Some(m) => Some(
                                m.parse()
                                    .map_err(|e: hugewise_graph::Error| config(&v.name, e))?,
                            ),
                            None => None,
                        },
                        kernel_first: v.kernel_first,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let cfg = pagebench::Config {
                input: input_for(graph, opts, plan.threads, obs)?,
                load,
                graph_pages,
                kernel: kernel_spec(kernel)?,
                variants: vs,
                rounds: *rounds,
                until: Default::default(),
                threads: plan.threads,
                reorder_cache: reorder_cache_for(plan, run, opts),
                // A shaped machine's free memory, and its few whole blocks when fragmented,
                // are for the arrays the run measures, not for the cache of the graph file it
                // read before them; its unfragmented reference drops it too.
                drop_file_cache: !run.shape.is_none(),
                // A shaped machine's free memory is held to the footprint of every copy (the
                // plan counts them all): built in turn, they would leave more free than the
                // shape asks.
                copies: if run.shape.is_none() {
                    pagebench::Copies::Auto
                } else {
                    pagebench::Copies::Held
                },
            };
            obs.phase("loading");
            let mut r = pagebench::run_with(
                &cfg,
                &mut |d, t| {
                    if d == 0 {
                        obs.phase("timing");
                    }
                    obs.progress(d, t)
                },
                cancel,
            )?;
            r.graph_spec = graph.clone();
            Ok(Done::Pages(r))
        }
        Work::Curve {
            graph,
            kernel,
            policies,
            budgets,
            reorder,
            max_iters,
            phys,
        } => {
            let phys = match phys {
                Some(p) => Some(
                    p.parse::<hugewise_sim::physmem::PhysSpec>()
                        .map_err(|e| config("phys", e))?,
                ),
                None => None,
            };
            let tmp = opts.dir.join(RUNS_DIR).join(format!(".{}.hwt", run.id));
            let mut spec = kernel_spec(kernel)?;
            if let (Spec::Pr { max_iters: cap, .. }, Some(n)) = (&mut spec, max_iters) {
                *cap = *n;
            }
            let cfg = capture::Config {
                input: input_for(graph, opts, 1, obs)?,
                load,
                layout: Default::default(),
                kernel: spec,
                threads: 1,
                reorder: match reorder {
                    Some(m) => Some(m.parse()?),
                    None => None,
                },
                reorder_cache: reorder_cache_for(plan, run, opts),
                sources: Vec::new(),
                out: tmp.clone(),
                rate_runs: 3,
                verify: true,
                calibrate_runs: 0,
            };
            obs.phase("tracing");
            let traced = capture::capture(&cfg);
            let curves = traced.and_then(|_| {
                if cancel() {
                    return Err(Error::Interrupted);
                }
                obs.phase("simulating");
                let spec = CurveSpec {
                    policies: policies
                        .join(",")
                        .parse::<hugewise_sim::PolicyList>()
                        .map_err(|e| config("policies", e))?
                        .0,
                    budgets: budgets.clone(),
                    tlb: TlbConfig::resolve(CURVE_TLB).map_err(|e| config("tlb", e))?,
                    accesses_per_s: None,
                    time_scale: None,
                    calibration: None,
                    reuse: false,
                    warmup_accesses: None,
                    phys: phys.clone(),
                };
                let stop = std::sync::atomic::AtomicBool::new(false);
                let (c, _) =
                    curve::run(&tmp, &spec, &(), &stop).map_err(|e| config("simulating", e))?;
                Ok(c)
            });
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(hugewise_trace::meta::sidecar(&tmp));
            Ok(Done::Curves(Box::new(curves?)))
        }
        Work::Faultlat {
            size_bytes,
            policy,
            then_collapse,
        } => {
            obs.phase("faulting");
            let cfg = faultlat::Config {
                bytes: Bytes(*size_bytes),
                policy: policy
                    .parse::<PagePolicy>()
                    .map_err(|e| config("policy", e))?,
                then_collapse: *then_collapse,
                force: false,
            };
            Ok(Done::Faultlat(faultlat::run(&cfg, &mut |d, t| {
                obs.progress(d, t)
            })?))
        }
        Work::FaultBench {
            size_bytes,
            rounds,
            policy,
            fault_waits,
        } => {
            obs.phase("faulting beside the daemon");
            let cfg = faultbench::Config {
                bytes: Bytes(*size_bytes),
                rounds: *rounds,
                until: Default::default(),
                policy: policy.clone(),
                budget_share: 1.0,
                fault_waits: *fault_waits,
                warm: true,
                nice: hugewise_promote::daemon::Config::default().nice,
                interval: std::time::Duration::from_secs(1),
                force: false,
                daemon_in: faultbench::DaemonIn::auto(opts.exe.clone()),
                settle: false,
            };
            let stop = AtomicBool::new(cancel());
            Ok(Done::FaultBench(faultbench::run(
                &cfg,
                &stop,
                &mut |d, t| {
                    if cancel() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    obs.progress(d, t)
                },
            )?))
        }
        Work::Swap {
            graph,
            kernel,
            pages,
            reorder,
            shares,
            factors,
            page_cluster,
            trials,
        } => {
            let exe = opts.exe.clone().ok_or_else(|| {
                config(
                    "swap",
                    "a swap run needs the hugewise program to run its points",
                )
            })?;
            let Input::File(file) = input_for(graph, opts, plan.threads, obs)? else {
                return Err(config("swap", "the graph must be a file or a generator"));
            };
            let cfg = swapsweep::Config {
                exe,
                graph_spec: graph.clone(),
                graph: file,
                seed: opts.seed,
                kernel: kernel.clone(),
                pages: pages.clone(),
                reorder: reorder.clone(),
                reorder_cache: reorder_cache_for(plan, run, opts).map(|c| c.dir().to_path_buf()),
                shares: shares.clone(),
                factors: factors.clone(),
                page_cluster: *page_cluster,
                trials: *trials,
                swap_file: swapsweep::swap_file(&run.id),
            };
            obs.phase("swapping");
            obs.progress(0, (shares.len() * factors.len()) as u64);
            Ok(Done::Swap(swapsweep::run(
                &cfg,
                &mut |d, t| obs.progress(d as u64, t as u64),
                cancel,
            )?))
        }
        Work::Bloat {
            keys,
            value_bytes,
            delete_share,
            variants,
            rounds,
        } => {
            let cfg = bloat::Config::new(
                *keys,
                *value_bytes,
                *delete_share,
                *rounds,
                &variants.join(";"),
                None,
            )?;
            obs.phase("serving");
            Ok(Done::Bloat(bloat::run(
                &cfg,
                &hugewise_env::Host::real(),
                cancel,
                &mut |d, t| obs.progress(d, t),
            )?))
        }
        Work::Promote {
            graph,
            kernel,
            bytes,
            reads,
            rounds,
            budget_share,
            compact,
            interval_ms,
        } => {
            let compact = hugewise_promote::compact::Mode::from_name(compact).ok_or_else(|| {
                config("compact", format!("'{compact}' is not off, auto or always"))
            })?;
            // A generated graph is made once for the study and loaded from its file.
            let graph_file = match graph {
                Some(g) => Some(match input_for(g, opts, plan.threads, obs)? {
                    Input::File(f) => f.display().to_string(),
                    _ => g.clone(),
                }),
                None => None,
            };
            obs.phase("promoting");
            let stop = AtomicBool::new(cancel());
            let mut progress = |d: u64, t: u64| {
                if cancel() {
                    stop.store(true, Ordering::Relaxed);
                }
                obs.progress(d, t)
            };
            let interval = std::time::Duration::from_millis(*interval_ms);
            let report = match graph_file {
                None => promote::driver::run(
                    &promote::driver::Config {
                        bytes: Bytes(*bytes),
                        workloads: vec![promote::driver::Workload::hotspot()],
                        reads: *reads,
                        rounds: *rounds,
                        until: Default::default(),
                        budget_share: *budget_share,
                        interval,
                        sample_every: 64,
                        seed: opts.seed,
                        same_frames: false,
                        cold_first: false,
                        force: false,
                        compact,
                        fault_waits: hugewise_promote::daemon::Config::default().fault_waits,
                        warm: true,
                        walk_ns: hugewise_promote::daemon::Config::default().walk_ns,
                        nice: hugewise_promote::daemon::Config::default().nice,
                        shape: None,
                    },
                    &stop,
                    &mut progress,
                )?,
                Some(g) => {
                    let exe = opts.exe.clone().ok_or_else(|| {
                        config(
                            "promote",
                            "a graph kernel's arms need the hugewise program to run them",
                        )
                    })?;
                    let work_dir = opts.dir.join(RUNS_DIR).join(format!(".{}.work", run.id));
                    let cfg = promote::graph::Config {
                        exe,
                        kernel: kernel_spec(kernel.as_deref().unwrap_or("pr"))?,
                        graph: g,
                        load: LoadOptions::for_kernel(1),
                        threads: Some(plan.threads),
                        sources: Vec::new(),
                        trials: *reads as u32,
                        rounds: *rounds,
                        until: Default::default(),
                        budget_share: *budget_share,
                        interval,
                        sample_every: 64,
                        plan: None,
                        work_dir: work_dir.clone(),
                        compact,
                        fault_waits: hugewise_promote::daemon::Config::default().fault_waits,
                        warm: true,
                        walk_ns: hugewise_promote::daemon::Config::default().walk_ns,
                        nice: hugewise_promote::daemon::Config::default().nice,
                    };
                    std::fs::create_dir_all(&work_dir).map_err(|source| Error::Write {
                        path: work_dir.clone(),
                        source,
                    })?;
                    let w = promote::graph::run(&cfg, &stop, &mut progress);
                    let _ = std::fs::remove_dir_all(&work_dir);
                    hugewise_results::promote::PromoteBenchReport {
                        workloads: vec![w?],
                        stopped: None,
                    }
                }
            };
            Ok(Done::Promote(report))
        }
        Work::Packing {
            records,
            hops,
            hot_arena_bytes,
            rounds,
        } => {
            let scratch = packing::scratch()?;
            let bin = packing::build_workload(scratch.path())?;
            let cfg = packing::Config {
                argv: vec![
                    bin.display().to_string(),
                    records.to_string(),
                    hops.to_string(),
                ],
                preload: hugewise_exec::run::find_preload(None)?,
                rounds: *rounds,
                until: Default::default(),
                options: hugewise_exec::placement::Options {
                    hot_arena: *hot_arena_bytes,
                    min_share: 0.5,
                },
                metric: Some("time_s".into()),
                scratch: scratch.path().to_path_buf(),
            };
            obs.phase("profiling, then running");
            // The program runs under a flag; the study's cancel is asked after every run.
            let stop = AtomicBool::new(cancel());
            packing::run(&cfg, &hugewise_env::Host::real(), &stop, &mut |d, t| {
                if cancel() {
                    stop.store(true, Ordering::Relaxed);
                }
                obs.progress(d, t)
            })
            .map(|r| Done::Packing(Box::new(r)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{self, Options as PresetOptions};

    struct Quiet;
    impl Observer for Quiet {
        fn started(&mut self, _: usize, _: usize, _: &PlannedRun) {}
        fn phase(&mut self, _: &str) {}
        fn progress(&mut self, _: u64, _: u64) {}
        fn finished(&mut self, _: usize, _: &PlannedRun, _: &Outcome) {}
    }

    fn meta() -> Meta {
        hugewise_bench::meta::collect("0.0.0", vec!["test".into()])
    }

    fn smoke() -> StudyPlan {
        presets::expand(
            "smoke",
            &PresetOptions {
                quick: true,
                scale: None,
                repeat: Some(1),
                threads: 2,
            },
        )
        .expect("smoke")
    }

    fn opts(dir: &Path, resume: bool) -> Options {
        Options {
            exe: None,
            dir: dir.to_path_buf(),
            resume,
            only: Vec::new(),
            seed: 1,
        }
    }

    #[test]
    fn a_run_keeps_its_reordered_graph_only_when_the_plan_reads_it_again() {
        let plan = presets::expand(
            "quick",
            &PresetOptions {
                quick: false,
                scale: None,
                repeat: Some(1),
                threads: 2,
            },
        )
        .expect("quick");
        let o = opts(Path::new("/s"), false);
        let cached: Vec<(&str, bool)> = plan
            .runs
            .iter()
            .filter(|r| matches!(r.work, Work::Pages { .. }))
            .map(|r| (r.id.as_str(), reorder_cache_for(&plan, r, &o).is_some()))
            .collect();
        // bfs and pr load the same unweighted DBG copy of kron:22; sssp's carries weights and
        // is loaded once.
        assert_eq!(
            cached,
            [
                ("bfs-kron22", true),
                ("sssp-kron22", false),
                ("pr-kron22", true)
            ]
        );
        let cache = reorder_cache_for(&plan, &plan.runs[0], &o).expect("cached");
        assert_eq!(cache.dir(), Path::new("/s/graphs/reordered"));
    }

    #[test]
    fn a_changed_plan_is_described_by_the_runs_added_gone_and_changed() {
        let old = smoke();
        let mut new = old.clone();
        let mut added = new.runs[0].clone();
        added.id = "added".into();
        new.runs.push(added);
        assert_eq!(
            plan_change(&old, &new),
            format!(
                "{} runs then, {} now; 1 new: added",
                old.runs.len(),
                old.runs.len() + 1
            )
        );
        new.runs[0].shape.fragment = Some(0.5);
        let change = plan_change(&new, &old);
        assert!(change.contains("1 gone: added; 1 changed: "), "{change}");
    }

    #[test]
    fn runs_save_tagged_results_and_a_resume_keeps_them() {
        let d = tempfile::tempdir().expect("tmp");
        let plan = prepare(d.path(), &smoke(), meta(), false).expect("prepare");
        let out =
            execute(&plan, &opts(d.path(), false), &meta, &mut Quiet, &|| false).expect("execute");
        let id = &plan.runs[0].id;
        assert!(matches!(out[0].1, Outcome::Done { .. }), "{out:?}");
        assert!(finished(d.path(), id));
        let Ok(AnyResult::Pages(s)) = hugewise_sys::read::result(&run_path(d.path(), id)) else {
            panic!("not a pages result");
        };
        let tag = s.meta.study.expect("tagged");
        assert_eq!(
            (tag.preset.as_str(), tag.run.as_str()),
            ("smoke", id.as_str())
        );
        assert!(tag.shaped.is_none());

        // Without --resume the directory is refused; with it the run is kept.
        assert!(prepare(d.path(), &smoke(), meta(), false).is_err());
        let plan = prepare(d.path(), &smoke(), meta(), true).expect("resume");
        let out =
            execute(&plan, &opts(d.path(), true), &meta, &mut Quiet, &|| false).expect("resume");
        assert!(matches!(out[0].1, Outcome::Kept(_)), "{out:?}");

        // A claim mended since the plan was written is this build's on resume, saved with it;
        // the runs stay as they were, and so does the plan's meta (its command and time).
        let read = || match hugewise_sys::read::result(&d.path().join(PLAN_FILE)) {
            Ok(AnyResult::Study(s)) => s,
            _ => panic!("not a plan"),
        };
        let before = read();
        let mut mended = smoke();
        mended.claims[0].what = "a claim said better".into();
        let mut later = meta();
        later.command = vec!["hugewise".into(), "study".into(), "--resume".into()];
        let kept = prepare(d.path(), &mended, later, true).expect("resume with a mended claim");
        assert_eq!(kept.claims, mended.claims);
        assert_eq!(kept.runs, plan.runs);
        let saved = read();
        assert_eq!(saved.result.claims[0].what, "a claim said better");
        assert_eq!(saved.meta, before.meta, "the plan's own meta");
    }

    #[test]
    fn a_result_that_does_not_read_back_is_run_again() {
        let d = tempfile::tempdir().expect("tmp");
        let plan = prepare(d.path(), &smoke(), meta(), false).expect("prepare");
        let id = plan.runs[0].id.clone();
        std::fs::write(run_path(d.path(), &id), b"{\"schema\": \"hugewise/bench-pa").expect("w");
        assert!(!finished(d.path(), &id));
        let out =
            execute(&plan, &opts(d.path(), true), &meta, &mut Quiet, &|| false).expect("execute");
        assert!(matches!(out[0].1, Outcome::Done { .. }), "{out:?}");
        assert!(finished(d.path(), &id));
    }

    #[test]
    fn cancellation_stops_before_the_next_run_and_unknown_runs_are_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let plan = prepare(d.path(), &smoke(), meta(), false).expect("prepare");
        let e = execute(&plan, &opts(d.path(), false), &meta, &mut Quiet, &|| true)
            .expect_err("cancelled");
        assert!(matches!(e, Error::Interrupted), "{e}");
        assert!(!finished(d.path(), &plan.runs[0].id));
        let mut o = opts(d.path(), false);
        o.only = vec!["nope".into()];
        let e = execute(&plan, &o, &meta, &mut Quiet, &|| false).expect_err("unknown");
        assert!(e.to_string().contains("no run 'nope'"), "{e}");
    }

    #[test]
    fn pressure_is_set_against_the_footprint() {
        let s = Shape {
            fragment: Some(0.5),
            free_beyond_footprint_bytes: Some(1 << 30),
            proactiveness: Some(100),
            ..Shape::default()
        };
        let p = shape_plan(&s, Some(2 << 30)).expect("plan");
        assert_eq!(p.pressure, Some(PressureTarget::Leave(3 << 30)));
        assert_eq!(p.fragment, Some(0.5));
        assert_eq!(p.compaction_proactiveness, Some(100));
        assert!(shape_plan(&s, None).is_err());
    }
}
