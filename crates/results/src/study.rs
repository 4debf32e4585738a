//! What `hugewise study` plans and records: a preset expanded into runs, each run saved as a
//! result file of its own kind (`bench-pages`, `sim`, `faultlat`) whose `meta.study` names the
//! study and run it belongs to and the machine shape it ran in.
//!
//! A study directory holds `study.json` (the plan, kind `hugewise/study`) and `runs/<id>.json`.
//! The report reads these files only; the headlines are computed from them by
//! [`headlines`], so that merged directories from many machines give the same answer as the
//! study printed at its end.

use serde::{Deserialize, Serialize};

use crate::env::{FragmentPages, ShapeReport};
use crate::pagebench::PagesReport;
use crate::scale::{PaperScale, Scale};
use crate::sim::Curves;
use crate::stats::{median, MedianInterval};
use crate::swapstudy::SwapStudy;

/// A preset expanded for this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyPlan {
    /// The preset's name (`quick`, `page-size`, ...).
    pub preset: String,
    /// The question the preset answers, in one line.
    pub question: String,
    /// The seed figures it reproduces.
    pub reproduces: String,
    /// Whether the shortened variant was asked for.
    pub quick: bool,
    /// The Kronecker scale asked for the measured runs' graph (`--scale`); absent for the
    /// preset's own, and in plans from before it could be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u32>,
    /// Repetitions (rounds) per comparison.
    pub repeat: u32,
    /// Worker threads of each kernel.
    pub threads: usize,
    /// The runs, in the order they run.
    pub runs: Vec<PlannedRun>,
    /// Estimated wall time of all runs.
    pub estimate_s: f64,
    /// The seeds' numbers the headlines are set against.
    pub claims: Vec<Claim>,
}

/// One run of a study: one result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// File stem under `runs/`; unique within the study, stable across runs of the same plan.
    pub id: String,
    /// What the run shows, for tables and progress.
    pub label: String,
    /// The machine shape it runs in.
    pub shape: Shape,
    /// The work.
    pub work: Work,
    /// Estimated wall time, shaping included.
    pub estimate_s: f64,
    /// Estimated bytes the run holds at its peak (what memory pressure is set against);
    /// `null` when the input's size is not known before loading it.
    pub footprint_bytes: Option<u64>,
}

/// A machine shape, applied before a run and put back after it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Share of the free memory left fragmented (0 to 0.95).
    pub fragment: Option<f64>,
    /// What keeps each broken block broken: an unmovable page (the seeds' fragmentation,
    /// left unsaid in saved plans) or a movable one, which compaction can undo.
    #[serde(default, skip_serializing_if = "FragmentPages::is_unmovable")]
    pub fragment_pages: FragmentPages,
    /// Leave this much free beyond the run's own footprint (memory pressure).
    pub free_beyond_footprint_bytes: Option<u64>,
    /// `vm.compaction_proactiveness` for the run (0 to 100; `null`: the machine's), set
    /// through the env journal and put back after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactiveness: Option<u32>,
}

impl Shape {
    /// Whether the machine is left as it is.
    pub fn is_none(&self) -> bool {
        self.fragment.is_none()
            && self.free_beyond_footprint_bytes.is_none()
            && self.proactiveness.is_none()
    }

    /// A short name (`as is`, `frag 50%`, `free +1.5 GiB`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = self.fragment {
            parts.push(match self.fragment_pages {
                FragmentPages::Unmovable => format!("frag {:.0}%", f * 100.0),
                FragmentPages::Movable => format!("frag {:.0}% movable", f * 100.0),
            });
        }
        if let Some(b) = self.free_beyond_footprint_bytes {
            parts.push(format!("free +{:.1} GiB", b as f64 / (1u64 << 30) as f64));
        }
        if let Some(p) = self.proactiveness {
            parts.push(format!("proactiveness {p}"));
        }
        if parts.is_empty() {
            "as is".into()
        } else {
            parts.join(", ")
        }
    }
}

/// One layout compared in a `pages` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Its name in tables (`base`, `all THP`, `DBG + hot 5%`).
    pub name: String,
    /// Policies of the kernel's arrays.
    pub kernel_pages: String,
    /// Policies of the graph's arrays (its own copy of the graph when they differ from the
    /// first variant's).
    pub graph_pages: String,
    /// Reordering of the graph's copy (`dbg`), or none.
    pub reorder: Option<String>,
    /// The kernel's arrays are allocated (and faulted in) before the graph's copy, so that
    /// under pressure they get the huge pages first.
    #[serde(default)]
    pub kernel_first: bool,
}

