//! `hugewise bench pages`: one graph, one kernel, several page layouts for the kernel's own
//! arrays, alternated round by round (A B, B A, A B, ...), so that every ratio is measured in
//! the same process on the same graph from the same sources.
//!
//! The graph is loaded once (its arrays' policies come from `graph_pages`); each variant gets
//! its own copy of the kernel's arrays, created and warmed up before any timing. A variant that
//! asks for other policies for the graph's own arrays, or reordered vertices, runs on a copy of
//! the graph: every copy is built before the first round and held to the end when they all
//! fit in the memory available, and otherwise built in turn (see [`Copies`]). Before every
//! sample the machine's quietness is checked and recorded. Each variant's speedup is the median
//! over rounds of (first variant's time / this variant's time) within the round.

use std::time::{Duration, Instant};

use hugewise_graph::cache::{Cache, CacheUse};
use hugewise_graph::csr::RegionReport;
use hugewise_graph::fits::KERNEL_VERTEX_BYTES;
use hugewise_graph::kernels::{pick_sources, Kernel, Spec, SpecExt};
use hugewise_graph::layout::{ALL_REGIONS, KERNEL_REGIONS};
use hugewise_graph::load::{load, Input, LoadOptions};
use hugewise_graph::reorder::{self, Method, Relabeling};
use hugewise_graph::{Csr, Layout};
use hugewise_mem::{AllocOrder, Bytes, PolicyMap};
use hugewise_results::pagebench::{PagesReport, PagesSample, PagesVariant};

use crate::quiet;
use crate::stats::{ratio, summarize, Until};
use crate::{Error, Progress, Result};

/// One layout to compare: the kernel's arrays, and optionally a copy of the graph of its own
/// (other page policies for the graph's arrays, or reordered vertices).
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its name in tables; `None` shows the layout itself.
    pub name: Option<String>,
    /// Policies of the kernel's arrays.
    pub kernel_pages: PolicyMap,
    /// Policies of this variant's own copy of the graph (`None`: the shared graph).
    pub graph_pages: Option<PolicyMap>,
    /// Reorder this variant's copy of the graph.
    pub reorder: Option<Method>,
    /// Allocate (and fault in) the kernel's arrays before any copy of the graph is built, so
    /// that under memory pressure they get the huge pages first.
    pub kernel_first: bool,
}

impl Variant {
    /// The kernel's arrays only, on the shared graph.
    pub fn kernel(pages: PolicyMap) -> Variant {
        Variant {
            name: None,
            kernel_pages: pages,
            graph_pages: None,
            reorder: None,
            kernel_first: false,
        }
    }

    /// What `bench pages` compares unless told: every array on 4 KiB pages, then the same
    /// with the property array on THP.
    pub fn defaults() -> Result<Vec<Variant>> {
        ["all=base", "all=base,property=thp"]
            .iter()
            .map(|s| Variant::parse(s))
            .collect()
    }

    /// Parse `KERNEL-PAGES[;graph:GRAPH-PAGES][;reorder:METHOD][;kernel-first][;name:NAME]`,
    /// e.g. `property=thp-prefix:5%;reorder:dbg` or `all=thp;graph:all=thp;name:ideal`.
    pub fn parse(s: &str) -> Result<Variant> {
        let mut v = Variant::kernel(PolicyMap::default());
        let mut kernel = None;
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(g) = part.strip_prefix("graph:") {
                v.graph_pages = Some(
                    PolicyMap::parse(g, ALL_REGIONS)
                        .map_err(|e| Error::Config(format!("'{s}': graph: {e}")))?,
                );
            } else if let Some(m) = part.strip_prefix("reorder:") {
                v.reorder =
                    Some(m.parse().map_err(|e: hugewise_graph::Error| {
                        Error::Config(format!("'{s}': {e}"))
                    })?);
            } else if part == "kernel-first" {
                v.kernel_first = true;
            } else if let Some(n) = part.strip_prefix("name:") {
                v.name = Some(n.to_string());
            } else if kernel.is_none() {
                kernel = Some(PolicyMap::parse(part, KERNEL_REGIONS).map_err(|e| {
                    Error::Config(format!(
                        "'{s}': {e} (the kernel's arrays are property and frontier; give the \
                         graph's as graph:PAGES)"
                    ))
                })?);
            } else {
                return Err(Error::Config(format!(
                    "'{s}': '{part}' is a second set of kernel pages; the parts are KERNEL-PAGES, \
                     graph:PAGES, reorder:METHOD, kernel-first and name:NAME, separated by ';'"
                )));
            }
        }
        v.kernel_pages = kernel.unwrap_or_default();
        Ok(v)
    }

    /// The graph copy this variant runs on: `None` for the shared graph.
    fn graph_key(&self) -> Option<(String, Option<Method>)> {
        if self.graph_pages.is_none() && self.reorder.is_none() {
            return None;
        }
        Some((
            self.graph_pages
                .as_ref()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            self.reorder,
        ))
    }
}

