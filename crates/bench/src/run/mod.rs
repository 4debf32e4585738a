//! `hugewise run`: load a graph into page-policy regions, run a kernel for several trials,
//! verify, and report timings apart from loading, with every array's real backing; and the
//! graph commands that load without running (`graph info`, `graph gen|convert`).

pub mod memory;
pub mod overcommit;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hugewise_graph::cache::{Cache, Found, Hit};
use hugewise_graph::kernels::{pick_sources, pick_sources_by, Kernel, Spec, SpecExt};
use hugewise_graph::load::{load, Input, LoadOptions, LoadStats};
use hugewise_graph::reorder::{self, Method, Relabeling, ReorderStats};
use hugewise_graph::sampler::sampled;
use hugewise_graph::{Csr, Layout};
use hugewise_results::graph::RegionReport;
use hugewise_results::graph::{Degrees, GraphWritten};
use hugewise_results::run::{InfoReport, RunReplay, RunReport, Trial};
use hugewise_results::telemetry::{MemoryLimit, OvercommitChoice};

use self::overcommit::Controller;
use crate::telemetry::{Sampler, Summary};

use crate::stats::summarize;
use crate::{Error, Progress, Result};

/// What to run; also the heart of a worker's run request (see [`crate::worker`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The graph.
    pub input: Input,
    /// How to load it.
    pub load: LoadOptions,
    /// Page policies and allocation order.
    pub layout: Layout,
    /// The kernel.
    pub kernel: Spec,
    /// Reorder the vertices after loading.
    pub reorder: Option<Method>,
    /// Keep a reordered file's graph in this directory, and read it from there on later runs
    /// instead of loading and relabelling (see [`hugewise_graph::cache`]).
    pub reorder_cache: Option<Cache>,
    /// Timed trials, one source each.
    pub trials: u32,
    /// Start vertices in the input's ids, used in turn across trials (as GAP's `-r`); empty:
    /// picked at random from the seed among vertices with outgoing edges.
    pub sources: Vec<u32>,
    /// Check every trial's result.
    pub verify: bool,
    /// Worker threads.
    pub threads: usize,
    /// Publish one access in this many to this process's sample ring
    /// (`/dev/shm/hugewise-samples.<pid>`), for `hugewise promote --pid`.
    pub sample_every: Option<u32>,
    /// Replay a promotion plan on this run's own arrays while its trials run.
    pub replay: Option<Replay>,
}

/// A plan to replay in-process: one configuration of a `hugewise sim --plan` file, made from a
/// trace of the same kernel on the same graph. Its regions are found here by name (the
/// allocator places them elsewhere in every run). Steps due at the trials' start are applied
/// before the first timed trial; the rest beside the trials, at the times the traced run
/// reached them, and those not yet due when the last trial ends are not applied.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// The plan file.
    pub plan: PathBuf,
    /// Which policy's plan, when the file holds several.
    pub policy: Option<String>,
    /// Which budget's plan (a share, 0..=1), when the file holds several.
    pub budget_share: Option<f64>,
}

/// The steps of `r` moved onto this run's arrays, and the chosen plan's label.
fn replay_steps(
    r: &Replay,
    g: &Csr,
    kernel: &dyn Kernel,
) -> Result<(Vec<hugewise_promote::replay::Step>, String)> {
    use hugewise_promote::plan::{select, steps, Relocation};
    let plans = match hugewise_sys::read::result(&r.plan) {
        Ok(hugewise_results::AnyResult::Plans(p)) => p.result,
        Ok(other) => {
            return Err(Error::Config(format!(
                "{}: a {} result, not a promotion plan (make one with hugewise sim --plan)",
                r.plan.display(),
                other.schema()
            )))
        }
        Err(e) => return Err(Error::Config(e.to_string())),
    };
    let plan_err =
        |e: hugewise_promote::plan::PlanError| Error::Config(format!("{}: {e}", r.plan.display()));
    let (i, p) = select(&plans, r.policy.as_deref(), r.budget_share).map_err(plan_err)?;
    let here: Vec<(String, u64, u64)> = hugewise_graph::probe::graph_spans(g)
        .into_iter()
        .chain(kernel.spans())
        .map(|s| (s.name, s.base, s.bytes))
        .collect();
    let moved = Relocation::by_name(&plans, &here).map_err(plan_err)?;
    let steps = steps(i, p, &|a| moved.apply(a)).map_err(plan_err)?;
    Ok((steps, p.policy_label.clone()))
}