/// What a run does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Work {
    /// One kernel on one graph, its layouts alternated round by round.
    Pages {
        /// Graph spec.
        graph: String,
        /// Kernel name.
        kernel: String,
        /// Layouts; the first is the baseline.
        variants: Vec<Variant>,
        /// Rounds.
        rounds: u32,
    },
    /// A traced kernel run, simulated under promotion policies and budgets.
    Curve {
        /// Graph spec.
        graph: String,
        /// Kernel name.
        kernel: String,
        /// Policies (`pcc`, `hawkeye`, `linux`, ...).
        policies: Vec<String>,
        /// Budgets as shares of the footprint (0 to 1).
        budgets: Vec<f64>,
        /// Reorder before tracing.
        reorder: Option<String>,
        /// PageRank's iteration cap for the trace (`null`: until it converges): its iterations
        /// repeat one access pattern, so a few stand for all of them at a fraction of the
        /// trace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_iters: Option<u32>,
        /// Physical memory every configuration is simulated in (`hugewise sim --phys`:
        /// `mega:memory=2x:others=50%:fragment=50%`); `null`: a free 2 MiB block is always
        /// there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phys: Option<String>,
    },
    /// Page-fault latency of a fresh region.
    Faultlat {
        /// Region size.
        size_bytes: u64,
        /// `base`, `thp`, or `base` then collapsed.
        policy: String,
        /// Collapse after faulting as 4 KiB.
        then_collapse: bool,
    },
    /// Page faults of a fresh region alone and with the daemon collapsing it beside them, paced
    /// and unpaced, alternated (`hugewise bench faultlat`).
    FaultBench {
        /// Region size.
        size_bytes: u64,
        /// Rounds.
        rounds: u32,
        /// The daemon's policy (`mega`).
        policy: String,
        /// The paced daemon's share of the faults its collapses may hold up.
        fault_waits: f64,
    },
    /// One kernel held to shares of its footprint in memory (the rest swapped), at several
    /// thread overcommit factors: each point a `hugewise run --memory` of its own.
    Swap {
        /// Graph spec.
        graph: String,
        /// Kernel name.
        kernel: String,
        /// Page policies of every array (`all=base`, `all=thp`,
        /// `all=base,property=thp-prefix:5%+lock`).
        pages: String,
        /// Vertex order the runs use (`dbg`), or `null` for the graph's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reorder: Option<String>,
        /// Shares of the footprint allowed in memory (1 = all of it), largest first.
        shares: Vec<f64>,
        /// Overcommit factors (`1`, `4`, `auto`).
        factors: Vec<String>,
        /// `vm.page-cluster` for the runs (`null`: the machine's).
        page_cluster: Option<u32>,
        /// Timed trials of each point.
        trials: u32,
    },
    /// A real Redis server filled, read, partly emptied and refilled under THP modes and
    /// hugewise exec's variants (`hugewise bench bloat`).
    Bloat {
        /// Keys in the key space.
        keys: u64,
        /// Bytes per value.
        value_bytes: u64,
        /// Share of the keys deleted and filled again.
        delete_share: f64,
        /// Variants (`never`, `always`, `exec:*=system+mega`, ...).
        variants: Vec<String>,
        /// Rounds.
        rounds: u32,
    },
    /// The promotion benchmark's four arms (`hugewise bench promote`), its daemon arm with
    /// one compaction controller: the hot-spot stream, or a graph kernel whose arms are each
    /// a `hugewise run` of their own.
    Promote {
        /// Graph spec for a graph kernel's arms; `null`: the hot-spot stream.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        graph: Option<String>,
        /// Kernel name, with `graph`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kernel: Option<String>,
        /// The stream's region size (unused for a graph).
        bytes: u64,
        /// Reads of each stream run, or timed trials of each graph run.
        reads: u64,
        /// Rounds.
        rounds: u32,
        /// Share of the region (or footprint) the plan and the daemon may make huge.
        budget_share: f64,
        /// The daemon's compaction controller (`auto`, `off`, `always`).
        compact: String,
        /// The daemon's interval.
        interval_ms: u64,
    },
    /// A program profiled, then run on 4 KiB pages, under THP always and THP for everything,
    /// and with its hot call sites packed into a hot arena (`hugewise bench packing`, the
    /// built-in workload).
    Packing {
        /// Hot records (and as many cold ones).
        records: u64,
        /// Pointer-chase steps.
        hops: u64,
        /// Most bytes of the hot arena.
        hot_arena_bytes: u64,
        /// Rounds.
        rounds: u32,
    },
}

impl Work {
    /// The graph a run loads, if any.
    pub fn graph(&self) -> Option<&str> {
        self.graph_and_kernel().0
    }

    /// The graph kernel the work runs, when it runs one.
    pub fn kernel(&self) -> Option<&str> {
        self.graph_and_kernel().1
    }

    fn graph_and_kernel(&self) -> (Option<&str>, Option<&str>) {
        match self {
            Work::Pages { graph, kernel, .. }
            | Work::Curve { graph, kernel, .. }
            | Work::Swap { graph, kernel, .. } => (Some(graph), Some(kernel)),
            Work::Promote { graph, kernel, .. } => (graph.as_deref(), kernel.as_deref()),
            Work::Faultlat { .. }
            | Work::FaultBench { .. }
            | Work::Bloat { .. }
            | Work::Packing { .. } => (None, None),
        }
    }
}

/// What a run file's `meta.study` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyTag {
    /// The preset.
    pub preset: String,
    /// The run's id.
    pub run: String,
    /// The run's label.
    pub label: String,
    /// The shape asked for.
    pub shape: Shape,
    /// What shaping did and measured; `null` when the machine was left as it was.
    pub shaped: Option<ShapeReport>,
}

/// A number from a seed paper that a headline is set against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// What is measured, in the study's terms (`speedup over 4 KiB, DBG + hot prefix`).
    pub what: String,
    /// Which metric of the runs answers it.
    pub metric: Metric,
    /// The paper's number, when it gives one this metric can be set against.
    pub paper_value: Option<f64>,
    /// The paper's number as the paper states it (`1.26–1.57x`), or what it says instead.
    pub paper_text: String,
    /// Where it is from (`IISWC'22 Fig. 10`).
    pub source: String,
    /// Why this machine's number may differ, in one line (VM, other CPU, smaller graph).
    pub gap: String,
    /// The paper's smallest input, for the headline's scale to be set against (`null` when
    /// the claim has none to set against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_scale: Option<PaperScale>,
    /// The kernel whose runs alone answer it (`pr`), when the claim is about one kernel: a
    /// mean over kernels that gain and kernels that do not says neither (absent: every run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// A headline metric, computed from `pages` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "of", rename_all = "kebab-case")]