/// How the variants' own copies of the graph are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Copies {
    /// Held together when they fit the memory available beside the kernels' arrays, else in
    /// turn.
    #[default]
    Auto,
    /// Every copy built before the first round and held to the end.
    Held,
    /// One copy at a time: built when a variant that runs on it comes up in a round, and freed
    /// before another is built. Each build copies and faults the graph in again (8.3 GiB at
    /// kron:26; untimed, as the load is); the timed run is the same. Where `Held` would need
    /// three copies of kron:26's 8.3 GiB beside the loaded graph, this needs one. Refused with a
    /// layout whose kernel arrays come first (`kernel-first`): a copy built anew each round
    /// would come after every kernel's arrays, and the order such a layout asks for be lost.
    InTurn,
}

impl Copies {
    /// Whether `copies` copies of a graph of `graph_bytes` each, beside `kernels` kernels'
    /// arrays of `kernel_bytes` each still to be made, are built in turn: as asked, or under
    /// `Auto` when there are two copies or more (one is built once either way) and they would
    /// not all fit `room` bytes (a room that cannot be read is taken to hold them, as before
    /// the copies were counted), unless a layout's kernel arrays come first (`ordered`), whose
    /// order only held copies keep.
    fn in_turn(
        self,
        copies: u64,
        graph_bytes: u64,
        kernels: u64,
        kernel_bytes: u64,
        room: Option<u64>,
        ordered: bool,
    ) -> bool {
        match self {
            Copies::Held => false,
            Copies::InTurn => copies > 0,
            Copies::Auto => {
                copies >= 2
                    && !ordered
                    && room.is_some_and(|room| {
                        copies
                            .saturating_mul(graph_bytes)
                            .saturating_add(kernels.saturating_mul(kernel_bytes))
                            > room
                    })
            }
        }
    }
}

/// What to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The graph.
    pub input: Input,
    /// How to load it.
    pub load: LoadOptions,
    /// Policies of the graph's arrays, shared by every variant without a copy of its own.
    pub graph_pages: PolicyMap,
    /// The kernel.
    pub kernel: Spec,
    /// The layouts; the first is the baseline.
    pub variants: Vec<Variant>,
    /// Rounds; each runs every variant once. At least that many with `until`.
    pub rounds: u32,
    /// More rounds until the speedups' intervals are narrow enough.
    pub until: Until,
    /// Worker threads.
    pub threads: usize,
    /// Keep a reordered file's copy here and read it back on later runs.
    pub reorder_cache: Option<Cache>,
    /// Drop the page cache of the files the graph came from as soon as each is read: the
    /// input once loaded, a reordered copy's cache entry once read back or written. On a
    /// machine shaped with few whole 2 MiB blocks, the cache's large folios hold blocks the
    /// graph's copies and the kernels' arrays could have had as huge pages. A later load
    /// reads the disk again.
    pub drop_file_cache: bool,
    /// How the variants' own copies of the graph are held.
    pub copies: Copies,
}

/// A copy of the graph that some variants run on, with the ids of its vertices.
struct Copy {
    graph: Csr,
    relabeling: Option<Relabeling>,
    /// What the cache of reordered graphs did for it.
    cache: Option<CacheUse>,
}

impl Copy {
    fn source(&self, original: u32) -> u32 {
        self.relabeling
            .as_ref()
            .map_or(original, |r| r.new_id(original))
    }
}

/// The variants' copies of the graph, by key: held together, or one at a time.
struct Shelf {
    /// Each copy's policies and reordering.
    keys: Vec<(PolicyMap, Option<Method>)>,
    /// One copy at a time: taking another frees the one built.
    in_turn: bool,
    /// The copies built and held, by key.
    built: Vec<Option<Copy>>,
    /// A copy's arrays with their backing, read when it was last freed (in turn).
    freed: Vec<Option<Vec<RegionReport>>>,
    /// What the cache of reordered graphs did for each copy, the last time it was built.
    cache: Vec<Option<CacheUse>>,
}