/// `wanted` sources from the given ones, in turn; each must be a vertex of the graph.
/// A graph to load and the starts to run from.
pub(crate) struct Graph<'a> {
    pub input: &'a Input,
    pub load: LoadOptions,
    pub layout: &'a Layout,
    pub kernel: Spec,
    pub reorder: Option<Method>,
    /// Given starts (input ids); empty: picked from the seed.
    pub sources: &'a [u32],
    /// Starts needed.
    pub wanted: usize,
    /// Keep reordered files here and read them back on later runs.
    pub cache: Option<&'a Cache>,
}

/// A loaded, checked and possibly reordered graph with its starts in the input's ids.
pub(crate) struct Prepared {
    pub g: Csr,
    pub load: LoadStats,
    pub reordered: Option<(Relabeling, ReorderStats)>,
    pub sources: Vec<u32>,
}

impl Prepared {
    /// The starts in the graph's (possibly reordered) ids.
    pub fn run_sources(&self) -> Vec<u32> {
        match &self.reordered {
            Some((r, _)) => self.sources.iter().map(|&v| r.new_id(v)).collect(),
            None => self.sources.clone(),
        }
    }
}

/// Load `w.input`, check it suits the kernel, pick or check the starts (in original ids, so
/// a reordering runs from the same vertices) and reorder. `sized` hears the vertex count as
/// soon as it is known (to create arrays that are to be faulted in first).
pub(crate) fn prepare(
    w: &Graph<'_>,
    sized: &mut dyn FnMut(usize) -> hugewise_graph::Result<()>,
) -> Result<Prepared> {
    let entry = match (w.reorder, w.cache) {
        (Some(m), Some(c)) => c.entry(w.input, &w.load, m, w.load.seed),
        _ => None,
    };
    let mut missed = None;
    if let (Some(e), Some(m)) = (&entry, w.reorder) {
        match e.find(w.layout, w.load.fit, sized) {
            Found::Hit(hit) => return from_cache(w, m, *hit),
            Found::Miss(why) => missed = why,
        }
    }
    let (g, load) = load(w.input, w.load, w.layout, sized)?;
    w.kernel.check(&g)?;
    let sources = if w.sources.is_empty() {
        pick_sources(&g, w.load.seed, w.wanted)?
    } else {
        given_sources(w.sources, g.n(), w.wanted)?
    };
    let (g, reordered) = match w.reorder {
        Some(m) => {
            let (h, r, mut stats) = reorder::reorder(&g, m, w.load.seed, w.layout)?;
            drop(g);
            if let Some(e) = &entry {
                stats.cache = e.store(&h, &r, missed);
            }
            (h, Some((r, stats)))
        }
        None => (g, None),
    };
    Ok(Prepared {
        g,
        load,
        reordered,
        sources,
    })
}

/// A reordered graph read from the cache: checked and given its starts as a load and
/// reordering would have (the starts picked among the same original vertices).
fn from_cache(w: &Graph<'_>, method: Method, hit: Hit) -> Result<Prepared> {
    let stats = hit.stats(method);
    let Hit {
        graph: g,
        relabeling: r,
        build,
        used,
    } = hit;
    w.kernel.check(&g)?;
    let sources = if w.sources.is_empty() {
        pick_sources_by(g.n(), |v| g.out_degree(r.new_id(v)), w.load.seed, w.wanted)?
    } else {
        given_sources(w.sources, g.n(), w.wanted)?
    };
    Ok(Prepared {
        g,
        load: LoadStats {
            load_ns: used.ns,
            build,
        },
        reordered: Some((r, stats)),
        sources,
    })
}

fn given_sources(given: &[u32], n: usize, wanted: usize) -> Result<Vec<u32>> {
    if let Some(&v) = given.iter().find(|&&v| v as usize >= n) {
        return Err(Error::Config(format!(
            "source {v} is not a vertex: the graph has {n} (ids 0 to {})",
            n.saturating_sub(1)
        )));
    }
    Ok((0..wanted).map(|i| given[i % given.len()]).collect())
}