pub enum Metric {
    /// Median speedup over the baseline of the variant so named, geometric mean over runs.
    Speedup {
        /// Variant name.
        variant: String,
    },
    /// Median speedup of `variant` over the variant `over` (both against the run's baseline),
    /// geometric mean over runs: what huge pages add on top of a reordering, say.
    SpeedupOver {
        /// Variant name.
        variant: String,
        /// The variant it is set against.
        over: String,
    },
    /// Share of the ideal's gain that the variant reaches: (speedup − 1) / (ideal − 1),
    /// geometric means over the runs whose ideal layout's 95 % interval lies above 1 (none
    /// when it gains less than [`MIN_IDEAL_GAIN`]); with `over`, the variant's speedup is taken over that
    /// variant's (what huge pages add to a reordering, set against what every array huge
    /// gives), so that the reordering's own gain is not counted as the huge pages'.
    ShareOfIdeal {
        /// Variant name.
        variant: String,
        /// The ideal's variant name.
        ideal: String,
        /// The variant the speedup is taken over (default: the baseline).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        over: Option<String>,
    },
    /// Share of the footprint in huge pages, read from the kernel, median over runs.
    HugeShare {
        /// Variant name.
        variant: String,
    },
    /// Simulated: share of the page-table reads that every page huge removes which `policy`
    /// removes within `budget`, median over `sim` runs. With any fixed cost a read, it is the
    /// share of the all-huge's saving in time. The simulator's estimated speedups are not
    /// used: uncalibrated, they assume 10 ns a read, which on a fast host made the walks 98 %
    /// of PageRank's measured time at kron:22 (the model keeps a tenth for the rest: an
    /// all-huge estimate of 10.8x), and their ratio then read 51 % of the gain for 92 % of the
    /// reads removed, where the same kernel and graph read 88 % on a slower host.
    SimShareOfIdeal {
        /// Policy name (`pcc`).
        policy: String,
        /// Budget as a share of the footprint.
        budget: f64,
    },
    /// Under swapping: median time at factor 1 over median time at `factor`, each at a share
    /// of memory in `shares` (all the runs' shares below 1 when empty), geometric mean over
    /// the points of every `swap` run.
    OvercommitGain {
        /// Factor (`4`, `auto`).
        factor: String,
        /// Memory shares taken.
        #[serde(default)]
        shares: Vec<f64>,
    },
    /// Under swapping: median time at `share` over the time with all of the footprint in
    /// memory, both at factor 1, geometric mean over `swap` runs.
    Slowdown {
        /// Memory share.
        share: f64,
    },
    /// On Redis: the variant's throughput over THP `always`'s (same round), median over
    /// `bloat` runs.
    ThroughputVsAlways {
        /// Variant label (`exec:*=system+mega`).
        variant: String,
    },
    /// On Redis: the variant's bloat over THP `always`'s, median over `bloat` runs.
    BloatVsAlways {
        /// Variant label.
        variant: String,
    },
    /// Packing: the variant's speedup over 4 KiB pages only, geometric mean over `packing`
    /// runs.
    PackingSpeedup {
        /// Variant label (`packed`, `thp-all`, ...).
        variant: String,
    },
    /// Packing: the variant's huge bytes over THP for everything's, median over `packing`
    /// runs.
    PackingHugeShare {
        /// Variant label.
        variant: String,
    },
    /// Promotion on the hot-spot stream: seconds from the clock's start until the daemon's
    /// huge bytes reached 90 % of its budget, with compaction controller `compact` at
    /// fragmentation `fragment` (the machine's own proactiveness setting for kcompactd), the
    /// largest of the runs' medians (a run that never reached it: no value).
    PromoteReach90 {
        /// Compaction controller.
        compact: String,
        /// Fragmentation level of the runs taken.
        fragment: f64,
        /// What keeps their blocks broken (unmovable pages when unsaid).
        #[serde(default, skip_serializing_if = "FragmentPages::is_unmovable")]
        pages: FragmentPages,
    },
    /// Promotion on the hot-spot stream: the daemon's speedup over 4 KiB pages at
    /// fragmentation `fragment` over the same controller's on an unfragmented machine (same
    /// pressure), geometric mean over the pairs.
    PromoteSpeedupVsUnfragmented {
        /// Compaction controller.
        compact: String,
        /// Fragmentation level.
        fragment: f64,
    },
    /// Page faults beside the daemon: the p99.9 fault latency of arm `arm` (`daemon`,
    /// `unpaced`) over that of the faults alone in the same round, the median of a run's
    /// per-round ratios, the largest over the runs at fragmentation `fragment` (0: unshaped).
    FaultTailVsAlone {
        /// The arm (`daemon`: paced by the faults; `unpaced`).
        arm: String,
        /// Fragmentation level of the runs taken.
        fragment: f64,
    },
    /// Promotion: the CPU time of the daemon's compactions over the run's wall time (of one
    /// core), the largest of the runs' medians with controller `compact`.
    CompactionCpuShare {
        /// Compaction controller.
        compact: String,
    },
    /// Simulated physical memory: pages moved per block freed under compaction `phys` over
    /// the same under `over`, for the same policy, budget and starting memory, geometric mean
    /// over the points both freed blocks in.
    SimPagesPerBlock {
        /// Compaction model (`mega`).
        phys: String,
        /// The model set against (`ingens`).
        over: String,
    },
}

impl Metric {
    /// Whether a smaller value meets its claim (a time, a cost, a ratio of work done), rather
    /// than a larger one (a speedup, a share).
    pub fn lower_is_better(&self) -> bool {
        matches!(
            self,
            Metric::PromoteReach90 { .. }
                | Metric::CompactionCpuShare { .. }
                | Metric::SimPagesPerBlock { .. }
                | Metric::FaultTailVsAlone { .. }
        )
    }
}

