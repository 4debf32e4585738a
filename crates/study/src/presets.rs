//! Study presets: each names the question it answers and expands, for this machine, into a
//! plan of runs (kernel × graph × layouts × machine shape) with the seeds' numbers its headlines
//! are set against.
//!
//! Layout names are shared across presets so that headlines can find them: [`BASE`] is every
//! array on 4 KiB pages (the baseline of every comparison), [`IDEAL`] every array huge (the
//! graph's included), [`PROPERTY`] the property array huge, [`HOT`] DBG reordering with THP for
//! the leading (hottest) part of the property array.

use hugewise_graph::gen::Spec as GenSpec;
use hugewise_graph::load::Input;
use hugewise_results::study::{Claim, Metric, PlannedRun, Shape, StudyPlan, Variant, Work};

use hugewise_bench::{Error, Result};

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
/// Share of the property array that [`HOT`] backs with huge pages after DBG.
pub const HOT_PREFIX: &str = "20%";

const GIB: u64 = 1 << 30;

/// What a preset is for, for `--help` and `--dry-run`.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// Its name.
    pub name: &'static str,
    /// The question it answers.
    pub question: &'static str,
    /// The seed figures it reproduces.
    pub reproduces: &'static str,
    /// What it needs (root, memory, time).
    pub needs: &'static str,
}

/// The presets, in the order `--help` lists them.
pub const PRESETS: &[About] = &[
    About {
        name: "quick",
        question: "Do huge pages pay for graph kernels here, and which layout gets the most of \
                   it per huge page spent?",
        reproduces: "IISWC'22 Fig. 1 and 10 in brief, MICRO'23 Fig. 5 (simulated)",
        needs: "no root; about 1 GiB of memory; under 5 minutes",
    },
    About {
        name: "page-size",
        question: "Which array profits from huge pages?",
        reproduces: "IISWC'22 Fig. 1 and 5",
        needs: "no root; 8 GiB at kron:24 (--quick: kron:22, 1 GiB); 15 minutes (--quick: 4)",
    },
    About {
        name: "pressure",
        question: "How does free memory beyond the working set change what huge pages give, \
                   with the graph allocated first or the property array first?",
        reproduces: "IISWC'22 Fig. 7",
        needs: "root (memory pressure); 8 GiB; 30 minutes (--quick: 6)",
    },
    About {
        name: "fragmentation",
        question: "How much of the huge-page gain survives 0, 25, 50 and 75 % fragmentation \
                   by unmovable pages?",
        reproduces: "IISWC'22 Fig. 8 and 9",
        needs: "root (fragmentation); 8 GiB; 30 minutes (--quick: 6)",
    },
    About {
        name: "selectivity",
        question: "How much of the property array must be huge, with and without DBG, under \
                   +3 GiB pressure and 50 % fragmentation?",
        reproduces: "IISWC'22 Fig. 10 and 11",
        needs: "root (pressure and fragmentation); 8 GiB; 40 minutes (--quick: 8)",
    },
    About {
        name: "utility",
        question: "What does each share of memory promoted buy, simulated (PCC, HawkEye, \
                   Linux) and real (DBG hot prefix), at 0, 50 and 90 % fragmentation?",
        reproduces: "MICRO'23 Fig. 5 and 7",
        needs: "root for the fragmented runs; 4 GiB; 30 minutes (--quick: 6)",
    },
    About {
        name: "faultlat",
        question: "What does a page fault cost with 4 KiB pages, THP at fault, and fault then \
                   collapse, at 0 and 50 % fragmentation?",
        reproduces: "SYSTOR'19 Tables 2 and 3",
        needs: "root for the fragmented runs; 2 GiB; 3 minutes",
    },
    About {
        name: "swap",
        question: "When the graph does not fit in memory, where does the time go, what do more \
                   threads than cores buy, and what happens to huge pages under swapping?",
        reproduces: "Haddadi et al. (swapping) Fig. 2, 4 and 8-11",
        needs: "root (a memory cgroup and a swap file on a local disk); 2 GiB of disk for swap; \
                --quick: kron:22 BFS, 6 minutes; full: kron, urand and a road-like mesh x 3 \
                kernels, hours",
    },
    About {
        name: "bloat",
        question: "What do huge pages cost a real server in memory, and buy it in throughput, \
                   under Linux's THP modes and under hugewise exec with the mega daemon?",
        reproduces: "MEGA's Redis bloat experiment (fill, read, delete half, refill)",
        needs: "root (THP mode, a memory cgroup); redis-server and redis-tools; 4 GiB; \
                --quick: 200k keys, 2 minutes; full: 2 M keys x 3 rounds, 10 minutes",
    },
    About {
        name: "packing",
        question: "Do a program's hot small objects, packed into a few huge pages, buy what \
                   huge pages for its whole heap buy, at a fraction of the huge pages?",
        reproduces: "the selective huge pages thesis: hot objects found by access monitoring, \
                     packed into one huge-page arena",
        needs: "root (THP mode per run); cc; 2.5 GiB; --quick: 1 M records, 1 minute; full: \
                4 M records x 5 rounds, 6 minutes",
    },
    About {
        name: "smoke",
        question: "Does the study machinery work on this machine (seconds)?",
        reproduces: "nothing: a check of the runner, the report and a scheduler",
        needs: "no root; 100 MiB; seconds",
    },
];