/// Run. `progress` counts trials done (0 once loading and warm-up are over). A trial that fails verification is recorded as such and
/// the run goes on; check [`RunReport::failed_verification`].
pub fn run(cfg: &Config, progress: Progress<'_>) -> Result<RunReport> {
    run_with(cfg, Extras::default(), progress)
}

/// The arrays a run holds once loaded, for a memory limit set as a share of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// The graph's arrays.
    pub graph_bytes: u64,
    /// The kernel's arrays (those made before its first run).
    pub kernel_bytes: u64,
    /// Arrays with one entry per vertex (offsets and the kernel's): every step of a kernel
    /// touches them, so a limit below them cannot make progress at a useful pace.
    pub vertex_bytes: u64,
    /// Bytes locked in memory (`+lock`) outside the per-vertex arrays: charged under the limit
    /// for good, so the limit must hold them besides the per-vertex arrays.
    pub locked_other_bytes: u64,
}

impl Footprint {
    /// Everything.
    pub fn total_bytes(&self) -> u64 {
        self.graph_bytes + self.kernel_bytes
    }

    /// What must stay in memory for a kernel to make progress: the per-vertex arrays and
    /// whatever else is locked.
    pub fn floor_bytes(&self) -> u64 {
        self.vertex_bytes + self.locked_other_bytes
    }
}

/// Puts the process under a memory limit once the graph is loaded (see [`run_with`]).
pub type Contain<'a> = &'a mut dyn FnMut(&Footprint) -> Result<Contained>;

/// What [`Contain`] did.
#[derive(Debug, Clone)]
pub struct Contained {
    /// The cgroup the process is in now, for telemetry.
    pub cgroup: PathBuf,
    /// What to record of the limit (`settle_ns` is filled in by the run).
    pub limit: MemoryLimit,
}

/// What a run does beyond [`run`].
#[derive(Default)]
pub struct Extras<'a> {
    /// Sample telemetry at this interval over the trials.
    pub telemetry: Option<Duration>,
    /// Called once the graph is loaded, before the kernel's arrays are made: moves this
    /// process under a memory limit. The graph is then copied into memory charged there.
    pub contain: Option<Contain<'a>>,
    /// Choose the overcommit factor trial by trial (`cfg.threads` is the CPU count then).
    pub auto_overcommit: bool,
}

/// Bytes the graph's arrays hold locked besides the per-vertex ones (which count whole in the
/// limit's floor anyway): what a memory limit must leave room for. Hugetlb pages are not
/// charged to a memory cgroup, locked or not. A graph array is whole in memory once loaded, so
/// a whole-array lock holds all of it whatever the read-back says: the read-back once came
/// back short in six runs here (two adjacent locked arrays merged into one mapping, fixed in
/// `Region::locked_bytes` since), which let a run that could not fit start and be OOM-killed.
fn locked_outside_vertex_arrays(graph_regions: &[RegionReport]) -> u64 {
    graph_regions
        .iter()
        .filter(|r| !r.name.contains("offsets") && !r.policy.starts_with("hugetlb"))
        .map(|r| {
            let whole = r.policy.ends_with("+lock") && !r.policy.starts_with("thp-prefix");
            let read = r.locked_bytes.unwrap_or(0);
            if whole {
                read.max(r.data_bytes)
            } else {
                read
            }
        })
        .sum()
}