impl Shelf {
    /// The copy of `key`, built by `build` unless it is held. In turn, the copy held before is
    /// freed first (its arrays' backing read as it goes), so that two are never held at once.
    fn take(
        &mut self,
        key: usize,
        build: impl FnOnce(&PolicyMap, Option<Method>) -> Result<Copy>,
    ) -> Result<&Copy> {
        let copy = match self.built[key].take() {
            Some(c) => c,
            None => {
                if self.in_turn {
                    for (other, slot) in self.built.iter_mut().enumerate() {
                        if let Some(c) = slot.take() {
                            self.freed[other] = Some(c.graph.regions()?);
                        }
                    }
                }
                let (pages, method) = &self.keys[key];
                let c = build(pages, *method)?;
                // The first build's: a later one reads back what the first stored.
                if self.cache[key].is_none() {
                    self.cache[key] = c.cache.clone();
                }
                c
            }
        };
        Ok(self.built[key].insert(copy))
    }
}

/// Refuse, unless the load was forced, a copy of the graph of `graph_bytes` built in turn where
/// it and `pending` bytes of kernels still to be made do not fit the memory available now (the
/// copy before it freed). Checked at each copy's first build, before any sample: a later build
/// of the same size is not refused, so that a long run never loses its samples to the check.
/// Where the memory available cannot be read, the copy is built, as a held one would be.
fn copy_fits(cfg: &Config, graph_bytes: u64, pending: u64) -> Result<()> {
    if cfg.load.fit.room_bytes().is_none() {
        return Ok(());
    }
    cfg.load.fit.check_bytes(
        &cfg.input.to_string(),
        &format!(
            "a copy of the graph ({}) for a variant that asks for one, built when its turn came \
             (copies are built one at a time where they do not fit together), beside {} of \
             kernels' arrays still to be made",
            Bytes(graph_bytes),
            Bytes(pending)
        ),
        graph_bytes.saturating_add(pending),
    )?;
    Ok(())
}

/// The layout of arrays in `pages`, made in their natural order.
fn layout(pages: &PolicyMap) -> Layout {
    Layout {
        pages: pages.clone(),
        order: AllocOrder::Natural,
    }
}

/// A copy of the loaded graph `g` in `pages`, reordered by `method` (read back from the cache
/// of reordered graphs when it holds one).
fn build_copy(
    cfg: &Config,
    load_opts: LoadOptions,
    g: &Csr,
    pages: &PolicyMap,
    method: Option<Method>,
    pool: &rayon::ThreadPool,
) -> Result<Copy> {
    pool.install(|| -> Result<Copy> {
        Ok(match method {
            Some(m) => {
                let entry = cfg
                    .reorder_cache
                    .as_ref()
                    .and_then(|c| c.entry(&cfg.input, &load_opts, m, cfg.load.seed));
                let (h, r, stats) = match &entry {
                    Some(e) => e.reorder(g, m, cfg.load.seed, &layout(pages), cfg.load.fit)?,
                    None => reorder::reorder(g, m, cfg.load.seed, &layout(pages))?,
                };
                // Read back or just written: either way in the page cache.
                if let (true, Some(e)) = (cfg.drop_file_cache, &entry) {
                    drop_file_cache(&e.files());
                }
                Copy {
                    graph: h,
                    relabeling: Some(r),
                    cache: stats.cache,
                }
            }
            None => {
                let same = Relabeling::from_order((0..g.n() as u32).collect())?;
                Copy {
                    graph: reorder::relabel(g, &same, &layout(pages))?,
                    relabeling: None,
                    cache: None,
                }
            }
        })
    })
}

/// Drop the page cache of `files` (best effort: a file that cannot be opened keeps its cache,
/// which costs huge pages, never the result). The drop follows no link: resolve a path the
/// user gave first.
fn drop_file_cache(files: &[std::path::PathBuf]) {
    for f in files {
        let _ = hugewise_sys::pagecache::drop_cached(f);
    }
}

/// Run the comparison; `progress` counts samples (0 once loading and warm-up are over).
pub fn run(cfg: &Config, progress: Progress<'_>) -> Result<PagesReport> {
    run_with(cfg, progress, &|| false)
}