/// The median over `bloat` runs of one figure of the variant labelled `label`.
fn of_bloat_variant(
    ev: Evidence<'_>,
    label: &str,
    figure: fn(&crate::bloat::BloatVariant) -> Option<f64>,
) -> (Option<f64>, usize) {
    let xs: Vec<f64> = ev
        .bloats
        .iter()
        .filter_map(|r| figure(r.variants.iter().find(|v| v.label == label)?))
        .filter(|x| x.is_finite())
        .collect();
    let n = xs.len();
    (median(&xs), n)
}

/// One figure of the variant labelled `label` in every `packing` run that has it.
fn of_packing_variant(
    ev: Evidence<'_>,
    label: &str,
    figure: fn(&crate::packing::PackingVariant) -> Option<f64>,
) -> Vec<f64> {
    ev.packings
        .iter()
        .filter_map(|r| figure(r.variants.iter().find(|v| v.label == label)?))
        .filter(|x| x.is_finite())
        .collect()
}

/// A headline: a claim, what this machine measured, and how many runs it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The claim.
    pub claim: Claim,
    /// Measured here; `null` when no run measured it.
    pub measured: Option<f64>,
    /// Runs it is computed from.
    pub runs: usize,
    /// The widest of its runs' 95 % intervals: the lowest lower bound and the highest upper
    /// bound among them (`null` when the metric's runs give none: simulations are
    /// deterministic, ratios of two medians have no interval of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<MedianInterval>,
    /// The inputs its runs were measured on, against the paper's (`null` in headlines saved
    /// before this field, or when the plan has no run of the metric's kind, or, for a claim
    /// about one kernel, none of that kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Scale>,
}

/// The least gain of the ideal layout that a share of it is computed from: below it, the
/// ratio divides noise by noise.
pub const MIN_IDEAL_GAIN: f64 = 0.05;

fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| *x <= 0.0) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// The 95 % interval of the ideal layout's speedup in run `r`, when the run has one.
fn ideal_interval<'r>(r: &'r PagesReport, ideal: &str) -> Option<&'r MedianInterval> {
    r.summary
        .iter()
        .find(|v| v.name.as_deref() == Some(ideal))?
        .speedup_vs_first_ci95
        .as_ref()
}

/// A variant's median speedup over the run's baseline (1 for the baseline itself).
fn speedup(r: &PagesReport, name: &str) -> Option<f64> {
    let i = r
        .summary
        .iter()
        .position(|v| v.name.as_deref() == Some(name))?;
    if i == 0 {
        return Some(1.0);
    }
    r.summary[i].speedup_vs_first
}

/// The runs a study's metrics are computed from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// `pages` runs.
    pub pages: &'a [&'a PagesReport],
    /// `sim` runs, each with the kernel its trace ran (empty when not known).
    pub curves: &'a [(&'a str, &'a Curves)],
    /// `swap` runs.
    pub swaps: &'a [&'a SwapStudy],
    /// `bloat` runs.
    pub bloats: &'a [&'a crate::bloat::BloatReport],
    /// `packing` runs.
    pub packings: &'a [&'a crate::packing::PackingReport],
    /// `bench-promote` runs, with the machine shape each ran in.
    pub promotes: &'a [(&'a Shape, &'a crate::promote::PromoteBenchReport)],
    /// `bench-faultlat` runs, with the machine shape each ran in.
    pub faults: &'a [(&'a Shape, &'a crate::faultlat::FaultBenchReport)],
    /// The ids of the plan's runs that have a result; empty when not known (every planned
    /// run is then taken to have one). A headline's scale is that of the runs it rests on.
    pub answered: &'a [&'a str],
}