/// [`run`] with telemetry, a memory limit and an automatic overcommit factor.
pub fn run_with(cfg: &Config, mut extras: Extras<'_>, progress: Progress<'_>) -> Result<RunReport> {
    if cfg.trials == 0 {
        return Err(Error::Config("trials must be at least 1".into()));
    }
    let crate::pool::KernelPool { pool, bound_to } =
        crate::pool::kernel_pool(cfg.threads, crate::pool::Binding::from_env()?)?;
    let layout = &cfg.layout;
    let mut load_opts = cfg.load;
    if cfg.kernel.needs_weights() {
        load_opts.weighted = true;
    }
    let per_trial = cfg.kernel.sources_per_trial();
    let wanted = per_trial * cfg.trials as usize;
    let (prepared, mut kernel) = pool.install(|| -> Result<_> {
        let mut early: Option<Box<dyn Kernel>> = None;
        let p = prepare(
            &Graph {
                input: &cfg.input,
                load: load_opts,
                layout,
                kernel: cfg.kernel,
                reorder: cfg.reorder,
                sources: &cfg.sources,
                wanted,
                cache: cfg.reorder_cache.as_ref(),
            },
            &mut |n| {
                if layout.kernel_first() {
                    early = Some(cfg.kernel.create(layout, n)?);
                }
                Ok(())
            },
        )?;
        let kernel = match early {
            Some(k) => k,
            None => cfg.kernel.create(layout, p.g.n())?,
        };
        Ok((p, kernel))
    })?;
    let all_sources = prepared.run_sources();
    let Prepared {
        mut g,
        load: load_stats,
        reordered,
        sources: original_sources,
    } = prepared;
    let reorder_stats = reordered.map(|(_, stats)| stats);
    let sources = |i: usize| &all_sources[i * per_trial..(i + 1) * per_trial];
    let mut trials = Vec::new();
    let mut memory = None;
    let mut cgroup = None;
    if let Some(contain) = extras.contain.as_mut() {
        let kernel_regions = kernel.regions().map_err(Error::from_graph)?;
        let kernel_bytes: u64 = kernel_regions.iter().map(|r| r.data_bytes).sum();
        let graph_regions = g.regions().map_err(Error::from_graph)?;
        let offsets: u64 = graph_regions
            .iter()
            .filter(|r| r.name.contains("offsets"))
            .map(|r| r.data_bytes)
            .sum();
        let locked_other_bytes = locked_outside_vertex_arrays(&graph_regions);
        let fp = Footprint {
            graph_bytes: g.data_bytes(),
            kernel_bytes,
            vertex_bytes: offsets + kernel_bytes,
            locked_other_bytes,
        };
        // The kernel's arrays were faulted in before the move: make them again inside.
        drop(kernel);
        let mut c = contain(&fp)?;
        let t = Instant::now();
        g = pool.install(|| g.rehome()).map_err(Error::from_graph)?;
        kernel = cfg.kernel.create(layout, g.n())?;
        c.limit.settle_ns = t.elapsed().as_nanos() as u64;
        cgroup = Some(c.cgroup);
        memory = Some(c.limit);
    }
    let publisher = cfg
        .sample_every
        .map(|_| hugewise_promote::channel::Publisher::create(1 << 22))
        .transpose()?;
    let sampled = publisher
        .as_ref()
        .zip(cfg.sample_every)
        .map(|(p, every)| sampled(p.ring(), every, cfg.threads));
    // One untimed warm-up run: the first touch of the kernel's arrays is slow in a VM, and
    // arrays sized by the edge count are made here. Sampled when the trials are: a daemon
    // watching the run then has its samples, and has promoted, before the first timed trial
    // (unsampled, a PageRank on kron:26 gave the daemon nothing to go on for its first 70 s).
    pool.install(|| match &sampled {
        Some(s) => kernel.sample(&g, sources(0), s),
        None => kernel.run(&g, sources(0)),
    })?;
    let sampler = match extras.telemetry {
        Some(interval) => {
            let mut c = crate::telemetry::Config::new(interval);
            c.cgroup = cgroup.clone();
            Some(Sampler::start(c)?)
        }
        None => None,
    };
    let mut controller = extras.auto_overcommit.then(|| Controller::new(cfg.threads));
    let mut pools = std::collections::BTreeMap::new();
    // Loading and warm-up are over: the count of trials starts.
    progress(0, cfg.trials as u64);
    let replay = cfg
        .replay
        .as_ref()
        .map(|r| replay_steps(r, &g, kernel.as_ref()))
        .transpose()?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    // The replay attaches before the clock starts, and applies the steps due at the trials'
    // start (the trace had them in place at its first timed access) before the first trial: a
    // short run could otherwise end before a thread had opened the pidfd and read the maps.
    let replay = match replay {
        Some((steps, label)) => {
            let proc = hugewise_sys::proc::ProcFs::default();
            let t_early = Instant::now();
            // The plan's chunks are promoted whatever page policy their array has: a `base`
            // array's hint is lifted from exactly those chunks.
            let me = hugewise_promote::target::Target::attach(
                &proc,
                std::process::id() as i32,
                t_early,
            )?
            .lifting_no_huge();
            let (now, later): (Vec<_>, Vec<_>) =
                steps.iter().cloned().partition(|s| s.at.is_zero());
            let never = std::sync::atomic::AtomicBool::new(false);
            let early =
                hugewise_promote::session::run_plan(&me, &now, t_early, &never, &mut |_| {})?;
            Some((me, later, early, t_early, label, steps.len()))
        }
        None => None,
    };
    let replayed = std::thread::scope(|s| -> Result<_> {
        // The later steps are applied beside the trials, from the first one's start, through
        // the same path a plan for another process takes (pidfd, process_madvise, read-back).
        // Actions are timed from that start too: the early ones, made before it, at negative
        // times.
        let replayer = replay.map(|(me, later, mut early, t_early, label, steps)| {
            let stop = &stop;
            let t0 = Instant::now();
            let before_ms = t0.duration_since(t_early).as_secs_f64() * 1e3;
            for a in &mut early.actions {
                a.t_ms -= before_ms;
            }
            let me = me.timed_from(t0);
            s.spawn(move || -> Result<_> {
                let log = hugewise_promote::session::run_plan(&me, &later, t0, stop, &mut |_| {})?;
                early.actions.extend(log.actions);
                early.gone.extend(log.gone);
                early.cancelled = log.cancelled;
                early.wall_ns += log.wall_ns;
                Ok((label, steps, early))
            })
        });
        let mut timed = || -> Result<()> {
            for i in 0..cfg.trials as usize {
                // While `auto` explores, each trial runs from the first trial's sources, so
                // that factors are compared on the same work: BFS on kron:24 at 50 % took
                // 20.0–32.5 s at ×1 from three sources, and `auto` settled on ×2 after ×4's
                // trial drew a slow one. Settled, trial i runs from the i-th sources, as at a
                // fixed factor, so steady trials compare with a fixed factor's trial by trial.
                let at = match &controller {
                    Some(c) if c.exploring() => 0,
                    _ => i,
                };
                let src = sources(at);
                let mark = sampler.as_ref().map(|s| s.mark());
                let threads = controller.as_ref().map(|c| c.threads());
                let trial_pool = match threads {
                    Some(t) if t != cfg.threads => match pools.entry(t) {
                        std::collections::btree_map::Entry::Occupied(e) => &*e.into_mut(),
                        std::collections::btree_map::Entry::Vacant(e) => {
                            &*e.insert(crate::thread_pool(t)?)
                        }
                    },
                    _ => &pool,
                };
                let kernel_ns = crate::pool::awake(trial_pool, || -> Result<_> {
                    let t = Instant::now();
                    match &sampled {
                        Some(s) => kernel.sample(&g, src, s)?,
                        None => kernel.run(&g, src)?,
                    }
                    Ok(t.elapsed().as_nanos() as u64)
                })?;
                let telemetry: Option<Summary> =
                    sampler.as_ref().zip(mark).map(|(s, m)| s.summary_since(m));
                if let Some(c) = controller.as_mut() {
                    c.observe(kernel_ns, telemetry.as_ref());
                }
                let outcome = pool.install(|| kernel.outcome(&g));
                let (verified, verify_ns, verify_error) = if cfg.verify {
                    let t = Instant::now();
                    let outcome = pool.install(|| kernel.verify(&g, src));
                    let ns = Some(t.elapsed().as_nanos() as u64);
                    (Some(outcome.is_ok()), ns, outcome.err())
                } else {
                    (None, None, None)
                };
                trials.push(Trial {
                    sources: original_sources[at * per_trial..(at + 1) * per_trial].to_vec(),
                    kernel_ns,
                    edges_per_s: g.edges() as f64 / (kernel_ns.max(1) as f64 / 1e9),
                    outcome,
                    verified,
                    verify_ns,
                    verify_error,
                    threads,
                    telemetry,
                });
                progress(i as u64 + 1, cfg.trials as u64);
            }
            Ok(())
        };
        let done = timed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let replayed = match replayer {
            Some(h) => Some(
                h.join()
                    .map_err(|_| Error::Config("the plan's replay thread panicked".into()))??,
            ),
            None => None,
        };
        done?;
        Ok(replayed)
    })?;
    let telemetry = sampler.map(Sampler::finish);
    let overcommit: Option<OvercommitChoice> = controller.map(Controller::finish);
    let mut regions = g.regions().map_err(Error::from_graph)?;
    regions.extend(kernel.regions().map_err(Error::from_graph)?);
    let mapped: u64 = regions.iter().map(|r| r.backing.total_bytes).sum();
    let huge: u64 = regions.iter().map(|r| r.backing.huge_bytes()).sum();
    let ns: Vec<f64> = trials.iter().map(|t| t.kernel_ns as f64).collect();
    Ok(RunReport {
        graph_spec: cfg.input.to_string(),
        graph: g.info(),
        kernel: cfg.kernel,
        threads: cfg.threads,
        threads_bound_to: bound_to,
        pages: cfg.layout.pages.to_string(),
        alloc_order: cfg.layout.order.to_string(),
        load: load_stats,
        reorder: reorder_stats,
        kernel_ns: summarize(&ns).ok_or_else(|| Error::Config("no trials".into()))?,
        trials,
        regions,
        huge_footprint_share: if mapped == 0 {
            0.0
        } else {
            huge as f64 / mapped as f64
        },
        peak_rss_bytes: hugewise_sys::rusage::peak_rss_bytes(),
        sample_every: cfg.sample_every,
        replay: replayed.map(|(label, steps, log)| RunReplay {
            plan: cfg
                .replay
                .as_ref()
                .map(|r| r.plan.clone())
                .unwrap_or_default(),
            label,
            steps,
            totals: log.totals(),
            actions: log.actions,
        }),
        telemetry,
        memory,
        overcommit,
    })
}

