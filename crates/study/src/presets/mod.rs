//! Study presets: each names the question it answers and expands, for this machine, into a
//! plan of runs (kernel × graph × layouts × machine shape) with the seeds' numbers its headlines
//! are set against.
//!
//! A preset is one row of [`PRESETS`]: what it asks, what it reproduces and needs, the function
//! that builds its runs (below, one per preset) and the function that gives its papers' claims
//! (in `claims.rs`, beside the claims presets share); each run's estimated time and footprint
//! come from its work (`estimate.rs`).
//!
//! Layout names are shared across presets so that headlines can find them: [`BASE`] is every
//! array on 4 KiB pages (the baseline of every comparison), [`IDEAL`] every array huge (the
//! graph's included), [`PROPERTY`] the property array huge, [`HOT`] DBG reordering with THP for
//! the leading (hottest) part of the property array.

mod claims;
mod estimate;

use hugewise_bench::{Error, Result};
use hugewise_results::env::FragmentPages;
use hugewise_results::study::{Claim, PlannedRun, Shape, StudyPlan, Variant, Work};

use estimate::{estimate_s, footprint_bytes};

/// Every array on 4 KiB pages.
pub const BASE: &str = "4 KiB";
/// Every array huge, the graph's included.
pub const IDEAL: &str = "all THP";
/// The kernel's property array huge.
pub const PROPERTY: &str = "property THP";
/// DBG reordering, THP for the hot prefix of the property array.
pub const HOT: &str = "DBG + hot prefix";
/// DBG reordering on 4 KiB pages: what the reordering gives by itself.
pub const DBG: &str = "DBG, 4 KiB";
/// [`DBG`] again, its kernel's arrays made before every other layout's: a control for where
/// a layout's arrays land. In one run on a fragmented machine the same layout took 15 % longer
/// made first than made last (BENCHMARKS.md), more than a small prefix's pages gain; beside
/// [`DBG`] it shows that spread, and it takes the first place that a measured layout would.
pub const DBG_FIRST: &str = "DBG, 4 KiB, made first";
/// Share of the property array that [`HOT`] backs with huge pages after DBG.
pub const HOT_PREFIX: &str = "20%";

const GIB: u64 = 1 << 30;

/// A preset: what it is for (for `--help` and `--dry-run`), and how it expands.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Its name.
    pub name: &'static str,
    /// The question it answers.
    pub question: &'static str,
    /// The seed figures it reproduces.
    pub reproduces: &'static str,
    /// What it needs (root, memory, time).
    pub needs: &'static str,
    /// Whether `--scale` sets the graph its measured runs load: only for presets that run on
    /// the machine as it is. A shaped run holds free memory to a footprint that counts every
    /// copy of the graph held, and at a scale whose copies do not fit together that shape
    /// cannot be made.
    pub scales: bool,
    /// Its runs, for the options given.
    runs: fn(&Given) -> Vec<PlannedRun>,
    /// The papers' claims its headlines are set against.
    claims: fn(&Given) -> Vec<Claim>,
}