/// The value of `metric` over the runs, and how many runs it rests on (`None` when no run has
/// what it needs). A figure that is not finite (a ratio of two zero medians) is left out and
/// not counted as a run.
pub fn measure(metric: &Metric, ev: Evidence<'_>) -> (Option<f64>, usize) {
    match metric {
        Metric::Speedup { variant } => {
            let xs: Vec<f64> = ev
                .pages
                .iter()
                .filter_map(|r| speedup(r, variant))
                .filter(|x| x.is_finite())
                .collect();
            (geomean(&xs), xs.len())
        }
        Metric::SpeedupOver { variant, over } => {
            let xs: Vec<f64> = ev
                .pages
                .iter()
                .filter_map(|r| Some(speedup(r, variant)? / speedup(r, over)?))
                .filter(|x| x.is_finite())
                .collect();
            (geomean(&xs), xs.len())
        }
        Metric::ShareOfIdeal {
            variant,
            ideal,
            over,
        } => {
            // Each run's (variant's speedup, the ideal's), and whether the ideal's interval
            // stays above 1: a run whose ideal layout's interval reaches 1 has shown no gain
            // to share, and counts as a run without a share.
            let runs: Vec<(f64, f64, bool)> = ev
                .pages
                .iter()
                .filter_map(|r| {
                    let under = match over {
                        Some(o) => speedup(r, o)?,
                        None => 1.0,
                    };
                    let gained = ideal_interval(r, ideal).is_none_or(|ci| ci.lo > 1.0);
                    Some((speedup(r, variant)? / under, speedup(r, ideal)?, gained))
                })
                .filter(|(v, i, _)| v.is_finite() && i.is_finite())
                .collect();
            let (v, i): (Vec<f64>, Vec<f64>) = runs
                .iter()
                .filter(|(_, _, gained)| *gained)
                .map(|&(v, i, _)| (v, i))
                .unzip();
            // A share of a gain within the noise of the measurement says nothing.
            let share = match (geomean(&v), geomean(&i)) {
                (Some(v), Some(i)) if i >= 1.0 + MIN_IDEAL_GAIN => Some((v - 1.0) / (i - 1.0)),
                _ => None,
            };
            (share, runs.len())
        }
        Metric::HugeShare { variant } => {
            let xs: Vec<f64> = ev
                .pages
                .iter()
                .filter_map(|r| {
                    r.summary
                        .iter()
                        .find(|v| v.name.as_deref() == Some(variant))
                        .map(|v| v.huge_footprint_share)
                })
                .filter(|x| x.is_finite())
                .collect();
            let n = xs.len();
            (median(&xs), n)
        }
        Metric::SimShareOfIdeal { policy, budget } => {
            let xs: Vec<f64> = ev
                .curves
                .iter()
                .filter_map(|(_, c)| {
                    let at = c.points.iter().find(|p| {
                        p.policy == *policy
                            && p.budget_share.is_some_and(|b| (b - budget).abs() < 1e-9)
                    })?;
                    c.share_of_reads_removed(at)
                })
                .filter(|x| x.is_finite())
                .collect();
            let n = xs.len();
            (median(&xs), n)
        }
        Metric::OvercommitGain { factor, shares } => {
            let in_shares = |s: f64| {
                if shares.is_empty() {
                    s < 1.0
                } else {
                    shares.iter().any(|x| (x - s).abs() < 1e-9)
                }
            };
            let (mut xs, mut runs) = (Vec::new(), 0);
            for r in ev.swaps.iter().filter(|r| plain_swap(r)) {
                let before = xs.len();
                xs.extend(
                    r.points
                        .iter()
                        .filter(|p| p.factor == *factor && in_shares(p.share))
                        .filter_map(|p| Some(r.point(p.share, "1")?.median_s()? / p.median_s()?))
                        .filter(|x| x.is_finite()),
                );
                runs += usize::from(xs.len() > before);
            }
            (geomean(&xs), runs)
        }
        Metric::ThroughputVsAlways { variant } => {
            of_bloat_variant(ev, variant, |v| v.throughput_vs_always)
        }
        Metric::BloatVsAlways { variant } => of_bloat_variant(ev, variant, |v| v.bloat_vs_always),
        Metric::PackingSpeedup { variant } => {
            let xs = of_packing_variant(ev, variant, |v| v.speedup_vs_4k);
            (geomean(&xs), xs.len())
        }
        Metric::PackingHugeShare { variant } => {
            let xs = of_packing_variant(ev, variant, |v| v.huge_share_of_thp_all);
            let n = xs.len();
            (median(&xs), n)
        }
        Metric::PromoteReach90 {
            compact,
            fragment,
            pages,
        } => {
            let xs: Vec<f64> = hotspot_runs(ev, compact, Some((*fragment, *pages)))
                .filter_map(|w| w.reach_90_ms.map(|ms| ms / 1e3))
                .collect();
            let n = xs.len();
            (xs.iter().copied().reduce(f64::max), n)
        }
        Metric::PromoteSpeedupVsUnfragmented { compact, fragment } => {
            let unfragmented: Vec<f64> = hotspot_runs(ev, compact, None)
                .filter_map(|w| w.daemon_speedup)
                .collect();
            let xs: Vec<f64> = match geomean(&unfragmented) {
                Some(u) => hotspot_runs(ev, compact, Some((*fragment, FragmentPages::Unmovable)))
                    .filter_map(|w| Some(w.daemon_speedup? / u))
                    .filter(|x| x.is_finite())
                    .collect(),
                None => Vec::new(),
            };
            (geomean(&xs), xs.len())
        }
        Metric::FaultTailVsAlone { arm, fragment } => {
            let xs: Vec<f64> = fault_arms(ev, arm, *fragment)
                .filter_map(|a| a.p999_vs_alone)
                .filter(|x| x.is_finite())
                .collect();
            let n = xs.len();
            (xs.iter().copied().reduce(f64::max), n)
        }
        Metric::CompactionCpuShare { compact } => {
            let xs: Vec<f64> = ev
                .promotes
                .iter()
                .filter(|(shape, _)| shape.proactiveness.is_none_or(|p| p == LINUX_PROACTIVENESS))
                .flat_map(|(_, r)| &r.workloads)
                .filter(|w| w.compact.as_deref() == Some(compact.as_str()))
                .filter_map(|w| w.daemon_compaction_cpu_share)
                .collect();
            let n = xs.len();
            (xs.iter().copied().reduce(f64::max), n)
        }
        Metric::SimPagesPerBlock { phys, over } => {
            let xs = pages_per_block_ratios(ev, phys, over);
            (geomean(&xs), xs.len())
        }
        Metric::Slowdown { share } => {
            let xs: Vec<f64> = ev
                .swaps
                .iter()
                .filter(|r| plain_swap(r))
                .filter_map(|r| Some(r.point(*share, "1")?.median_s()? / r.baseline_s()?))
                .filter(|x| x.is_finite())
                .collect();
            (geomean(&xs), xs.len())
        }
    }
}

/// Linux's default `vm.compaction_proactiveness`: runs at it stand for the machine as Linux
/// ships it.
pub const LINUX_PROACTIVENESS: u32 = 20;