/// Load a graph and describe it.
pub fn info(input: &Input, opts: LoadOptions) -> Result<InfoReport> {
    let (g, load_stats) = load(input, opts, &Layout::default(), &mut |_| Ok(()))?;
    let mut deg: Vec<u64> = (0..g.n() as u32).map(|v| g.out_degree(v) as u64).collect();
    deg.sort_unstable();
    let degrees = Degrees {
        max: deg.last().copied().unwrap_or(0),
        mean: g.arcs() as f64 / g.n().max(1) as f64,
        median: deg[deg.len() / 2],
        isolated: deg.iter().take_while(|&&d| d == 0).count() as u64,
    };
    Ok(InfoReport {
        graph_spec: input.to_string(),
        graph: g.info(),
        degrees,
        load: load_stats,
        regions: g.regions()?,
    })
}

/// A graph to save.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteConfig {
    /// The graph.
    pub input: Input,
    /// How to load it.
    pub load: LoadOptions,
    /// Reorder the vertices before saving (with `load.seed` for `random`).
    pub reorder: Option<Method>,
    /// The file; its extension names the format.
    pub out: PathBuf,
}

/// Load (or generate) a graph, reorder it if asked, and save it in the format `cfg.out`'s
/// extension names, atomically. A wrong extension fails before anything is loaded. `phase`
/// hears when reordering and writing start.
pub fn write(cfg: &WriteConfig, phase: &mut dyn FnMut(&'static str)) -> Result<GraphWritten> {
    hugewise_graph::save::Format::of_path(&cfg.out)?;
    let (g, load_stats) = load(&cfg.input, cfg.load, &Layout::default(), &mut |_| Ok(()))?;
    let (g, reorder) = match cfg.reorder {
        Some(m) => {
            phase("reordering");
            let (g, _, stats) = reorder::reorder(&g, m, cfg.load.seed, &Layout::default())?;
            (g, Some(stats))
        }
        None => (g, None),
    };
    phase("writing");
    let t = Instant::now();
    let (format, file_bytes) = hugewise_graph::save::save(&g, &cfg.out)?;
    Ok(GraphWritten {
        graph_spec: cfg.input.to_string(),
        graph: g.info(),
        load: load_stats,
        reorder,
        file: cfg.out.clone(),
        format: format.extension().to_string(),
        file_bytes,
        write_ns: t.elapsed().as_nanos() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugewise_graph::kernels::bfs::BfsMode;

    fn cfg(pages: &str, order: &str) -> Config {
        Config {
            input: Input::parse("kron:12").expect("spec"),
            load: LoadOptions {
                seed: 1,
                weighted: false,
                symmetrize: true,
                fit: Default::default(),
            },
            layout: Layout::parse(pages, order).expect("layout"),
            kernel: Spec::Bfs {
                mode: BfsMode::DirectionOptimizing,
            },
            reorder: None,
            reorder_cache: None,
            trials: 3,
            sources: Vec::new(),
            verify: true,
            threads: 2,
            sample_every: None,
            replay: None,
        }
    }

    #[test]
    fn given_sources_are_used_in_turn_and_checked() {
        let mut c = cfg("all=base", "natural");
        c.sources = vec![5, 7];
        let r = run(&c, &mut |_, _| {}).expect("run");
        let used: Vec<u32> = r.trials.iter().flat_map(|t| t.sources.clone()).collect();
        assert_eq!(used, [5, 7, 5]);
        c.sources = vec![1 << 20];
        let e = run(&c, &mut |_, _| {}).expect_err("no such vertex");
        assert!(e.to_string().contains("not a vertex"), "{e}");
    }

    #[test]
    fn auto_explores_on_the_first_sources_and_runs_each_trials_own_once_settled() {
        let mut c = cfg("all=base", "natural");
        c.trials = 8;
        c.sources = (1..=8).collect();
        let extras = Extras {
            auto_overcommit: true,
            ..Extras::default()
        };
        let r = run_with(&c, extras, &mut |_, _| {}).expect("run");
        let oc = r.overcommit.as_ref().expect("auto's choice");
        let settled = oc.settled_after.unwrap_or(r.trials.len());
        assert!(settled >= 2, "no telemetry: it tries ×2 at least ({oc:?})");
        // Exploring: the first sources. The trial after settling: its own. Later, a probe
        // that wins resumes the climb (the first sources again), so either.
        for (i, t) in r.trials.iter().enumerate() {
            let own = i as u32 + 1;
            match i.cmp(&settled) {
                std::cmp::Ordering::Less => assert_eq!(t.sources, [1], "trial {i}"),
                std::cmp::Ordering::Equal => assert_eq!(t.sources, [own], "trial {i}"),
                std::cmp::Ordering::Greater => {
                    assert!(t.sources == [1] || t.sources == [own], "trial {i}: {t:?}")
                }
            }
        }
    }

    #[test]
    fn sampled_trials_verify_and_say_they_were_sampled() {
        let mut c = cfg("all=base", "natural");
        c.sample_every = Some(64);
        let r = run(&c, &mut |_, _| {}).expect("run");
        assert_eq!(r.sample_every, Some(64));
        assert!(r.trials.iter().all(|t| t.verified == Some(true)));
        // The ring is the run's own and goes with it.
        assert!(!hugewise_sys::shm::ring_path(std::process::id() as i32).exists());
    }

    #[test]
    fn a_reordered_file_comes_back_from_the_cache_with_the_same_results() {
        use hugewise_graph::cache::CacheOutcome;
        let d = tempfile::tempdir().expect("tmp");
        let file = d.path().join("k12.hwg");
        let base = cfg("all=base", "natural");
        let (g, _) =
            load(&base.input, base.load, &Layout::default(), &mut |_| Ok(())).expect("generate");
        hugewise_graph::save::save(&g, &file).expect("save");
        // sssp adds weights hashed from the seed before the reordering: they are kept too.
        for kernel in ["bfs", "sssp"] {
            let mut c = cfg("all=base", "natural");
            c.input = Input::File(file.clone());
            c.kernel = Spec::default_for(kernel).expect("kernel");
            c.reorder = Some(Method::Dbg);
            c.reorder_cache = Some(
                Cache::new(d.path().join("cache"))
                    .min_graph_bytes(0)
                    .keep_free_bytes(0),
            );
            let first = run(&c, &mut |_, _| {}).expect("first run");
            let second = run(&c, &mut |_, _| {}).expect("second run");
            c.reorder_cache = None;
            let plain = run(&c, &mut |_, _| {}).expect("no cache");
            let outcome = |r: &RunReport| {
                let x = r.reorder.as_ref().expect("reordered");
                x.cache.as_ref().map(|c| c.outcome)
            };
            assert_eq!(outcome(&first), Some(CacheOutcome::Stored), "{kernel}");
            assert_eq!(outcome(&second), Some(CacheOutcome::Hit), "{kernel}");
            assert_eq!(outcome(&plain), None, "{kernel}");
            assert_eq!(second.reorder.as_ref().map(|x| x.relabel_ns), Some(0));
            for r in [&second, &plain] {
                for (a, b) in first.trials.iter().zip(&r.trials) {
                    assert_eq!(a.sources, b.sources, "{kernel}");
                    assert_eq!(a.outcome.untimed(), b.outcome.untimed(), "{kernel}");
                    assert_eq!(b.verified, Some(true), "{kernel}");
                }
            }
        }
    }

    #[test]
    fn runs_verifies_and_reports_every_region() {
        let r = run(&cfg("all=base", "natural"), &mut |_, _| {}).expect("run");
        assert_eq!(r.trials.len(), 3);
        assert!(r
            .trials
            .iter()
            .all(|t| t.verified == Some(true) && t.edges_per_s > 0.0));
        let names: Vec<&str> = r.regions.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "offsets",
                "edges",
                "property",
                "frontier",
                "frontier-bits",
                "frontier-next-bits"
            ]
        );
        assert_eq!(r.huge_footprint_share, 0.0);
        assert_eq!(r.graph.vertices, 4096);
    }

    #[test]
    fn property_thp_gets_huge_pages_and_only_there() {
        let r = run(
            &cfg("all=base,property=thp", "property-first"),
            &mut |_, _| {},
        )
        .expect("run");
        for reg in &r.regions {
            let huge = reg.backing.huge_bytes();
            if reg.name == "property" {
                assert_eq!(huge, reg.backing.total_bytes, "{reg:?}");
            } else {
                assert_eq!(huge, 0, "{reg:?}");
            }
        }
        assert!(r.huge_footprint_share > 0.0);
    }

    #[test]
    fn info_on_a_generated_graph() {
        let i = info(
            &Input::parse("urand:10").expect("spec"),
            LoadOptions {
                seed: 1,
                weighted: false,
                symmetrize: true,
                fit: Default::default(),
            },
        )
        .expect("info");
        assert_eq!(i.graph.vertices, 1024);
        assert!(i.degrees.max >= i.degrees.median);
        assert!((i.degrees.mean - 32.0).abs() < 2.0, "{}", i.degrees.mean);
    }

    #[test]
    fn the_floor_counts_a_whole_array_lock_even_when_it_reads_back_nothing() {
        let region = |name: &str, policy: &str, data: u64, locked: Option<u64>| RegionReport {
            name: name.into(),
            policy: policy.into(),
            data_bytes: data,
            backing: serde_json::from_value(serde_json::json!({
                "source": "smaps", "total_bytes": data, "base_bytes": data, "thp_2m_bytes": 0,
                "mthp_bytes": {}, "hugetlb_bytes": 0, "not_present_bytes": 0,
                "swapped_bytes": 0, "huge_chunks": [], "approximate": false
            }))
            .expect("backing"),
            locked_bytes: locked,
        };
        let regions = [
            // Per-vertex: counted elsewhere.
            region("out-offsets", "base+lock", 100, Some(100)),
            // Whole-array lock read back as 0 or short: the array's size counts.
            region("out-edges", "base+lock", 1000, Some(0)),
            region("in-edges", "base+lock", 800, Some(300)),
            // A locked prefix counts what the kernel says.
            region("weights", "thp-prefix:20%+lock", 500, Some(104)),
            // Not charged to the cgroup.
            region("in-offsets", "hugetlb-2m+lock", 100, Some(100)),
            region("other", "hugetlb-2m+lock", 400, Some(400)),
            // Not locked.
            region("more", "base", 700, None),
        ];
        assert_eq!(locked_outside_vertex_arrays(&regions), 1000 + 800 + 104);
    }
}