/// What to expand a preset with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The shortened variant.
    pub quick: bool,
    /// Rounds per comparison (`None`: the preset's).
    pub repeat: Option<u32>,
    /// Worker threads of each kernel.
    pub threads: usize,
}

/// The named preset's description.
pub fn about(name: &str) -> Result<&'static About> {
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

fn variant(name: &str, kernel_pages: &str, graph_pages: &str, reorder: Option<&str>) -> Variant {
    Variant {
        name: name.into(),
        kernel_pages: kernel_pages.into(),
        graph_pages: graph_pages.into(),
        reorder: reorder.map(Into::into),
        kernel_first: false,
    }
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

/// Nanoseconds a kernel takes per arc on 2 threads, measured on kron:22 here (the estimate
/// is a guide for `--dry-run`, not a promise).
fn kernel_ns_per_arc(kernel: &str) -> f64 {
    match kernel {
        "bfs" => 2.0,
        "cc" => 3.5,
        "sssp" => 20.0,
        "pr" => 28.0,
        "bc" => 150.0,
        _ => 900.0,
    }
}

/// Vertices and arcs of a generator or shape spec (`None` for a file). A shape's arcs are an
/// upper bound, every edge slot filled: a road keeps about half of them (road:6000x6000: 51 M
/// edges of 108 M slots).
fn size_of(graph: &str) -> Option<(u64, u64)> {
    match Input::parse(graph).ok()? {
        Input::Gen(GenSpec {
            scale, edge_factor, ..
        }) => {
            let n = 1u64 << scale;
            Some((n, n * edge_factor as u64 * 2))
        }
        Input::Shape(spec) => Some((spec.vertices(), 2 * spec.slots())),
        Input::File(_) => None,
    }
}

/// Bytes of a generated graph's CSR, weighted or not (undirected: one side).
fn csr_bytes(vertices: u64, arcs: u64, weighted: bool) -> u64 {
    hugewise_graph::fits::Shape {
        vertices,
        arcs,
        directed: false,
        weighted,
    }
    .graph_bytes()
}

/// Estimated bytes a run holds at its peak: the graph and each copy of it, and each variant's
/// arrays.
pub fn footprint_bytes(work: &Work) -> Option<u64> {
    match work {
        Work::Pages {
            graph,
            kernel,
            variants,
            ..
        } => {
            let (n, arcs) = size_of(graph)?;
            let graph_bytes = csr_bytes(n, arcs, kernel == "sssp");
            let mut copies: Vec<(&str, Option<&str>)> = Vec::new();
            for v in variants.iter().skip(1) {
                let key = (v.graph_pages.as_str(), v.reorder.as_deref());
                let own = v.graph_pages != variants[0].graph_pages || v.reorder.is_some();
                if own && !copies.contains(&key) {
                    copies.push(key);
                }
            }
            let per_variant = n * 24 + if kernel == "sssp" { arcs * 4 } else { 0 };
            Some(graph_bytes * (1 + copies.len() as u64) + per_variant * variants.len() as u64)
        }
        Work::Curve { graph, .. } => {
            let (n, arcs) = size_of(graph)?;
            Some(csr_bytes(n, arcs, false) + n * 24)
        }
        Work::Faultlat { size_bytes, .. } => Some(*size_bytes),
        // The server's values and their keys, about twice the values' bytes.
        Work::Bloat {
            keys, value_bytes, ..
        } => Some(
            keys.saturating_mul(value_bytes.saturating_add(100))
                .saturating_mul(2),
        ),
        // A hot record of 32 bytes and a cold one of 480, as glibc lays them out (48 + 496).
        Work::Packing { records, .. } => Some(records.saturating_mul(560)),
        // Loaded outside the limit, then copied into memory charged to it.
        Work::Swap { graph, .. } => {
            let (n, arcs) = size_of(graph)?;
            Some(2 * csr_bytes(n, arcs, false) + n * 24)
        }
    }
}

/// Estimated seconds of a run: generating its graph, building copies, warm-up and rounds, and
/// shaping the machine.
fn estimate_s(work: &Work, shape: &Shape) -> f64 {
    let shaping = if shape.is_none() { 0.0 } else { 20.0 };
    let load = |graph: &str| size_of(graph).map_or(30.0, |(_, arcs)| arcs as f64 * 60e-9 + 0.5);
    shaping
        + match work {
            Work::Pages {
                graph,
                kernel,
                variants,
                rounds,
            } => {
                let arcs = size_of(graph).map_or(1e8, |(_, a)| a as f64);
                let copies = variants
                    .iter()
                    .filter(|v| v.reorder.is_some() || v.graph_pages != variants[0].graph_pages)
                    .count() as f64;
                let trial = arcs * kernel_ns_per_arc(kernel) * 1e-9;
                load(graph) * (1.0 + 0.5 * copies)
                    + trial * variants.len() as f64 * (*rounds as f64 + 1.0)
            }
            Work::Curve { graph, budgets, .. } => {
                let arcs = size_of(graph).map_or(1e8, |(_, a)| a as f64);
                // Tracing runs the kernel with a recorder; simulating runs each configuration.
                load(graph) + arcs * 400e-9 + arcs * 1e-9 * budgets.len() as f64
            }
            Work::Faultlat { size_bytes, .. } => *size_bytes as f64 / GIB as f64 * 4.0 + 1.0,
            // Measured: 2 M keys take about 32 s a run (four phases at 200-500 k requests per
            // second, 12 s to settle, the server's start and stop).
            Work::Bloat {
                keys,
                variants,
                rounds,
                ..
            } => (*keys as f64 * 7e-6 + 15.0) * variants.len() as f64 * *rounds as f64,
            // Measured: 4 M records and 20 M hops take about 12 s a run on 4 KiB pages, the
            // profile run about as long; the other variants are faster.
            Work::Packing {
                records,
                hops,
                rounds,
                ..
            } => {
                let run = *records as f64 * 1.5e-6 + *hops as f64 * 0.3e-6 + 1.0;
                run * (1.0 + 4.0 * *rounds as f64)
            }
            Work::Swap {
                graph,
                kernel,
                reorder,
                shares,
                factors,
                trials,
                ..
            } => {
                let arcs = size_of(graph).map_or(1e8, |(_, a)| a as f64);
                let trial = arcs * kernel_ns_per_arc(kernel) * 1e-9;
                // Measured on kron:22 BFS: 30x slower at half the footprint, 50x at 30 %;
                // each point also loads the graph, copies it and makes its swap file.
                let slowdown = |s: f64| {
                    if s >= 1.0 {
                        1.0
                    } else {
                        60.0 * (1.0 - s) + 2.0
                    }
                };
                // `auto` explores for up to one trial per factor beside its own trials.
                let all_trials: f64 = factors
                    .iter()
                    .map(|f| {
                        let exploring = if f == "auto" {
                            hugewise_bench::run::overcommit::FACTORS.len() as f64
                        } else {
                            0.0
                        };
                        *trials as f64 + 1.0 + exploring
                    })
                    .sum();
                // Each point loads the graph and copies it under the limit; a reordering costs
                // about one more load.
                let loads = if reorder.is_some() { 3.0 } else { 2.0 };
                shares
                    .iter()
                    .map(|&s| {
                        factors.len() as f64 * (load(graph) * loads + 3.0)
                            + trial * slowdown(s) * all_trials
                    })
                    .sum::<f64>()
            }
        }
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

fn claim(what: &str, metric: Metric, paper: Option<f64>, text: &str, gap: &str) -> Claim {
    Claim {
        what: what.into(),
        metric,
        paper_value: paper,
        paper_text: text.into(),
        source: String::new(),
        gap: gap.into(),
    }
}

fn sourced(mut c: Claim, source: &str) -> Claim {
    c.source = source.into();
    c
}

const VM_GAP: &str = "a 2-core VM with another CPU and smaller graphs than the paper's \
                      (random reads over 4 GiB gain 1.86x here; see BENCHMARKS.md)";

fn selective_claims() -> Vec<Claim> {
    vec![
        sourced(
            claim(
                "speedup over 4 KiB, DBG + THP for the hot prefix",
                Metric::Speedup {
                    variant: HOT.into(),
                },
                Some(1.26),
                "1.26-1.57x",
                VM_GAP,
            ),
            "IISWC'22 Fig. 10-11",
        ),
        sourced(
            claim(
                "share of the footprint huge, DBG + hot prefix",
                Metric::HugeShare {
                    variant: HOT.into(),
                },
                Some(0.0292),
                "0.58-2.92 %",
                "the prefix is a fixed share of the property array here, not tuned per graph",
            ),
            "IISWC'22 Fig. 10-11",
        ),
        sourced(
            claim(
                "share of the all-THP gain reached by the hot prefix's huge pages (over DBG alone)",
                Metric::ShareOfIdeal {
                    variant: HOT.into(),
                    ideal: IDEAL.into(),
                    over: Some(DBG.into()),
                },
                None,
                "most of it, with a few % of memory huge",
                "taken over DBG alone, so that the reordering's own gain is not counted; on a \
                 2-core VM with smaller graphs than the paper's",
            ),
            "IISWC'22 Sec. 6",
        ),
    ]
}

fn over_dbg_claim() -> Claim {
    sourced(
        claim(
            "what THP for the hot prefix adds on top of DBG alone",
            Metric::SpeedupOver {
                variant: HOT.into(),
                over: DBG.into(),
            },
            None,
            "DBG alone gains little; the huge pages make the difference",
            "separates the reordering's own gain (cache locality) from the huge pages'",
        ),
        "IISWC'22 Sec. 5",
    )
}

fn ideal_claim() -> Claim {
    sourced(
        claim(
            "speedup over 4 KiB, every array huge",
            Metric::Speedup {
                variant: IDEAL.into(),
            },
            None,
            "up to about 2x at the paper's scale",
            VM_GAP,
        ),
        "IISWC'22 Fig. 1",
    )
}

fn pcc_claim(budget: f64) -> Claim {
    sourced(
        claim(
            &format!(
                "simulated share of the all-huge gain, PCC within {:.0} % of memory",
                budget * 100.0
            ),
            Metric::SimShareOfIdeal {
                policy: "pcc".into(),
                budget,
            },
            None,
            "most of the ideal with a few % of memory promoted",
            "simulated on the paper's Haswell TLB over a smaller trace",
        ),
        "MICRO'23 Fig. 5",
    )
}

fn swap_claims() -> Vec<Claim> {
    let src = "Haddadi et al., swapping";
    vec![
        sourced(
            claim(
                "slowdown with half of the footprint in memory (factor 1)",
                Metric::Slowdown { share: 0.5 },
                None,
                "several times slower; cores idle waiting for page-ins",
                "a virtio disk in a VM, not the paper's NVMe SSD (its random-read IOPS are in \
                 BENCHMARKS.md)",
            ),
            src,
        ),
        sourced(
            claim(
                "overcommit x4 over x1 at 50 % and 30 % of the footprint",
                Metric::OvercommitGain {
                    factor: "4".into(),
                    shares: vec![0.5, 0.3],
                },
                Some(1.65),
                "1.65x geomean, up to 4.18x (the best factor per graph)",
                "one factor, not the best per graph; a VM disk with a shallower queue than NVMe",
            ),
            src,
        ),
        sourced(
            claim(
                "overcommit auto over x1 at 50 % and 30 % of the footprint",
                Metric::OvercommitGain {
                    factor: "auto".into(),
                    shares: vec![0.5, 0.3],
                },
                Some(1.65),
                "1.65x geomean with the best fixed factor",
                "auto's steady state (the trials after it settled; its exploring is shown apart), \
                 set against x1 rather than the best fixed factor",
            ),
            src,
        ),
    ]
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

fn bloat_claims() -> Vec<Claim> {
    let src = "MEGA (Redis bloat)";
    vec![
        sourced(
            claim(
                "throughput of hugewise exec + mega over THP always",
                Metric::ThroughputVsAlways {
                    variant: "exec:*=system+mega".into(),
                },
                Some(0.9),
                "at least 90 % of THP always's throughput (issue target; MEGA: close to it)",
                "redis-benchmark over loopback on 2 vCPUs, jemalloc 5.3",
            ),
            src,
        ),
        sourced(
            claim(
                "bloat of hugewise exec + mega over THP always's",
                Metric::BloatVsAlways {
                    variant: "exec:*=system+mega".into(),
                },
                Some(0.1),
                "at most 10 % of THP always's bloat (issue target)",
                "bloat measured as the cgroup's charge over THP never's, after jemalloc's 10 s \
                 purge delay",
            ),
            src,
        ),
    ]
}

fn packing_claims() -> Vec<Claim> {
    let src = "selective huge pages (thesis)";
    vec![
        sourced(
            claim(
                "speedup of the packed hot arena over 4 KiB pages",
                Metric::PackingSpeedup {
                    variant: "packed".into(),
                },
                None,
                "packing hot objects into huge pages keeps most of THP's gain",
                "pointer chase over hot records among cold ones; the program's own timing",
            ),
            src,
        ),
        sourced(
            claim(
                "speedup of THP for everything over 4 KiB pages",
                Metric::PackingSpeedup {
                    variant: "thp-all".into(),
                },
                None,
                "the gain packing is set against",
                "THP always, glibc's heap grown 64 MiB at a time so that all of it can be huge",
            ),
            src,
        ),
        sourced(
            claim(
                "huge bytes of the packed hot arena over THP for everything's",
                Metric::PackingHugeShare {
                    variant: "packed".into(),
                },
                None,
                "a small share: only the hot objects' pages are huge",
                "peak AnonHugePages of the program's process",
            ),
            src,
        ),
    ]
}

const CURVE_POLICIES: [&str; 3] = ["pcc", "hawkeye", "linux"];
const CURVE_BUDGETS: [f64; 9] = [0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0];

fn curve(graph: &str, kernel: &str, reorder: Option<&str>) -> Work {
    Work::Curve {
        graph: graph.into(),
        kernel: kernel.into(),
        policies: CURVE_POLICIES.iter().map(|s| s.to_string()).collect(),
        budgets: CURVE_BUDGETS.to_vec(),
        reorder: reorder.map(Into::into),
    }
}

/// Expand preset `name` for this machine.
pub fn expand(name: &str, o: &Options) -> Result<StudyPlan> {
    let about = about(name)?;
    let q = o.quick;
    let rounds = o.repeat.unwrap_or(if q { 3 } else { 5 });
    let mut runs = Vec::new();
    let mut claims = Vec::new();
    let none = Shape::default();
    let frag = |f: f64| Shape {
        fragment: Some(f),
        free_beyond_footprint_bytes: None,
    };
    match name {
        "smoke" => {
            runs.push(pages_run(
                "bfs-kron10".into(),
                "bfs on kron:10, 4 KiB vs property THP".into(),
                none.clone(),
                pages("kron:10", "bfs", vec![base(), property()], rounds.min(2)),
            ));
            claims.push(sourced(
                claim(
                    "speedup over 4 KiB, property THP (a check, not a finding)",
                    Metric::Speedup {
                        variant: PROPERTY.into(),
                    },
                    None,
                    "-",
                    "kron:10 fits every cache",
                ),
                "-",
            ));
        }
        "quick" => {
            let g = if q { "kron:20" } else { "kron:22" };
            for k in ["bfs", "sssp", "pr"] {
                runs.push(pages_run(
                    format!("{k}-{}", slug(g)),
                    format!("{k} on {g}, five layouts"),
                    none.clone(),
                    pages(
                        g,
                        k,
                        vec![base(), dbg(), property(), hot(), ideal()],
                        rounds,
                    ),
                ));
            }
            let tg = if q { "kron:18" } else { "kron:20" };
            runs.push(pages_run(
                format!("curve-bfs-{}", slug(tg)),
                format!("bfs on {tg} (DBG), simulated utility curve"),
                none.clone(),
                curve(tg, "bfs", Some("dbg")),
            ));
            claims.push(ideal_claim());
            claims.extend(selective_claims());
            claims.push(over_dbg_claim());
            claims.push(pcc_claim(0.04));
        }
        "page-size" => {
            let g = if q { "kron:22" } else { "kron:24" };
            let kernels: &[&str] = if q {
                &["bfs", "pr"]
            } else {
                &["bfs", "sssp", "pr", "cc"]
            };
            for k in kernels {
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
                    none.clone(),
                    pages(g, k, vs, rounds),
                ));
            }
            claims.push(ideal_claim());
            claims.push(sourced(
                claim(
                    "share of the all-THP gain from the property array alone",
                    Metric::ShareOfIdeal {
                        variant: PROPERTY.into(),
                        ideal: IDEAL.into(),
                        over: None,
                    },
                    None,
                    "the property array holds most of the gain",
                    VM_GAP,
                ),
                "IISWC'22 Fig. 5",
            ));
        }
        "pressure" => {
            let g = if q { "kron:22" } else { "kron:24" };
            let steps: Vec<u64> = if q { vec![0, 1, 3] } else { (0..=6).collect() };
            for s in steps {
                let extra = s * GIB / 2;
                let shape = Shape {
                    fragment: None,
                    free_beyond_footprint_bytes: Some(extra),
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
            claims.push(sourced(
                claim(
                    "speedup over 4 KiB, property allocated first",
                    Metric::Speedup {
                        variant: "THP, property first".into(),
                    },
                    None,
                    "property-first keeps most of the gain under pressure",
                    VM_GAP,
                ),
                "IISWC'22 Fig. 7",
            ));
        }
        "fragmentation" => {
            let g = if q { "kron:22" } else { "kron:24" };
            let kernels: &[&str] = if q { &["pr"] } else { &["bfs", "pr"] };
            for f in [0.0, 0.25, 0.5, 0.75] {
                for k in kernels {
                    runs.push(pages_run(
                        format!("{k}-{}-frag{:.0}", slug(g), f * 100.0),
                        format!("{k} on {g}, {:.0} % fragmented", f * 100.0),
                        if f == 0.0 { none.clone() } else { frag(f) },
                        pages(
                            g,
                            k,
                            vec![base(), dbg(), property(), hot(), ideal()],
                            rounds,
                        ),
                    ));
                }
            }
            claims.push(ideal_claim());
            claims.extend(selective_claims());
            claims.push(over_dbg_claim());
        }
        "selectivity" => {
            let g = if q { "kron:22" } else { "kron:24" };
            let kernels: &[&str] = if q { &["pr"] } else { &["bfs", "pr", "sssp"] };
            let shape = Shape {
                fragment: Some(0.5),
                free_beyond_footprint_bytes: Some(3 * GIB),
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
            claims.extend(selective_claims());
            claims.push(over_dbg_claim());
        }
        "utility" => {
            let g = if q { "kron:22" } else { "kron:24" };
            let tg = if q { "kron:18" } else { "kron:20" };
            for k in ["bfs", "pr"] {
                runs.push(pages_run(
                    format!("curve-{k}-{}", slug(tg)),
                    format!("{k} on {tg} (DBG), simulated utility curve"),
                    none.clone(),
                    curve(tg, k, Some("dbg")),
                ));
            }
            let shares: &[u32] = if q {
                &[1, 4, 16, 64, 100]
            } else {
                &[1, 2, 4, 8, 16, 32, 64, 100]
            };
            for f in [0.0, 0.5, 0.9] {
                let mut vs = vec![base(), dbg()];
                for s in shares {
                    vs.push(variant(
                        &format!("DBG + property {s}%"),
                        &format!("all=base,property=thp-prefix:{s}%"),
                        "all=base",
                        Some("dbg"),
                    ));
                }
                vs.push(ideal());
                runs.push(pages_run(
                    format!("real-pr-{}-frag{:.0}", slug(g), f * 100.0),
                    format!(
                        "pr on {g} (DBG), real utility curve, {:.0} % fragmented",
                        f * 100.0
                    ),
                    if f == 0.0 { none.clone() } else { frag(f) },
                    pages(g, "pr", vs, rounds),
                ));
            }
            claims.push(pcc_claim(0.04));
            claims.push(pcc_claim(0.16));
        }
        "faultlat" => {
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
                        if f == 0.0 { none.clone() } else { frag(f) },
                        Work::Faultlat {
                            size_bytes: size,
                            policy: policy.into(),
                            then_collapse: collapse,
                        },
                    ));
                }
            }
        }
        "swap" => {
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
                            none.clone(),
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
                    none.clone(),
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
                            none.clone(),
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
            claims.extend(swap_claims());
        }
        "bloat" => {
            let keys = if q { 200_000 } else { 2_000_000 };
            runs.push(pages_run(
                format!("bloat-redis-{}k", keys / 1000),
                format!("redis-server with {keys} keys: THP modes and hugewise exec"),
                none.clone(),
                Work::Bloat {
                    keys,
                    value_bytes: 1024,
                    delete_share: 0.5,
                    variants: BLOAT_VARIANTS.iter().map(|v| v.to_string()).collect(),
                    rounds: if q { 1 } else { o.repeat.unwrap_or(3) },
                },
            ));
            claims.extend(bloat_claims());
        }
        "packing" => {
            let (records, hops) = if q {
                (1_000_000, 5_000_000)
            } else {
                (4_000_000, 20_000_000)
            };
            runs.push(pages_run(
                format!("packing-{}m", records / 1_000_000),
                format!(
                    "{}M hot records among as many cold: 4 KiB, THP, packed",
                    records / 1_000_000
                ),
                none.clone(),
                Work::Packing {
                    records,
                    hops,
                    hot_arena_bytes: hugewise_exec::protocol::DEFAULT_HOT_ARENA,
                    rounds: if q { 2 } else { o.repeat.unwrap_or(5) },
                },
            ));
            claims.extend(packing_claims());
        }
        _ => unreachable!("about() accepted {name}"),
    }
    let estimate_s = runs.iter().map(|r| r.estimate_s).sum();
    Ok(StudyPlan {
        preset: name.into(),
        question: about.question.into(),
        reproduces: about.reproduces.into(),
        quick: q,
        repeat: rounds,
        threads: o.threads,
        runs,
        estimate_s,
        claims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_expands_with_unique_ids_and_its_claims_name_real_layouts() {
        for p in PRESETS {
            for quick in [false, true] {
                let plan = expand(
                    p.name,
                    &Options {
                        quick,
                        repeat: None,
                        threads: 2,
                    },
                )
                .expect(p.name);
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
                        | Metric::PackingHugeShare { .. } => vec![],
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
    fn quick_fits_in_five_minutes_by_its_own_estimate() {
        let plan = expand(
            "quick",
            &Options {
                quick: false,
                repeat: None,
                threads: 2,
            },
        )
        .expect("quick");
        assert!(plan.estimate_s < 300.0, "{}", plan.estimate_s);
        assert!(about("nope").is_err());
    }
}