/// The presets, in the order `--help` lists them: adding one is a row here and the function
/// building its runs below.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "quick",
        scales: true,
        question: "Do huge pages pay for graph kernels here, and which layout gets the most of \
                   it per huge page spent?",
        reproduces: "IISWC'22 Fig. 1 and 10 in brief, MICRO'23 Fig. 5 (simulated)",
        needs: "no root; about 1 GiB of memory; under 5 minutes",
        runs: quick,
        claims: claims::quick,
    },
    Preset {
        name: "page-size",
        scales: true,
        question: "Which array profits from huge pages?",
        reproduces: "IISWC'22 Fig. 1 and 5",
        needs: "no root; 8 GiB at kron:24 (--quick: kron:22, 1 GiB); 15 minutes (--quick: 4); \
                --scale 26: about 20 GiB, the graph's copies built one at a time",
        runs: page_size,
        claims: claims::page_size,
    },
    Preset {
        name: "pressure",
        scales: false,
        question: "How does free memory beyond the working set change what huge pages give, \
                   with the graph allocated first or the property array first?",
        reproduces: "IISWC'22 Fig. 7",
        needs: "root (memory pressure); 8 GiB; 30 minutes (--quick: 6)",
        runs: pressure,
        claims: claims::pressure,
    },
    Preset {
        name: "fragmentation",
        scales: false,
        question: "How much of the huge-page gain survives 0, 50, 75 and 90 % fragmentation \
                   by unmovable pages, with free memory held to the footprint and half a GiB?",
        reproduces: "IISWC'22 Fig. 8 and 9",
        needs: "root (pressure and fragmentation); 8 GiB; 45 minutes (--quick: 6)",
        runs: fragmentation,
        claims: claims::fragmentation,
    },
    Preset {
        name: "selectivity",
        scales: false,
        question: "How much of the property array must be huge, with and without DBG, under \
                   +3 GiB pressure and 50 % fragmentation?",
        reproduces: "IISWC'22 Fig. 10 and 11",
        needs: "root (pressure and fragmentation); 8 GiB; 40 minutes (--quick: 8)",
        runs: selectivity,
        claims: claims::selectivity,
    },
    Preset {
        name: "utility",
        scales: false,
        question: "What does each share of memory promoted buy, simulated (PCC, HawkEye, \
                   Linux) and real (DBG hot prefix), at 0, 50 and 90 % fragmentation with free \
                   memory held to the footprint + 0.5 GiB?",
        reproduces: "MICRO'23 Fig. 5 and 7",
        needs: "root for the real curves (pressure and fragmentation); 11 GiB (--quick: 3); \
                85 minutes (--quick: 12)",
        runs: utility,
        claims: claims::utility,
    },
    Preset {
        name: "faultlat",
        scales: false,
        question: "What does a page fault cost with 4 KiB pages, THP at fault, and fault then \
                   collapse, at 0 and 50 % fragmentation?",
        reproduces: "SYSTOR'19 Tables 2 and 3",
        needs: "root for the fragmented runs; 2 GiB; 3 minutes",
        runs: faultlat,
        claims: claims::none,
    },
    Preset {
        name: "swap",
        scales: false,
        question: "When the graph does not fit in memory, where does the time go, what do more \
                   threads than cores buy, and what happens to huge pages under swapping?",
        reproduces: "Haddadi et al. (swapping) Fig. 2, 4 and 8-11",
        needs: "root (a memory cgroup and a swap file on a local disk); 2 GiB of disk for swap; \
                --quick: kron:22 BFS, 6 minutes; full: kron, urand and a road-like mesh x 3 \
                kernels, hours",
        runs: swap,
        claims: claims::swap,
    },
    Preset {
        name: "bloat",
        scales: false,
        question: "What do huge pages cost a real server in memory, and buy it in throughput, \
                   under Linux's THP modes and under hugewise exec with the mega daemon?",
        reproduces: "MEGA's Redis bloat experiment (fill, read, delete half, refill)",
        needs: "root (THP mode, a memory cgroup); redis-server and redis-tools; 4 GiB; \
                --quick: 200k keys, 2 minutes; full: 2 M keys x 3 rounds, 10 minutes",
        runs: bloat,
        claims: claims::bloat,
    },
    Preset {
        name: "packing",
        scales: false,
        question: "Do a program's hot small objects, packed into a few huge pages, buy what \
                   huge pages for its whole heap buy, at a fraction of the huge pages?",
        reproduces: "the selective huge pages thesis: hot objects found by access monitoring, \
                     packed into one huge-page arena",
        needs: "root (THP mode per run); cc; 2.5 GiB; --quick: 1 M records, 1 minute; full: \
                4 M records x 5 rounds, 6 minutes",
        runs: packing,
        claims: claims::packing,
    },
    Preset {
        name: "compaction",
        scales: false,
        question: "Under memory pressure and 25, 50 and 90 % fragmentation, does the daemon's \
                   own compaction (--compact auto) get the hot chunks huge sooner, and keep more \
                   of its gain, than no compaction or Linux's proactive compaction at 20 and \
                   100, within 2 % of a core, and does it matter where the pages that break \
                   free memory can move; does a program's p99.9 fault stay within 1.5x of 4 \
                   KiB faults alone with the daemon collapsing beside it; and does MEGA's \
                   simulated compaction move fewer pages than Ingens's?",
        reproduces: "MEGA's and Ingens's compaction (simulated) beside the daemon's (measured)",
        needs: "root (pressure, fragmentation, vm.compaction_proactiveness); the run's \
                footprint + 4 GiB left free; --quick: a 256 MiB hot spot, 2 minutes; full: a \
                4 GiB hot spot and PageRank on kron:22, 3 h 30 min",
        runs: compaction,
        claims: claims::compaction,
    },
    Preset {
        name: "smoke",
        scales: false,
        question: "Does the study machinery work on this machine (seconds)?",
        reproduces: "nothing: a check of the runner, the report and a scheduler",
        needs: "no root; 100 MiB; seconds",
        runs: smoke,
        claims: claims::smoke,
    },
];

/// What to expand a preset with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The shortened variant.
    pub quick: bool,
    /// The Kronecker scale of the measured runs' graph (`None`: the preset's).
    pub scale: Option<u32>,
    /// Rounds per comparison (`None`: the preset's).
    pub repeat: Option<u32>,
    /// Worker threads of each kernel.
    pub threads: usize,
}

/// Every preset with its question, what it reproduces and what it needs, for `--help`.
pub fn listing() -> String {
    let mut s = String::from("Presets (each answers one question):\n");
    for p in PRESETS {
        s.push_str(&format!(
            "  {}\n      {}\n      Reproduces {}.\n      Needs {}.\n",
            p.name, p.question, p.reproduces, p.needs
        ));
    }
    s
}