/// The hot-spot stream's workloads of `bench-promote` runs with controller `compact`, at
/// fragmentation `fragment` by pages of that kind (`None`: unfragmented), kcompactd at
/// Linux's default.
fn hotspot_runs<'a>(
    ev: Evidence<'a>,
    compact: &'a str,
    fragment: Option<(f64, FragmentPages)>,
) -> impl Iterator<Item = &'a crate::promote::PromoteBenchWorkload> + 'a {
    ev.promotes
        .iter()
        .filter(move |(shape, _)| {
            let f = shape.fragment.filter(|f| *f > 0.0);
            let same = match (f, fragment) {
                (None, None) => true,
                (Some(a), Some((b, pages))) => {
                    (a - b).abs() < 1e-9 && shape.fragment_pages == pages
                }
                _ => false,
            };
            same && shape.proactiveness.is_none_or(|p| p == LINUX_PROACTIVENESS)
        })
        .flat_map(|(_, r)| &r.workloads)
        .filter(move |w| w.graph.is_none() && w.compact.as_deref() == Some(compact))
}

/// Arm `arm` of every `bench-faultlat` run at fragmentation `fragment` by unmovable pages
/// (0: unshaped).
fn fault_arms<'a>(
    ev: Evidence<'a>,
    arm: &'a str,
    fragment: f64,
) -> impl Iterator<Item = &'a crate::faultlat::FaultBenchArm> + 'a {
    ev.faults
        .iter()
        .filter(move |(shape, _)| {
            (shape.fragment.unwrap_or(0.0) - fragment).abs() < 1e-9
                && shape.fragment_pages.is_unmovable()
        })
        .flat_map(|(_, r)| &r.summary)
        .filter(move |a| a.arm.name() == arm)
}