/// [`run`], stopping between samples once `cancel` says so: the rounds done are kept (see
/// [`crate::stats::Until::rounds`]).
pub fn run_with(
    cfg: &Config,
    progress: Progress<'_>,
    cancel: &dyn Fn() -> bool,
) -> Result<PagesReport> {
    if cfg.variants.len() < 2 || cfg.rounds == 0 {
        return Err(Error::Config(
            "compare at least two layouts over at least one round".into(),
        ));
    }
    let pool = crate::thread_pool(cfg.threads)?;
    let mut load_opts = cfg.load;
    load_opts.weighted |= cfg.kernel.needs_weights();
    let (g, load_stats) = pool.install(|| {
        load(
            &cfg.input,
            load_opts,
            &layout(&cfg.graph_pages),
            &mut |_| Ok(()),
        )
    })?;
    cfg.kernel.check(&g)?;
    // A signal during the load (which does not ask) is seen once it is over.
    if cancel() {
        return Err(Error::Interrupted);
    }
    if let (true, Input::File(p)) = (cfg.drop_file_cache, &cfg.input) {
        // The input may be a link the user gave; a cache entry's files are taken as they are.
        if let Ok(p) = std::fs::canonicalize(p) {
            drop_file_cache(&[p]);
        }
    }
    // Each distinct copy of the graph, keyed by its policies and reordering.
    let mut keys: Vec<(String, Option<Method>)> = Vec::new();
    let mut copy_of = Vec::new();
    for v in &cfg.variants {
        copy_of.push(v.graph_key().map(|k| {
            keys.iter().position(|x| *x == k).unwrap_or_else(|| {
                keys.push(k);
                keys.len() - 1
            })
        }));
    }
    let keys = keys
        .into_iter()
        .map(|(pages, method)| {
            let pages = if pages.is_empty() {
                cfg.graph_pages.clone()
            } else {
                PolicyMap::parse(&pages, ALL_REGIONS).map_err(|e| Error::Config(e.to_string()))?
            };
            Ok((pages, method))
        })
        .collect::<Result<Vec<_>>>()?;
    // Kernels that come first are created (and faulted in) before any copy of the graph.
    let mut early: Vec<Option<Box<dyn Kernel>>> = Vec::new();
    for v in &cfg.variants {
        early.push(if v.kernel_first {
            Some(pool.install(|| cfg.kernel.create(&layout(&v.kernel_pages), g.n()))?)
        } else {
            None
        });
    }
    let graph_bytes = g.data_bytes();
    // At most what any kernel takes a vertex until one is made, then the largest made.
    let mut kernel_bytes = (g.n() as u64).saturating_mul(KERNEL_VERTEX_BYTES);
    let mut made = 0u64;
    let later = early.iter().filter(|k| k.is_none()).count() as u64;
    let ordered = cfg.variants.iter().any(|v| v.kernel_first);
    if cfg.copies == Copies::InTurn && ordered && !keys.is_empty() {
        return Err(Error::Config(
            "copies in turn cannot keep a kernel-first layout's order (each copy built anew \
             would come after every kernel's arrays): hold the copies (--copies held or auto)"
                .into(),
        ));
    }
    let in_turn = cfg.copies.in_turn(
        keys.len() as u64,
        graph_bytes,
        later,
        kernel_bytes,
        cfg.load.fit.room_bytes(),
        ordered,
    );
    let shared = Copy {
        graph: g,
        relabeling: None,
        cache: None,
    };
    let mut shelf = Shelf {
        keys,
        in_turn,
        built: Vec::new(),
        freed: Vec::new(),
        cache: Vec::new(),
    };
    shelf.built.resize_with(shelf.keys.len(), || None);
    shelf.freed.resize_with(shelf.keys.len(), || None);
    shelf.cache.resize_with(shelf.keys.len(), || None);
    if !in_turn {
        // Counted to fit, with every kernel at the most a kernel takes.
        for key in 0..shelf.keys.len() {
            shelf.take(key, |pages, method| {
                build_copy(cfg, load_opts, &shared.graph, pages, method, &pool)
            })?;
        }
    }
    let per_trial = cfg.kernel.sources_per_trial();
    let sources = pick_sources(
        &shared.graph,
        cfg.load.seed,
        per_trial * cfg.until.planned(cfg.rounds) as usize,
    )?;
    // The graph each variant's kernel last ran or was prepared on ([`Csr::id`]): a copy built
    // anew is another graph, for which a kernel makes again what it keeps made from one.
    let mut prepared = vec![0u64; cfg.variants.len()];
    let mut kernels: Vec<Box<dyn Kernel>> = Vec::new();
    for (i, (v, early)) in cfg.variants.iter().zip(early).enumerate() {
        let c = match copy_of[i] {
            None => &shared,
            Some(key) => {
                // Kernels still to be made, at the size of the largest made so far.
                let pending = later.saturating_sub(made).saturating_mul(kernel_bytes);
                shelf.take(key, |pages, method| {
                    copy_fits(cfg, graph_bytes, pending)?;
                    build_copy(cfg, load_opts, &shared.graph, pages, method, &pool)
                })?
            }
        };
        let fresh = early.is_none();
        let mut k = match early {
            Some(k) => k,
            None => pool.install(|| cfg.kernel.create(&layout(&v.kernel_pages), c.graph.n()))?,
        };
        let warm: Vec<u32> = sources[..per_trial].iter().map(|s| c.source(*s)).collect();
        // Warm-up: creates edge-sized arrays and takes first-touch costs out of the timing.
        pool.install(|| k.run(&c.graph, &warm))?;
        prepared[i] = c.graph.id();
        if in_turn && fresh {
            // Its arrays once warm, the edge-sized ones a run makes (TC's, SSSP's pairs)
            // included: the size the copies still to be built are checked beside.
            let bytes: u64 = k.regions()?.iter().map(|r| r.data_bytes).sum();
            kernel_bytes = if made == 0 {
                bytes
            } else {
                kernel_bytes.max(bytes)
            };
            made += 1;
        }
        kernels.push(k);
    }
    let total = cfg.until.planned(cfg.rounds) as u64 * kernels.len() as u64;
    let mut samples: Vec<PagesSample> = Vec::new();
    // Loading and warm-up are over: the count of samples starts.
    progress(0, total);
    let time = |samples: &[PagesSample], v: usize, round: u32| {
        samples
            .iter()
            .find(|s| s.variant == v && s.round == round)
            .map(|s| s.kernel_ns as f64)
    };
    // Per round that ran both, the baseline's time over variant v's.
    let ratios = |samples: &[PagesSample], v: usize| -> Vec<f64> {
        samples
            .iter()
            .filter(|s| s.variant == v)
            .filter_map(|s| Some(time(samples, 0, s.round)? / s.kernel_ns as f64))
            .collect()
    };
    let variants = kernels.len();
    let (round, stopped) = cfg.until.rounds(
        cfg.rounds,
        &mut samples,
        cancel,
        |s| (1..variants).map(|v| ratios(s, v)).collect(),
        |round, samples| {
            let src = &sources[round as usize * per_trial..(round as usize + 1) * per_trial];
            let mut order: Vec<usize> = (0..kernels.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for v in order {
                if cancel() {
                    return Err(Error::Interrupted);
                }
                let c = match copy_of[v] {
                    None => &shared,
                    Some(key) => shelf.take(key, |pages, method| {
                        build_copy(cfg, load_opts, &shared.graph, pages, method, &pool)
                    })?,
                };
                let k = &mut kernels[v];
                if prepared[v] != c.graph.id() {
                    pool.install(|| k.prepare(&c.graph));
                    prepared[v] = c.graph.id();
                }
                let mine: Vec<u32> = src.iter().map(|s| c.source(*s)).collect();
                let quiet = quiet::wait_quiet(
                    hugewise_results::stats::BUSY_SHARE,
                    Duration::from_millis(200),
                    5,
                );
                let kernel_ns = crate::pool::awake(&pool, || -> Result<u64> {
                    let t = Instant::now();
                    k.run(&c.graph, &mine)?;
                    Ok(t.elapsed().as_nanos() as u64)
                })?;
                samples.push(PagesSample {
                    round,
                    variant: v,
                    kernel_ns,
                    sources: src.to_vec(),
                    quiet,
                });
                progress(samples.len() as u64, total);
            }
            Ok(())
        },
    )?;
    let graph_regions = shared.graph.regions()?;
    // Each copy's arrays as they were last held: as they are, or as read when last freed.
    let mut copy_regions = Vec::new();
    for key in 0..shelf.keys.len() {
        copy_regions.push(match (&shelf.built[key], shelf.freed[key].take()) {
            (Some(c), _) => c.graph.regions()?,
            (None, Some(r)) => r,
            (None, None) => Vec::new(),
        });
    }
    let mut summary = Vec::new();
    for (v, k) in kernels.iter().enumerate() {
        let ns: Vec<f64> = (0..round).filter_map(|r| time(&samples, v, r)).collect();
        let (speedup, ci95) = match v {
            0 => (None, None),
            _ => ratio(&ratios(&samples, v)),
        };
        let regions = k.regions()?;
        let own_graph: &[RegionReport] =
            copy_of[v].map_or(&graph_regions, |key| &copy_regions[key]);
        let mapped: u64 = regions
            .iter()
            .chain(own_graph)
            .map(|r| r.backing.total_bytes)
            .sum();
        let huge: u64 = regions
            .iter()
            .chain(own_graph)
            .map(|r| r.backing.huge_bytes())
            .sum();
        let spec = &cfg.variants[v];
        summary.push(PagesVariant {
            name: spec.name.clone(),
            pages: spec.kernel_pages.to_string(),
            graph_pages: spec.graph_pages.as_ref().map(|p| p.to_string()),
            reorder: spec.reorder.map(|m| m.to_string()),
            reorder_cache: copy_of[v].and_then(|key| shelf.cache[key].clone()),
            kernel_first: spec.kernel_first,
            kernel_ns: summarize(&ns).ok_or_else(|| Error::Config("no samples".into()))?,
            speedup_vs_first: speedup,
            speedup_vs_first_ci95: ci95,
            regions,
            huge_footprint_share: if mapped == 0 {
                0.0
            } else {
                huge as f64 / mapped as f64
            },
        });
    }
    Ok(PagesReport {
        graph_spec: cfg.input.to_string(),
        graph: shared.graph.info(),
        graph_pages: cfg.graph_pages.to_string(),
        graph_regions,
        kernel: cfg.kernel,
        threads: cfg.threads,
        rounds: round,
        stopped: Some(stopped),
        load: load_stats,
        file_cache_dropped: cfg.drop_file_cache,
        copies_in_turn: in_turn,
        samples,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(variants: &[&str]) -> Config {
        Config {
            input: Input::parse("kron:12").expect("spec"),
            load: LoadOptions {
                seed: 1,
                weighted: false,
                symmetrize: true,
                fit: Default::default(),
            },
            graph_pages: PolicyMap::parse("all=base", ALL_REGIONS).expect("pages"),
            kernel: Spec::default_for("bfs").expect("bfs"),
            variants: variants
                .iter()
                .map(|s| Variant::parse(s).expect("variant"))
                .collect(),
            rounds: 3,
            until: Until::default(),
            threads: 2,
            reorder_cache: None,
            drop_file_cache: false,
            copies: Copies::Auto,
        }
    }

    #[test]
    fn alternates_and_backs_each_variant_as_asked() {
        let r = run(&cfg(&["all=base", "all=base,property=thp"]), &mut |_, _| {}).expect("run");
        assert_eq!(r.samples.len(), 6);
        let order: Vec<usize> = r.samples.iter().map(|s| s.variant).collect();
        assert_eq!(order, [0, 1, 1, 0, 0, 1]);
        assert!(r.summary[0].speedup_vs_first.is_none());
        assert!(r.summary[1].speedup_vs_first.expect("ratio") > 0.0);
        let prop = |v: usize| {
            r.summary[v]
                .regions
                .iter()
                .find(|x| x.name == "property")
                .expect("property")
                .backing
                .huge_bytes()
        };
        assert_eq!(prop(0), 0);
        assert!(prop(1) > 0);
        // The same source in both variants of a round.
        assert_eq!(r.samples[0].sources, r.samples[1].sources);
    }

    #[test]
    fn copies_are_built_in_turn_only_where_they_do_not_all_fit() {
        const G: u64 = 1 << 30;
        // Three copies of 1 GiB and two kernels' arrays of 256 MiB: 3.5 GiB.
        let need = |room: u64, c: Copies| c.in_turn(3, G, 2, G / 4, Some(room), false);
        assert!(!need(7 * G / 2, Copies::Auto), "exactly the room: held");
        assert!(need(7 * G / 2 - 1, Copies::Auto), "a byte short: in turn");
        assert!(!need(0, Copies::Held));
        assert!(need(100 * G, Copies::InTurn));
        // A room that cannot be read holds them, as before they were counted.
        assert!(!Copies::Auto.in_turn(3, G, 2, G / 4, None, false));
        // One copy is built once whether held or not; a kernel-first layout keeps its order.
        assert!(!Copies::Auto.in_turn(1, G, 2, G / 4, Some(0), false));
        assert!(!Copies::Auto.in_turn(3, G, 2, G / 4, Some(0), true));
        assert!(!Copies::InTurn.in_turn(0, G, 2, G / 4, Some(0), false));
    }

    #[test]
    fn in_turn_a_shelf_holds_one_copy_and_reads_the_one_it_frees() {
        let base = PolicyMap::parse("all=base", ALL_REGIONS).expect("pages");
        let (g, _) = load(
            &Input::parse("kron:8").expect("spec"),
            cfg(&[]).load,
            &layout(&base),
            &mut |_| Ok(()),
        )
        .expect("generate");
        let same = Relabeling::from_order((0..g.n() as u32).collect()).expect("order");
        let mut shelf = Shelf {
            keys: vec![(base.clone(), None), (base.clone(), None)],
            in_turn: true,
            built: vec![None, None],
            freed: vec![None, None],
            cache: vec![None, None],
        };
        let mut builds = 0;
        let mut take = |shelf: &mut Shelf, key: usize| -> u64 {
            shelf
                .take(key, |pages, _| {
                    builds += 1;
                    Ok(Copy {
                        graph: reorder::relabel(&g, &same, &layout(pages))?,
                        relabeling: None,
                        cache: None,
                    })
                })
                .expect("built")
                .graph
                .id()
        };
        let first = take(&mut shelf, 0);
        assert_eq!(
            take(&mut shelf, 0),
            first,
            "held while it is the one asked for"
        );
        let second = take(&mut shelf, 1);
        assert!(shelf.built[0].is_none(), "freed for the other");
        assert!(shelf.freed[0].as_ref().is_some_and(|r| !r.is_empty()));
        assert_ne!(take(&mut shelf, 0), first, "built anew");
        assert!(shelf.built[1].is_none());
        assert_ne!(second, first);
        assert_eq!(builds, 3);
    }

    #[test]
    fn copies_built_in_turn_run_from_the_same_sources_and_say_so() {
        // Only the graph's own arrays can be huge in the third: its copy's backing, read when
        // the copy was last freed or at the end, is what its share shows.
        let variants = [
            "all=base;name:base",
            "all=base;reorder:dbg;name:dbg",
            "all=base;graph:all=thp;name:graph huge",
        ];
        let mut c = cfg(&variants);
        c.kernel = Spec::default_for("sssp").expect("sssp");
        let held = run(&c, &mut |_, _| {}).expect("held");
        c.copies = Copies::InTurn;
        let turn = run(&c, &mut |_, _| {}).expect("in turn");
        assert!(!held.copies_in_turn);
        assert!(turn.copies_in_turn);
        assert_eq!(turn.samples.len(), 9);
        assert!(
            turn.summary[2].huge_footprint_share > 0.0,
            "{:?}",
            turn.summary[2]
        );
        assert_eq!(turn.summary[0].huge_footprint_share, 0.0);
        assert_eq!(turn.summary[1].huge_footprint_share, 0.0);
        let sources = |r: &PagesReport| -> Vec<Vec<u32>> {
            r.samples.iter().map(|s| s.sources.clone()).collect()
        };
        assert_eq!(
            sources(&held),
            sources(&turn),
            "the same sources, held or in turn"
        );
        // Without copies of its own, a comparison holds nothing in turn.
        let mut plain = cfg(&["all=base", "all=base,property=thp"]);
        plain.copies = Copies::InTurn;
        assert!(!run(&plain, &mut |_, _| {}).expect("run").copies_in_turn);
        // Nor can it keep a kernel-first layout's order.
        let mut ordered = cfg(&["all=base", "all=thp;graph:all=thp;kernel-first"]);
        ordered.copies = Copies::InTurn;
        let e = run(&ordered, &mut |_, _| {})
            .expect_err("refused")
            .to_string();
        assert!(e.contains("kernel-first"), "{e}");
    }

    #[test]
    fn variants_name_kernel_arrays_only() {
        let e = Variant::parse("edges=thp").expect_err("graph array in kernel pages");
        assert!(e.to_string().contains("'edges=thp'"), "{e}");
        assert!(e.to_string().contains("graph:PAGES"), "{e}");
        let e = Variant::parse("all=thp;property=base").expect_err("two kernel maps");
        assert!(e.to_string().contains("second set"), "{e}");
        assert!(Variant::parse("all=base;reorder:sideways").is_err());
        let d = Variant::defaults().expect("the default variants parse");
        assert_eq!(d.len(), 2);
        assert_ne!(d[0].kernel_pages, d[1].kernel_pages);
        let v = Variant::parse("property=thp-prefix:5%;reorder:dbg;name:hot").expect("parse");
        assert_eq!(v.reorder, Some(Method::Dbg));
        assert_eq!(v.name.as_deref(), Some("hot"));
        assert!(run(&cfg(&["all=base"]), &mut |_, _| {}).is_err());
    }

    #[test]
    fn reordered_and_ideal_copies_run_from_the_same_sources() {
        let r = run(
            &cfg(&[
                "all=base;name:base",
                "all=base;reorder:dbg;name:dbg",
                "all=thp;graph:all=thp;name:ideal",
            ]),
            &mut |_, _| {},
        )
        .expect("run");
        assert_eq!(r.summary[1].reorder.as_deref(), Some("dbg"));
        assert_eq!(r.summary[2].graph_pages.as_deref(), Some("all=thp"));
        // The ideal's graph arrays are its own and huge; the baseline's are not.
        assert_eq!(r.summary[0].huge_footprint_share, 0.0);
        assert!(
            r.summary[2].huge_footprint_share > 0.0,
            "{:?}",
            r.summary[2]
        );
        for round in 0..3 {
            let s: Vec<_> = r.samples.iter().filter(|s| s.round == round).collect();
            assert!(s.windows(2).all(|w| w[0].sources == w[1].sources));
        }
    }

    #[test]
    fn a_reordered_copy_of_a_file_is_kept_and_read_back() {
        use hugewise_graph::cache::CacheOutcome;
        let d = tempfile::tempdir().expect("tmp");
        let mut c = cfg(&["all=base", "all=base;reorder:dbg"]);
        let (g, _) =
            hugewise_graph::load::load(&c.input, c.load, &Layout::default(), &mut |_| Ok(()))
                .expect("generate");
        let file = d.path().join("k12.hwg");
        hugewise_graph::save::save(&g, &file).expect("save");
        c.input = Input::File(file);
        let cache = Cache::new(d.path().join("cache"))
            .min_graph_bytes(0)
            .keep_free_bytes(0);
        c.reorder_cache = Some(cache.clone());
        let first = run(&c, &mut |_, _| {}).expect("first");
        let entry = cache
            .entry(&c.input, &c.load, Method::Dbg, c.load.seed)
            .expect("entry");
        let key = entry.dir().join("key");
        let written = std::fs::metadata(&key)
            .expect("kept")
            .modified()
            .expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = run(&c, &mut |_, _| {}).expect("second");
        let read = std::fs::metadata(&key)
            .expect("still there")
            .modified()
            .expect("mtime");
        assert_eq!(
            written, read,
            "the second run read the entry, not wrote it again"
        );
        let sources = |r: &PagesReport| -> Vec<Vec<u32>> {
            r.samples.iter().map(|s| s.sources.clone()).collect()
        };
        assert_eq!(sources(&first), sources(&second));
        let outcome = |r: &PagesReport| r.summary[1].reorder_cache.as_ref().map(|c| c.outcome);
        assert_eq!(outcome(&first), Some(CacheOutcome::Stored));
        assert_eq!(outcome(&second), Some(CacheOutcome::Hit));
        assert!(first.summary[0].reorder_cache.is_none());
        // Asked to, a run leaves neither the input's pages nor the entry's in the page cache.
        // (Written back first: the kernel drops clean pages only.)
        let Input::File(input) = c.input.clone() else {
            unreachable!("a file")
        };
        let files: Vec<std::path::PathBuf> = std::iter::once(input).chain(entry.files()).collect();
        let cached = || -> Vec<usize> {
            files
                .iter()
                .map(|f| hugewise_sys::pagecache::cached(f).expect("mincore"))
                .collect()
        };
        for f in &files {
            std::fs::File::open(f)
                .expect("open")
                .sync_all()
                .expect("sync");
        }
        c.drop_file_cache = false;
        run(&c, &mut |_, _| {}).expect("third");
        let kept = cached();
        assert!(kept.iter().all(|&n| n > 0), "{kept:?} pages cached");
        c.drop_file_cache = true;
        run(&c, &mut |_, _| {}).expect("fourth");
        let left = cached();
        assert!(
            left.iter().zip(&kept).all(|(l, k)| l * 4 < *k),
            "{left:?} of {kept:?} pages still cached"
        );
    }
}