/// The named preset's description.
pub fn about(name: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        Error::Config(format!(
            "unknown study '{name}': use {}",
            PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// What a preset's runs are built from.
#[derive(Debug, Clone, Copy)]
struct Given {
    /// The shortened variant.
    quick: bool,
    /// The Kronecker scale of the measured runs' graph, when asked.
    scale: Option<u32>,
    /// Rounds per comparison: the options' or the default.
    rounds: u32,
    /// Rounds asked for in the options, for presets whose default differs.
    repeat: Option<u32>,
}

/// Expand preset `name` for this machine.
pub fn expand(name: &str, o: &Options) -> Result<StudyPlan> {
    let preset = about(name)?;
    if let Some(s) = o.scale.filter(|s| !(8..=30).contains(s)) {
        return Err(Error::Config(format!(
            "--scale {s}: a Kronecker scale from 8 to 30"
        )));
    }
    if o.scale.is_some() && !preset.scales {
        return Err(Error::Config(format!(
            "--scale sets the graph of the presets that load a Kronecker graph ({}); {name} \
             loads none",
            PRESETS
                .iter()
                .filter(|p| p.scales)
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let given = Given {
        quick: o.quick,
        scale: o.scale,
        rounds: o.repeat.unwrap_or(if o.quick { 3 } else { 5 }),
        repeat: o.repeat,
    };
    let runs = (preset.runs)(&given);
    let estimate_s = runs.iter().map(|r| r.estimate_s).sum();
    Ok(StudyPlan {
        preset: name.into(),
        question: preset.question.into(),
        reproduces: preset.reproduces.into(),
        quick: o.quick,
        scale: o.scale,
        repeat: given.rounds,
        threads: o.threads,
        runs,
        estimate_s,
        claims: (preset.claims)(&given),
    })
}

fn variant(name: &str, kernel_pages: &str, graph_pages: &str, reorder: Option<&str>) -> Variant {
    Variant {
        name: name.into(),
        kernel_pages: kernel_pages.into(),
        graph_pages: graph_pages.into(),
        reorder: reorder.map(Into::into),
        kernel_first: false,
    }
}

/// `v` with its kernel's arrays made (and faulted in) before any copy of the graph: at 75 and
/// 90 % fragmentation the whole blocks left are fewer than the ideal's huge copy of the graph
/// asks for, and built first it took them all (the property array alone got no huge page at
/// 90 %, with the graph file's page cache dropped).
fn first(v: Variant) -> Variant {
    Variant {
        kernel_first: true,
        ..v
    }
}

/// The control of [`DBG_FIRST`].
fn dbg_first() -> Variant {
    first(Variant {
        name: DBG_FIRST.into(),
        ..dbg()
    })
}

fn base() -> Variant {
    variant(BASE, "all=base", "all=base", None)
}

fn ideal() -> Variant {
    variant(IDEAL, "all=thp", "all=thp", None)
}

fn property() -> Variant {
    variant(PROPERTY, "all=base,property=thp", "all=base", None)
}

fn dbg() -> Variant {
    variant(DBG, "all=base", "all=base", Some("dbg"))
}

fn hot() -> Variant {
    variant(
        HOT,
        &format!("all=base,property=thp-prefix:{HOT_PREFIX}"),
        "all=base",
        Some("dbg"),
    )
}

fn pages_run(id: String, label: String, shape: Shape, work: Work) -> PlannedRun {
    PlannedRun {
        id,
        label,
        estimate_s: estimate_s(&work, &shape),
        footprint_bytes: footprint_bytes(&work),
        shape,
        work,
    }
}

fn pages(graph: &str, kernel: &str, variants: Vec<Variant>, rounds: u32) -> Work {
    Work::Pages {
        graph: graph.into(),
        kernel: kernel.into(),
        variants,
        rounds,
    }
}

/// A file-name-safe id part from a graph spec (`kron:22` → `kron22`).
fn slug(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' => Some(c.to_ascii_lowercase()),
            '.' | '%' => Some('-'),
            _ => None,
        })
        .collect()
}

/// The graph a preset's measured runs load: `kron:` at the scale asked for, else `quick`'s
/// or `full`'s.
fn measured(p: &Given, quick: &str, full: &str) -> String {
    match p.scale {
        Some(s) => format!("kron:{s}"),
        None if p.quick => quick.into(),
        None => full.into(),
    }
}

/// Fragmented by `f` (0: the machine as it is).
fn fragmented(f: f64) -> Shape {
    if f == 0.0 {
        Shape::default()
    } else {
        Shape {
            fragment: Some(f),
            free_beyond_footprint_bytes: None,
            proactiveness: None,
            ..Shape::default()
        }
    }
}

const CURVE_POLICIES: [&str; 3] = ["pcc", "hawkeye", "linux"];
/// The policies MICRO'23 sets against each other, for a curve that must be short.
const PCC_AND_LINUX: [&str; 2] = ["pcc", "linux"];
const CURVE_BUDGETS: [f64; 9] = [0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0];

fn curve(
    graph: &str,
    kernel: &str,
    reorder: Option<&str>,
    max_iters: Option<u32>,
    policies: &[&str],
) -> Work {
    Work::Curve {
        graph: graph.into(),
        kernel: kernel.into(),
        policies: policies.iter().map(|s| s.to_string()).collect(),
        budgets: CURVE_BUDGETS.to_vec(),
        reorder: reorder.map(Into::into),
        max_iters,
        phys: None,
    }
}

/// The swap preset's road-like mesh: 36 M vertices, large enough that its per-vertex arrays and
/// the 64 MiB a run needs besides ([`hugewise_bench::run::memory::PROGRESS_SLACK`]) fit in 70 % of its
/// footprint (947 MiB under BFS).
const ROAD: &str = "road:6000x6000";

/// The least share of its footprint the road mesh runs at (see [`hugewise_bench::run::memory::limit_for`]).
const ROAD_LEAST_SHARE: f64 = 0.7;

/// The bloat preset's variants: Linux's modes, THP by hugewise's rule, and the mega daemon.
const BLOAT_VARIANTS: [&str; 5] = [
    "never",
    "madvise",
    "always",
    "exec:*=thp",
    "exec:*=system+mega",
];

/// A pages run small enough to check the machinery in seconds.
fn smoke(p: &Given) -> Vec<PlannedRun> {
    let rounds = p.rounds;
    vec![pages_run(
        "bfs-kron10".into(),
        "bfs on kron:10, 4 KiB vs property THP".into(),
        Shape::default(),
        pages("kron:10", "bfs", vec![base(), property()], rounds.min(2)),
    )]
}

/// Three kernels in five layouts and one simulated curve, under five minutes.
fn quick(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:20", "kron:22");
    for k in ["bfs", "sssp", "pr"] {
        runs.push(pages_run(
            format!("{k}-{}", slug(g)),
            format!("{k} on {g}, five layouts"),
            Shape::default(),
            pages(
                g,
                k,
                vec![base(), dbg(), property(), hot(), ideal()],
                rounds,
            ),
        ));
    }
    // PageRank, whose walks come from its property array (72 % of them at kron:20, 98 % at
    // kron:22), as the PCC's ranking assumes: a direction-optimizing BFS makes two thirds of
    // its walks on the edge array, which no few % of memory covers (docs/fidelity.md). One
    // iteration, whose walks are spread as the whole run's (71 % property at kron:20), and
    // PCC against Linux alone (`utility` adds HawkEye) keep the study within five minutes.
    let tg = if q { "kron:18" } else { "kron:20" };
    runs.push(pages_run(
        format!("curve-pr-{}", slug(tg)),
        format!("pr on {tg} (DBG), simulated utility curve"),
        Shape::default(),
        curve(tg, "pr", Some("dbg"), Some(1), &PCC_AND_LINUX),
    ));
    runs
}

/// The kernels `page-size` runs (and claims a headline for, each).
fn page_size_kernels(quick: bool) -> &'static [&'static str] {
    if quick {
        &["bfs", "pr"]
    } else {
        &["bfs", "sssp", "pr", "cc"]
    }
}

/// One array huge at a time, then all of them.
fn page_size(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:22", "kron:24");
    for k in page_size_kernels(q) {
        let mut vs = vec![base(), property()];
        vs.push(variant("edges THP", "all=base", "all=base,edges=thp", None));
        vs.push(variant(
            "offsets THP",
            "all=base",
            "all=base,offsets=thp",
            None,
        ));
        vs.push(ideal());
        runs.push(pages_run(
            format!("{k}-{}", slug(g)),
            format!("{k} on {g}, one array huge at a time"),
            Shape::default(),
            pages(g, k, vs, rounds),
        ));
    }
    runs
}

/// PageRank with free memory stepped beyond its footprint, graph or property array allocated first.
fn pressure(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:22", "kron:24");
    let steps: Vec<u64> = if q { vec![0, 1, 3] } else { (0..=6).collect() };
    for s in steps {
        let extra = s * GIB / 2;
        let shape = Shape {
            fragment: None,
            free_beyond_footprint_bytes: Some(extra),
            proactiveness: None,
            ..Shape::default()
        };
        let vs = vec![
            base(),
            variant("THP, graph first", "all=thp", "all=thp", None),
            Variant {
                kernel_first: true,
                ..variant("THP, property first", "all=thp", "all=thp", None)
            },
        ];
        runs.push(pages_run(
            format!("pr-{}-free{}m", slug(g), extra >> 20),
            format!("pr on {g}, free = footprint + {} MiB", extra >> 20),
            shape,
            pages(g, "pr", vs, rounds),
        ));
    }
    runs
}

/// Free memory `study fragmentation` and `study utility`'s real curves leave beside a run's
/// footprint (the graph, each copy of it, the arrays). A program's 4 KiB pages fill the broken
/// blocks' free pages first, so a level of F leaves about (1 - F) of the free memory whole for
/// the layouts that ask for huge pages (but a file read through the page cache takes whole
/// blocks for its readahead: at 90 % the graph file a run read left its property array none,
/// until a shaped run dropped the file's cache once read):
/// with no pressure (23.4 GiB free at kron:24), 75 % still left 5.85 GiB whole and every array
/// huge stayed 95 % huge (BENCHMARKS.md). Held to the footprint and half a GiB, the whole
/// blocks fall short of the THP layout's graph from about 70 % on (62.6 % huge at 75 %, 32.6 %
/// at 90 %).
const FRAGMENTED_FREE: u64 = GIB / 2;

/// Fragmented by `f` (0: not at all) on a machine whose free memory is held to the run's
/// footprint and [`FRAGMENTED_FREE`], so that the level decides how many whole 2 MiB blocks
/// the layouts asking for huge pages find.
fn scarce(f: f64) -> Shape {
    Shape {
        fragment: (f > 0.0).then_some(f),
        free_beyond_footprint_bytes: Some(FRAGMENTED_FREE),
        proactiveness: None,
        ..Shape::default()
    }
}

/// Five layouts at 0, 50, 75 and 90 % fragmentation of a machine whose free memory is the
/// run's footprint and [`FRAGMENTED_FREE`] (the unfragmented reference held to it too).
fn fragmentation(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:22", "kron:24");
    let kernels: &[&str] = if q { &["pr"] } else { &["bfs", "pr"] };
    for f in [0.0, 0.5, 0.75, 0.9] {
        for k in kernels {
            runs.push(pages_run(
                format!("{k}-{}-frag{:.0}", slug(g), f * 100.0),
                format!(
                    "{k} on {g}, {:.0} % fragmented, footprint + {} MiB free",
                    f * 100.0,
                    FRAGMENTED_FREE >> 20
                ),
                scarce(f),
                pages(
                    g,
                    k,
                    vec![
                        base(),
                        dbg(),
                        dbg_first(),
                        first(property()),
                        first(hot()),
                        ideal(),
                    ],
                    rounds,
                ),
            ));
        }
    }
    runs
}

/// Growing prefixes of the property array huge, with and without DBG, under pressure and fragmentation.
fn selectivity(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:22", "kron:24");
    let kernels: &[&str] = if q { &["pr"] } else { &["bfs", "pr", "sssp"] };
    let shape = Shape {
        fragment: Some(0.5),
        free_beyond_footprint_bytes: Some(3 * GIB),
        proactiveness: None,
        ..Shape::default()
    };
    for k in kernels {
        let mut vs = vec![base(), dbg()];
        for p in [20, 40, 60, 80, 100] {
            vs.push(variant(
                &format!("property {p}%"),
                &format!("all=base,property=thp-prefix:{p}%"),
                "all=base",
                None,
            ));
        }
        for p in [20, 40, 60, 80, 100] {
            let name = if format!("{p}%") == HOT_PREFIX {
                HOT.to_string()
            } else {
                format!("DBG + property {p}%")
            };
            vs.push(variant(
                &name,
                &format!("all=base,property=thp-prefix:{p}%"),
                "all=base",
                Some("dbg"),
            ));
        }
        vs.push(ideal());
        runs.push(pages_run(
            format!("{k}-{}-selective", slug(g)),
            format!("{k} on {g}, share of the property array huge"),
            shape.clone(),
            pages(g, k, vs, rounds),
        ));
    }
    runs
}

/// Simulated utility curves, and real ones from DBG hot prefixes at three fragmentations of a
/// machine held to the footprint and [`FRAGMENTED_FREE`] (the unfragmented one too, the
/// reference). Unheld, F % of this machine's 23 GiB free would leave about (1 - F) of it whole
/// (see [`FRAGMENTED_FREE`]), 11 GiB at 50 %: more than the largest layout asks for, so the
/// levels would not differ.
fn utility(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let g = &measured(p, "kron:22", "kron:24");
    // At kron:22 the property array is 4 times the 4 KiB reach of the simulated TLBs, as in
    // the paper's (far larger) graphs; at kron:20 it fits that reach (docs/fidelity.md).
    let tg = if q { "kron:20" } else { "kron:22" };
    for k in ["bfs", "pr"] {
        runs.push(pages_run(
            format!("curve-{k}-{}", slug(tg)),
            format!("{k} on {tg} (DBG), simulated utility curve"),
            Shape::default(),
            curve(tg, k, Some("dbg"), None, &CURVE_POLICIES),
        ));
    }
    let shares: &[u32] = if q {
        &[1, 4, 16, 64, 100]
    } else {
        &[1, 2, 4, 8, 16, 32, 64, 100]
    };
    for f in [0.0, 0.5, 0.9] {
        let mut vs = vec![base(), dbg(), dbg_first()];
        for s in shares {
            // The property arrays are made before any copy of the graph: at 90 % the whole
            // blocks left are fewer than the ideal's huge copy of the graph asks for, and built
            // first it took them all (no prefix got a huge page).
            vs.push(Variant {
                kernel_first: true,
                ..variant(
                    &format!("DBG + property {s}%"),
                    &format!("all=base,property=thp-prefix:{s}%"),
                    "all=base",
                    Some("dbg"),
                )
            });
        }
        vs.push(ideal());
        runs.push(pages_run(
            format!("real-pr-{}-frag{:.0}", slug(g), f * 100.0),
            format!(
                "pr on {g} (DBG), real utility curve, {:.0} % fragmented, footprint + {} MiB free",
                f * 100.0,
                FRAGMENTED_FREE >> 20
            ),
            scarce(f),
            pages(g, "pr", vs, rounds),
        ));
    }
    runs
}

/// Fault latency of three ways to back a region, unfragmented and half fragmented.
fn faultlat(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let mut runs = Vec::new();
    let size = if q { GIB / 4 } else { GIB };
    for f in [0.0, 0.5] {
        for (policy, collapse) in [("base", false), ("thp", false), ("base", true)] {
            let tag = if collapse { "collapse" } else { policy };
            runs.push(pages_run(
                format!("faultlat-{tag}-frag{:.0}", f * 100.0),
                format!(
                    "faults, {}{}, {:.0} % fragmented",
                    policy,
                    if collapse { " then collapse" } else { "" },
                    f * 100.0
                ),
                fragmented(f),
                Work::Faultlat {
                    size_bytes: size,
                    policy: policy.into(),
                    then_collapse: collapse,
                },
            ));
        }
    }
    runs
}

/// Kernels held to shares of their footprint at several overcommit factors; THP and the hot prefix under swapping.
fn swap(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.rounds;
    let mut runs = Vec::new();
    let (graphs, kernels, shares, factors): (&[&str], &[&str], Vec<f64>, &[&str]) = if q {
        (
            &["kron:22"],
            &["bfs"],
            vec![1.0, 0.5, 0.3],
            &["1", "4", "auto"],
        )
    } else {
        (
            // A road-like mesh beside the two generators: the paper's road graphs
            // (high diameter, little work a level) got slower with overcommit.
            &["kron:22", "urand:22", ROAD],
            &["bfs", "cc", "pr"],
            vec![1.0, 0.7, 0.5, 0.3],
            &["1", "2", "4", "8", "16", "auto"],
        )
    };
    let trials = if q { 3 } else { rounds.max(3) };
    for g in graphs {
        // Under 3 arcs a vertex, the road mesh keeps nearly 60 % of its footprint in
        // per-vertex arrays, which every step touches: of the shares, it runs short of
        // memory only at 70 %. The THP and hot-prefix runs below ask about skewed
        // degrees (DBG's hot vertices), which a mesh of a few neighbours a vertex does
        // not have.
        let road = *g == ROAD;
        let shares: Vec<f64> = if road {
            shares
                .iter()
                .copied()
                .filter(|s| *s >= ROAD_LEAST_SHARE)
                .collect()
        } else {
            shares.clone()
        };
        for k in kernels {
            // Swap readahead at the kernel's default (3) and off (0) for BFS only,
            // whose frontier reads are the least sequential.
            let clusters: &[Option<u32>] = if *k == "bfs" && !q {
                &[None, Some(0)]
            } else {
                &[None]
            };
            for pc in clusters {
                runs.push(pages_run(
                    format!(
                        "swap-{k}-{}{}",
                        slug(g),
                        pc.map(|n| format!("-pc{n}")).unwrap_or_default()
                    ),
                    format!(
                        "{k} on {g} held to shares of its footprint{}",
                        pc.map(|n| format!(", page-cluster {n}"))
                            .unwrap_or_default()
                    ),
                    Shape::default(),
                    Work::Swap {
                        graph: g.to_string(),
                        kernel: k.to_string(),
                        pages: "all=base".into(),
                        reorder: None,
                        shares: shares.clone(),
                        factors: factors.iter().map(|f| f.to_string()).collect(),
                        page_cluster: *pc,
                        trials,
                    },
                ));
            }
        }
        if road {
            continue;
        }
        // Huge pages under swapping: every array asking for THP, at factor 1.
        runs.push(pages_run(
            format!("swap-thp-bfs-{}", slug(g)),
            format!("bfs on {g}, every array THP, held to shares of its footprint"),
            Shape::default(),
            Work::Swap {
                graph: g.to_string(),
                kernel: "bfs".into(),
                pages: "all=thp".into(),
                reorder: None,
                shares: vec![1.0, 0.5],
                factors: vec!["1".into()],
                page_cluster: None,
                trials,
            },
        ));
        // The hot prefix under swapping: PageRank after DBG on 4 KiB pages, with the
        // hot prefix of its property array huge, and huge and locked in memory.
        if !q {
            let prefix = format!("property=thp-prefix:{HOT_PREFIX}");
            for (id, what, pages) in [
                ("swap-dbg-pr", "4 KiB pages", "all=base".to_string()),
                (
                    "swap-hot-pr",
                    "the hot prefix THP",
                    format!("all=base,{prefix}"),
                ),
                (
                    "swap-hot-lock-pr",
                    "the hot prefix THP and locked",
                    format!("all=base,{prefix}+lock"),
                ),
            ] {
                runs.push(pages_run(
                    format!("{id}-{}", slug(g)),
                    format!("pr on {g} after DBG, {what}, held to shares of its footprint"),
                    Shape::default(),
                    Work::Swap {
                        graph: g.to_string(),
                        kernel: "pr".into(),
                        pages,
                        reorder: Some("dbg".into()),
                        shares: vec![1.0, 0.5],
                        factors: vec!["1".into()],
                        page_cluster: None,
                        trials,
                    },
                ));
            }
        }
    }
    runs
}

/// The daemon's compaction controllers, and Linux's proactive compaction at its default and
/// at 100, each run an arm of its own.
pub const COMPACTION_ARMS: [(&str, &str, u32); 3] = [
    ("auto", "auto", hugewise_results::study::LINUX_PROACTIVENESS),
    ("off", "off", hugewise_results::study::LINUX_PROACTIVENESS),
    ("linux100", "off", 100),
];

/// The fragmentation level of the compaction study's runs on free memory broken by movable
/// pages (the rest are broken by unmovable ones, as in the seeds); none in the quick variant,
/// which stays within its two minutes.
fn movable_level(p: &Given) -> Option<f64> {
    (!p.quick).then_some(0.9)
}

/// The simulated compaction models set side by side.
const PHYS_MODELS: [&str; 4] = ["off", "linux", "ingens", "mega"];

/// The hot spot and PageRank promoted by the daemon under each compaction arm, with memory
/// pressure at each fragmentation level (unfragmented first, the reference), the hot spot
/// again on free memory broken by movable pages, and the simulated compaction models over
/// one trace per level.
fn compaction(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let rounds = p.repeat.unwrap_or(if q { 1 } else { 5 });
    // Quick: long enough (about a second an arm) for a daemon looking every 200 ms to act.
    let (bytes, reads, interval_ms) = if q {
        (256u64 << 20, 10_000_000, 200)
    } else {
        (4 * GIB, 200_000_000, 1000)
    };
    let frags: &[f64] = if q {
        &[0.0, 0.5]
    } else {
        &[0.0, 0.25, 0.5, 0.9]
    };
    let arms: &[(&str, &str, u32)] = if q {
        &COMPACTION_ARMS[..2]
    } else {
        &COMPACTION_ARMS
    };
    // Free beyond the run's footprint: 4 GiB, scarce enough on a large machine that the
    // kernel's free 2 MiB blocks are what the fragmentation left, and enough that the machine
    // goes on serving what else runs on it.
    let extra = 4 * GIB;
    let shape = |f: f64, proactiveness: u32| Shape {
        fragment: (f > 0.0).then_some(f),
        free_beyond_footprint_bytes: Some(extra),
        proactiveness: Some(proactiveness),
        ..Shape::default()
    };
    let hot = |compact: &str| Work::Promote {
        graph: None,
        kernel: None,
        bytes,
        reads,
        rounds,
        budget_share: 0.04,
        compact: compact.into(),
        interval_ms,
    };
    let mut runs = Vec::new();
    let graph = (!q).then_some("kron:22");
    for &f in frags {
        for &(tag, compact, pro) in arms {
            runs.push(pages_run(
                format!("hot-{tag}-frag{:.0}", f * 100.0),
                format!(
                    "hot spot, daemon --compact {compact}, proactiveness {pro}, {:.0} % fragmented",
                    f * 100.0
                ),
                shape(f, pro),
                hot(compact),
            ));
            if let Some(g) = graph {
                runs.push(pages_run(
                    format!("pr-{}-{tag}-frag{:.0}", slug(g), f * 100.0),
                    format!(
                        "pr on {g}, daemon --compact {compact}, proactiveness {pro}, {:.0} % \
                         fragmented",
                        f * 100.0
                    ),
                    shape(f, pro),
                    Work::Promote {
                        graph: Some(g.into()),
                        kernel: Some("pr".into()),
                        bytes: 0,
                        reads: 2,
                        rounds: rounds.min(3),
                        budget_share: 0.04,
                        compact: compact.into(),
                        interval_ms,
                    },
                ));
            }
        }
    }
    // Free memory broken by pages compaction can move, as other programs' memory breaks it:
    // whether the daemon keeps its gain there, and whether its controller adds anything to
    // the compaction each refused collapse does in the kernel (the hot spot, with `auto` and
    // `off`; kcompactd at 100 would undo the level before the run).
    for (mf, &(tag, compact, pro)) in movable_level(p)
        .iter()
        .flat_map(|&f| COMPACTION_ARMS[..2].iter().map(move |a| (f, a)))
    {
        runs.push(pages_run(
            format!("hot-{tag}-frag{:.0}-movable", mf * 100.0),
            format!(
                "hot spot, daemon --compact {compact}, proactiveness {pro}, {:.0} % fragmented \
                 by movable pages",
                mf * 100.0
            ),
            Shape {
                fragment_pages: FragmentPages::Movable,
                ..shape(mf, pro)
            },
            hot(compact),
        ));
    }
    // The fault tail beside the daemon (compacting as it must), alone and at 50 %: the p99.9
    // fault latency with the daemon over that of 4 KiB faults alone, paced and unpaced.
    for f in [0.0, 0.5] {
        runs.push(pages_run(
            format!("faults-daemon-frag{:.0}", f * 100.0),
            format!(
                "4 KiB faults alone and beside the daemon, {:.0} % fragmented",
                f * 100.0
            ),
            shape(f, hugewise_results::study::LINUX_PROACTIVENESS),
            Work::FaultBench {
                size_bytes: if q { 512 << 20 } else { 4 * GIB },
                rounds: if q { 1 } else { p.repeat.unwrap_or(6) },
                policy: "mega".into(),
                fault_waits: 0.0002,
            },
        ));
    }
    // Large enough that the budgets are many 2 MiB blocks (kron:16 about 40, kron:20 about
    // 600 of footprint).
    let tg = if q { "kron:16" } else { "kron:20" };
    let models: &[&str] = if q { &["ingens", "mega"] } else { &PHYS_MODELS };
    for &f in frags.iter().filter(|f| **f > 0.0) {
        for m in models {
            runs.push(pages_run(
                format!("sim-{m}-{}-frag{:.0}", slug(tg), f * 100.0),
                format!(
                    "pr on {tg}, simulated PCC in physical memory, {m} compaction, {:.0} % \
                     fragmented",
                    f * 100.0
                ),
                Shape::default(),
                Work::Curve {
                    graph: tg.into(),
                    kernel: "pr".into(),
                    policies: vec!["pcc".into()],
                    budgets: vec![0.16, 0.64],
                    reorder: None,
                    // One iteration spreads its walks as the whole run does, at a fraction
                    // of the trace.
                    max_iters: Some(1),
                    phys: Some(format!(
                        "{m}:memory=2x:others=50%:fragment={:.0}%",
                        f * 100.0
                    )),
                },
            ));
        }
    }
    runs
}

/// Redis under each THP mode and hugewise exec rule.
fn bloat(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let keys = if q { 200_000 } else { 2_000_000 };
    vec![pages_run(
        format!("bloat-redis-{}k", keys / 1000),
        format!("redis-server with {keys} keys: THP modes and hugewise exec"),
        Shape::default(),
        Work::Bloat {
            keys,
            value_bytes: 1024,
            delete_share: 0.5,
            variants: BLOAT_VARIANTS.iter().map(|v| v.to_string()).collect(),
            rounds: if q { 1 } else { p.repeat.unwrap_or(3) },
        },
    )]
}

/// A program of hot records among cold ones: 4 KiB, THP, packed.
fn packing(p: &Given) -> Vec<PlannedRun> {
    let q = p.quick;
    let (records, hops) = if q {
        (1_000_000, 5_000_000)
    } else {
        (4_000_000, 20_000_000)
    };
    vec![pages_run(
        format!("packing-{}m", records / 1_000_000),
        format!(
            "{}M hot records among as many cold: 4 KiB, THP, packed",
            records / 1_000_000
        ),
        Shape::default(),
        Work::Packing {
            records,
            hops,
            hot_arena_bytes: hugewise_rules::protocol::DEFAULT_HOT_ARENA,
            rounds: if q { 2 } else { p.repeat.unwrap_or(5) },
        },
    )]
}

#[cfg(test)]
mod tests {
    use hugewise_results::study::Metric;

    use super::*;

    /// `name`'s plan in full and with `--quick` (each with its `quick`), on two threads.
    fn both(name: &str) -> [(bool, StudyPlan); 2] {
        [false, true].map(|quick| {
            let o = Options {
                quick,
                scale: None,
                repeat: None,
                threads: 2,
            };
            (quick, expand(name, &o).expect(name))
        })
    }

    #[test]
    fn every_preset_expands_with_unique_ids_and_its_claims_name_real_layouts() {
        for p in PRESETS {
            for (_, plan) in both(p.name) {
                assert!(!plan.runs.is_empty(), "{}", p.name);
                let mut ids: Vec<_> = plan.runs.iter().map(|r| r.id.as_str()).collect();
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), plan.runs.len(), "{}: duplicate ids", p.name);
                assert!(plan.estimate_s > 0.0);
                let names: Vec<&str> = plan
                    .runs
                    .iter()
                    .flat_map(|r| match &r.work {
                        Work::Pages { variants, .. } => {
                            variants.iter().map(|v| v.name.as_str()).collect()
                        }
                        _ => Vec::new(),
                    })
                    .collect();
                for c in &plan.claims {
                    let wanted = match &c.metric {
                        Metric::Speedup { variant } | Metric::HugeShare { variant } => {
                            vec![variant.as_str()]
                        }
                        Metric::ShareOfIdeal {
                            variant,
                            ideal,
                            over,
                        } => {
                            let mut v = vec![variant.as_str(), ideal.as_str()];
                            v.extend(over.as_deref());
                            v
                        }
                        Metric::SpeedupOver { variant, over } => {
                            vec![variant.as_str(), over.as_str()]
                        }
                        Metric::SimShareOfIdeal { .. }
                        | Metric::OvercommitGain { .. }
                        | Metric::Slowdown { .. }
                        | Metric::ThroughputVsAlways { .. }
                        | Metric::BloatVsAlways { .. }
                        | Metric::PackingSpeedup { .. }
                        | Metric::PackingHugeShare { .. }
                        | Metric::PromoteReach90 { .. }
                        | Metric::PromoteSpeedupVsUnfragmented { .. }
                        | Metric::CompactionCpuShare { .. }
                        | Metric::SimPagesPerBlock { .. }
                        | Metric::FaultTailVsAlone { .. } => vec![],
                    };
                    for w in wanted {
                        assert!(names.contains(&w), "{}: claim names '{w}'", p.name);
                    }
                }
            }
        }
    }

    #[test]
    fn the_full_swap_preset_holds_the_road_mesh_only_to_shares_it_can_run_at() {
        let plan = expand(
            "swap",
            &Options {
                quick: false,
                scale: None,
                repeat: None,
                threads: 2,
            },
        )
        .expect("swap");
        let mut road_runs = 0;
        for r in &plan.runs {
            let Work::Swap { graph, shares, .. } = &r.work else {
                continue;
            };
            if graph == ROAD {
                road_runs += 1;
                assert_eq!(shares, &[1.0, ROAD_LEAST_SHARE], "{}", r.id);
            } else {
                assert!(shares.contains(&0.5), "{}: {shares:?}", r.id);
            }
        }
        // BFS twice (readahead on and off), CC and PR; no THP or hot-prefix runs.
        assert_eq!(road_runs, 4);
    }

    #[test]
    fn fragmentations_layouts_that_ask_for_huge_kernel_arrays_make_them_first() {
        for (_, plan) in both("fragmentation") {
            for r in &plan.runs {
                let Work::Pages { variants, .. } = &r.work else {
                    panic!("{}: not a page-layout run", r.id)
                };
                let first: Vec<&str> = variants
                    .iter()
                    .filter(|v| v.kernel_first)
                    .map(|v| v.name.as_str())
                    .collect();
                assert_eq!(first, [DBG_FIRST, PROPERTY, HOT], "{}", r.id);
            }
        }
    }

    #[test]
    fn utilitys_real_curves_hold_free_memory_to_the_footprint_at_every_level() {
        for (quick, plan) in both("utility") {
            let levels: Vec<Option<f64>> = plan
                .runs
                .iter()
                .filter(|r| r.id.starts_with("real-"))
                .map(|r| {
                    // Unheld, half of 23 GiB free stays whole at 50 %: more than any layout asks.
                    assert_eq!(
                        r.shape.free_beyond_footprint_bytes,
                        Some(FRAGMENTED_FREE),
                        "{}",
                        r.id
                    );
                    // The prefixes' property arrays come before the graph's copies.
                    let Work::Pages { variants, .. } = &r.work else {
                        panic!("{}: not a page-layout run", r.id)
                    };
                    assert!(variants.iter().all(|v| v.kernel_first
                        == (v.name.starts_with("DBG + property") || v.name == DBG_FIRST)));
                    // The control is made before every prefix.
                    assert_eq!(
                        variants
                            .iter()
                            .find(|v| v.kernel_first)
                            .map(|v| &v.name[..]),
                        Some(DBG_FIRST),
                        "{}",
                        r.id
                    );
                    r.shape.fragment
                })
                .collect();
            assert_eq!(levels, [None, Some(0.5), Some(0.9)], "quick {quick}");
        }
    }

    /// Preset `name` in full (not `--quick`), on two threads.
    fn full(name: &str) -> StudyPlan {
        expand(
            name,
            &Options {
                quick: false,
                scale: None,
                repeat: None,
                threads: 2,
            },
        )
        .expect(name)
    }

    #[test]
    fn a_scale_sets_the_measured_graph_and_leaves_simulated_curves_alone() {
        let at = |name: &str, scale: Option<u32>| {
            expand(
                name,
                &Options {
                    quick: false,
                    scale,
                    repeat: None,
                    threads: 2,
                },
            )
        };
        let graphs = |plan: &StudyPlan| -> Vec<String> {
            plan.runs
                .iter()
                .map(|r| match &r.work {
                    Work::Pages { graph, .. } => format!("pages {graph}"),
                    Work::Curve { graph, .. } => format!("curve {graph}"),
                    _ => "other".into(),
                })
                .collect()
        };
        let plan = at("page-size", Some(26)).expect("page-size");
        assert_eq!(plan.scale, Some(26));
        assert!(
            graphs(&plan).iter().all(|g| g == "pages kron:26"),
            "{:?}",
            graphs(&plan)
        );
        assert!(plan.runs.iter().any(|r| r.id == "pr-kron26"));
        // Four times kron:24's footprint, as the plan counts it.
        let bytes = |p: &StudyPlan| p.runs.iter().filter_map(|r| r.footprint_bytes).max();
        let full24 = at("page-size", None).expect("page-size");
        assert!(bytes(&plan) > bytes(&full24).map(|b| 3 * b));
        let quick = graphs(&at("quick", Some(23)).expect("quick"));
        assert!(quick.iter().any(|g| g == "curve kron:20"), "{quick:?}");
        assert!(quick.iter().any(|g| g == "pages kron:23"), "{quick:?}");
        assert!(!quick.iter().any(|g| g == "pages kron:22"), "{quick:?}");
        assert!(at("page-size", Some(31)).is_err());
        // Unasked, nothing changes.
        assert_eq!(full24.scale, None);
        assert!(graphs(&full24).iter().all(|g| g == "pages kron:24"));
        for name in [
            "pressure",
            "fragmentation",
            "selectivity",
            "utility",
            "faultlat",
            "swap",
            "bloat",
            "packing",
            "compaction",
            "smoke",
        ] {
            let e = at(name, Some(22)).expect_err(name).to_string();
            assert!(
                e.contains("--scale") && e.contains("page-size"),
                "{name}: {e}"
            );
        }
    }

    #[test]
    fn quick_simulates_pagerank_and_flags_the_curves_scale_against_the_papers() {
        let plan = full("quick");
        let curves: Vec<&str> = plan
            .runs
            .iter()
            .filter_map(|r| match &r.work {
                Work::Curve { kernel, .. } => Some(kernel.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            curves,
            ["pr"],
            "the trace whose walks the property array makes"
        );
        for c in &plan.claims {
            let s = hugewise_results::study::scale(&plan, &c.metric, c.paper_scale.as_ref())
                .expect("every claim has runs of its kind");
            assert!(c.paper_scale.is_some(), "{}: a graph seed's scale", c.what);
            match c.metric {
                // kron:20: 16 times fewer vertices than 2^24.
                Metric::SimShareOfIdeal { .. } => {
                    assert_eq!(s.text, "kron:20");
                    assert!(s.far_below_paper, "{}", c.what);
                }
                _ => {
                    assert_eq!(s.text, "kron:22");
                    assert!(!s.far_below_paper, "{}", c.what);
                }
            }
        }
    }

    #[test]
    fn quick_fits_in_five_minutes_by_its_own_estimate() {
        let plan = full("quick");
        assert!(plan.estimate_s < 300.0, "{}", plan.estimate_s);
        assert!(about("nope").is_err());
    }
}