/// Per point simulated under both compaction models from the same start (the phys labels
/// equal but for the model's name), pages moved per block freed under `phys` over `over`.
fn pages_per_block_ratios(ev: Evidence<'_>, phys: &str, over: &str) -> Vec<f64> {
    // `mega:memory=2x:others=50%:…:bytes=200MiB:seed=1` → (`mega`, the start: memory, others,
    // fragment and seed; each model's own settings, such as how much it moves, left out).
    let split = |label: &str| -> Option<(String, String)> {
        let mut parts = label.split(':');
        let name = parts.next()?.to_string();
        let start: Vec<&str> = parts
            .filter(|kv| {
                ["memory=", "others=", "fragment=", "seed="]
                    .iter()
                    .any(|k| kv.starts_with(k))
            })
            .collect();
        Some((name, start.join(":")))
    };
    let mut per: Vec<(String, String, Option<f64>, String, f64)> = Vec::new();
    for (_, c) in ev.curves {
        for p in &c.points {
            let Some(rec) = &p.phys else { continue };
            let (Some((name, start)), Some(ppb)) = (split(&rec.label), rec.pages_per_block) else {
                continue;
            };
            per.push((name, start, p.budget_share, p.policy.clone(), ppb));
        }
    }
    per.iter()
        .filter(|(name, ..)| name == phys)
        .filter_map(|(_, start, budget, policy, ppb)| {
            let other = per.iter().find(|(n, s, b, pol, _)| {
                n == over && s == start && b == budget && pol == policy
            })?;
            Some(ppb / other.4)
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect()
}

/// A `swap` run the swapping headlines stand on: 4 KiB pages, the graph's own vertex order and
/// the machine's readahead (the THP, hot-prefix and readahead-off runs answer other
/// questions).
fn plain_swap(r: &SwapStudy) -> bool {
    r.pages == "all=base" && r.reorder.is_none() && r.page_cluster.is_none()
}

/// The envelope of intervals: the lowest lower bound, the highest upper bound, the least
/// coverage.
fn envelope(xs: impl Iterator<Item = MedianInterval>) -> Option<MedianInterval> {
    xs.filter(|i| i.lo.is_finite() && i.hi.is_finite())
        .reduce(|a, b| MedianInterval {
            lo: a.lo.min(b.lo),
            hi: a.hi.max(b.hi),
            coverage: a.coverage.min(b.coverage),
        })
}

/// The widest of the 95 % intervals of the runs `metric` is computed from, for the metrics
/// whose runs record one (a variant's speedup over the baseline).
pub fn interval(metric: &Metric, ev: Evidence<'_>) -> Option<MedianInterval> {
    match metric {
        Metric::Speedup { variant } => envelope(ev.pages.iter().filter_map(|r| {
            r.summary
                .iter()
                .find(|v| v.name.as_deref() == Some(variant))?
                .speedup_vs_first_ci95
        })),
        Metric::FaultTailVsAlone { arm, fragment } => {
            envelope(fault_arms(ev, arm, *fragment).filter_map(|a| a.p999_vs_alone_ci95))
        }
        Metric::ThroughputVsAlways { variant } => envelope(ev.bloats.iter().filter_map(|r| {
            r.variants
                .iter()
                .find(|v| v.label == *variant)?
                .throughput_vs_always_ci95
        })),
        Metric::BloatVsAlways { variant } => envelope(ev.bloats.iter().filter_map(|r| {
            r.variants
                .iter()
                .find(|v| v.label == *variant)?
                .bloat_vs_always_ci95
        })),
        Metric::PackingSpeedup { variant } => envelope(ev.packings.iter().filter_map(|r| {
            r.variants
                .iter()
                .find(|v| v.label == *variant)?
                .speedup_vs_4k_ci95
        })),
        _ => None,
    }
}

/// The inputs of the plan's runs that `metric` is computed from, against `paper`.
pub fn scale(plan: &StudyPlan, metric: &Metric, paper: Option<&PaperScale>) -> Option<Scale> {
    let of_kind = |w: &&Work| match metric {
        Metric::Speedup { .. }
        | Metric::SpeedupOver { .. }
        | Metric::ShareOfIdeal { .. }
        | Metric::HugeShare { .. } => matches!(w, Work::Pages { .. }),
        Metric::SimShareOfIdeal { .. } | Metric::SimPagesPerBlock { .. } => {
            matches!(w, Work::Curve { .. })
        }
        Metric::PromoteReach90 { .. }
        | Metric::PromoteSpeedupVsUnfragmented { .. }
        | Metric::CompactionCpuShare { .. } => matches!(w, Work::Promote { .. }),
        Metric::OvercommitGain { .. } | Metric::Slowdown { .. } => matches!(w, Work::Swap { .. }),
        Metric::ThroughputVsAlways { .. } | Metric::BloatVsAlways { .. } => {
            matches!(w, Work::Bloat { .. })
        }
        Metric::PackingSpeedup { .. } | Metric::PackingHugeShare { .. } => {
            matches!(w, Work::Packing { .. })
        }
        Metric::FaultTailVsAlone { .. } => matches!(w, Work::FaultBench { .. }),
    };
    let works: Vec<&Work> = plan.runs.iter().map(|r| &r.work).filter(of_kind).collect();
    let graphs: Vec<&str> = works.iter().filter_map(|w| w.graph()).collect();
    if !graphs.is_empty() {
        return crate::scale::of_graphs(&graphs, paper);
    }
    let mut sizes: Vec<String> = Vec::new();
    for w in works {
        let s = match w {
            Work::Bloat { keys, .. } => format!("{keys} keys"),
            Work::Packing { records, .. } => format!("{records} records"),
            Work::FaultBench { size_bytes, .. } => {
                format!("a {} MiB region faulted", size_bytes >> 20)
            }
            _ => continue,
        };
        if !sizes.contains(&s) {
            sizes.push(s);
        }
    }
    (!sizes.is_empty()).then(|| crate::scale::of_other(sizes.join(", ")))
}

/// The headlines of `plan` over the runs given.
pub fn headlines(plan: &StudyPlan, ev: Evidence<'_>) -> Vec<Headline> {
    // The runs made, for each headline's scale (the plan's own where none of a kind is).
    let made = StudyPlan {
        runs: plan
            .runs
            .iter()
            .filter(|r| ev.answered.is_empty() || ev.answered.contains(&r.id.as_str()))
            .cloned()
            .collect(),
        ..plan.clone()
    };
    plan.claims
        .iter()
        .map(|c| {
            let of_kernel: Vec<&PagesReport>;
            let curves_of_kernel: Vec<(&str, &Curves)>;
            let ev = match &c.kernel {
                Some(k) => {
                    of_kernel = ev
                        .pages
                        .iter()
                        .copied()
                        .filter(|r| r.kernel.name() == k)
                        .collect();
                    curves_of_kernel = ev.curves.iter().copied().filter(|c| c.0 == k).collect();
                    Evidence {
                        pages: &of_kernel,
                        curves: &curves_of_kernel,
                        ..ev
                    }
                }
                None => ev,
            };
            let (measured, n) = measure(&c.metric, ev);
            // A claim about one kernel stands on that kernel's runs alone, its scale too.
            let mine = |p: &StudyPlan| StudyPlan {
                runs: p
                    .runs
                    .iter()
                    .filter(|r| c.kernel.is_none() || r.work.kernel() == c.kernel.as_deref())
                    .cloned()
                    .collect(),
                ..p.clone()
            };
            let paper = c.paper_scale.as_ref();
            Headline {
                claim: c.clone(),
                measured,
                runs: n,
                interval: interval(&c.metric, ev),
                scale: scale(&mine(&made), &c.metric, paper)
                    .or_else(|| scale(&mine(plan), &c.metric, paper)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::promote::{PromoteBenchReport, PromoteBenchWorkload};

    #[test]
    fn a_shape_says_movable_fragmentation_and_leaves_the_seeds_kind_unsaid() {
        let seeds = Shape {
            fragment: Some(0.9),
            ..Shape::default()
        };
        let moving = Shape {
            fragment_pages: FragmentPages::Movable,
            ..seeds.clone()
        };
        assert_eq!(seeds.describe(), "frag 90%");
        assert_eq!(moving.describe(), "frag 90% movable");
        let json = serde_json::to_string(&seeds).expect("json");
        assert!(!json.contains("fragment_pages"), "{json}");
        // A plan saved before the kind existed reads as the seeds' kind.
        let old: Shape =
            serde_json::from_str(r#"{"fragment":0.9,"free_beyond_footprint_bytes":null}"#)
                .expect("old shape");
        assert_eq!(old, seeds);
        let back: Shape =
            serde_json::from_str(&serde_json::to_string(&moving).expect("json")).expect("read");
        assert_eq!(back, moving);
    }

    fn hot(compact: &str, speedup: f64, reach_ms: Option<f64>, cpu: f64) -> PromoteBenchReport {
        PromoteBenchReport {
            workloads: vec![PromoteBenchWorkload {
                compact: Some(compact.into()),
                daemon_speedup: Some(speedup),
                reach_90_ms: reach_ms,
                daemon_compaction_cpu_share: Some(cpu),
                ..PromoteBenchWorkload::default()
            }],
            stopped: None,
        }
    }

    fn shape(fragment: Option<f64>, proactiveness: u32) -> Shape {
        Shape {
            fragment,
            free_beyond_footprint_bytes: Some(4 << 30),
            proactiveness: Some(proactiveness),
            ..Shape::default()
        }
    }

    #[test]
    fn compaction_headlines_pair_each_controller_with_its_own_unfragmented_run() {
        let (flat, half, half100) = (
            shape(None, LINUX_PROACTIVENESS),
            shape(Some(0.5), LINUX_PROACTIVENESS),
            shape(Some(0.5), 100),
        );
        let half_movable = Shape {
            fragment_pages: FragmentPages::Movable,
            ..half.clone()
        };
        let runs = [
            hot("auto", 2.0, Some(3_000.0), 0.001),
            hot("off", 2.0, Some(2_000.0), 0.0),
            hot("auto", 1.9, Some(8_000.0), 0.015),
            hot("off", 1.2, None, 0.0),
            // Linux at 100: another question, left out of both controllers' headlines.
            hot("off", 1.9, Some(1_000.0), 0.0),
            // Movable pages: another question too, but for the compactions' CPU.
            hot("auto", 1.0, Some(12_000.0), 0.0),
        ];
        let promotes: Vec<(&Shape, &PromoteBenchReport)> = vec![
            (&flat, &runs[0]),
            (&flat, &runs[1]),
            (&half, &runs[2]),
            (&half, &runs[3]),
            (&half100, &runs[4]),
            (&half_movable, &runs[5]),
        ];
        let ev = Evidence {
            promotes: &promotes,
            ..Evidence::default()
        };
        let m = |metric: Metric| measure(&metric, ev);
        let auto = || "auto".to_string();
        let off = || "off".to_string();
        let (v, n) = m(Metric::PromoteSpeedupVsUnfragmented {
            compact: auto(),
            fragment: 0.5,
        });
        assert!((v.expect("auto") - 0.95).abs() < 1e-9, "{v:?}");
        assert_eq!(n, 1);
        let (v, _) = m(Metric::PromoteSpeedupVsUnfragmented {
            compact: off(),
            fragment: 0.5,
        });
        assert!((v.expect("off") - 0.6).abs() < 1e-9, "{v:?}");
        let (v, n) = m(Metric::PromoteReach90 {
            compact: auto(),
            fragment: 0.5,
            pages: FragmentPages::Unmovable,
        });
        assert_eq!((v, n), (Some(8.0), 1));
        // Never reached: no time, however many runs.
        let (v, n) = m(Metric::PromoteReach90 {
            compact: off(),
            fragment: 0.5,
            pages: FragmentPages::Unmovable,
        });
        assert_eq!((v, n), (None, 0));
        let (v, n) = m(Metric::PromoteReach90 {
            compact: auto(),
            fragment: 0.5,
            pages: FragmentPages::Movable,
        });
        assert_eq!((v, n), (Some(12.0), 1));
        let (v, n) = m(Metric::CompactionCpuShare { compact: auto() });
        assert_eq!((v, n), (Some(0.015), 3));
        assert!(Metric::CompactionCpuShare { compact: auto() }.lower_is_better());
    }

    fn faults(daemon: f64, lo: f64, hi: f64) -> crate::faultlat::FaultBenchReport {
        use crate::faultlat::{FaultArm, FaultBenchArm, FaultBenchReport};
        let s = crate::stats::Summary {
            n: 6,
            median: 1.0,
            min: 1.0,
            max: 1.0,
            mean: 1.0,
            mad_rel: 0.0,
        };
        let arm = |arm, ratio: Option<f64>| FaultBenchArm {
            arm,
            p50_ns: s,
            p999_ns: s,
            p999_vs_alone: ratio,
            p999_vs_alone_ci95: ratio.map(|_| MedianInterval {
                lo,
                hi,
                coverage: 0.969,
            }),
            p50_vs_alone: ratio,
            collapses: None,
            collapse_p50_ns: None,
        };
        FaultBenchReport {
            bytes: 4 << 30,
            policy: "mega".into(),
            budget_share: 1.0,
            fault_waits: 0.0002,
            warm: None,
            nice: None,
            interval_ms: 1000,
            daemon_in: None,
            rounds: 6,
            stopped: None,
            settle: None,
            samples: Vec::new(),
            summary: vec![
                arm(FaultArm::Alone, None),
                arm(FaultArm::Daemon, Some(daemon)),
                arm(FaultArm::Unpaced, Some(daemon * 4.0)),
            ],
        }
    }

    #[test]
    fn the_fault_tail_headline_takes_the_worst_run_at_its_fragmentation_with_its_interval() {
        let (flat, half) = (
            shape(None, LINUX_PROACTIVENESS),
            shape(Some(0.5), LINUX_PROACTIVENESS),
        );
        let runs = [
            faults(0.9, 0.8, 1.1),
            faults(1.2, 1.0, 1.4),
            faults(3.0, 2.0, 5.0),
        ];
        let by: Vec<(&Shape, &crate::faultlat::FaultBenchReport)> =
            vec![(&half, &runs[0]), (&half, &runs[1]), (&flat, &runs[2])];
        let ev = Evidence {
            faults: &by,
            ..Evidence::default()
        };
        let paced = Metric::FaultTailVsAlone {
            arm: "daemon".into(),
            fragment: 0.5,
        };
        assert_eq!(measure(&paced, ev), (Some(1.2), 2));
        let i = interval(&paced, ev).expect("interval");
        assert_eq!((i.lo, i.hi), (0.8, 1.4));
        let unpaced = Metric::FaultTailVsAlone {
            arm: "unpaced".into(),
            fragment: 0.5,
        };
        assert_eq!(measure(&unpaced, ev), (Some(4.8), 2));
        let flat_paced = Metric::FaultTailVsAlone {
            arm: "daemon".into(),
            fragment: 0.0,
        };
        assert_eq!(measure(&flat_paced, ev), (Some(3.0), 1));
        assert!(paced.lower_is_better());
    }
}
