//! What a planned run is estimated to cost: the bytes it holds at its peak and the seconds it
//! takes, from its graph's size and kernel (a guide for `--dry-run` and the progress bar's ETA,
//! not a promise).

use hugewise_graph::gen::Spec as GenSpec;
use hugewise_graph::load::Input;
use hugewise_results::study::{Shape, Work};

use super::GIB;

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
pub(super) fn footprint_bytes(work: &Work) -> Option<u64> {
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
        // One arm's region at a time.
        Work::FaultBench { size_bytes, .. } => Some(*size_bytes),
        // The server's values and their keys, about twice the values' bytes.
        Work::Bloat {
            keys, value_bytes, ..
        } => Some(
            keys.saturating_mul(value_bytes.saturating_add(100))
                .saturating_mul(2),
        ),
        // One arm's region at a time, the daemon's ring and a collapse's page beside it; a
        // graph's arms are each a run of their own, one at a time.
        Work::Promote {
            graph: None, bytes, ..
        } => Some(bytes + (10 << 20)),
        Work::Promote { graph: Some(g), .. } => {
            let (n, arcs) = size_of(g)?;
            Some(csr_bytes(n, arcs, false) + n * 24)
        }
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
pub(super) fn estimate_s(work: &Work, shape: &Shape) -> f64 {
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
            Work::Curve {
                graph,
                kernel,
                policies,
                budgets,
                max_iters,
                ..
            } => {
                let arcs = size_of(graph).map_or(1e8, |(_, a)| a as f64);
                // Accesses a trace holds per arc, measured on kron:20 and kron:22 after DBG:
                // PageRank reads every arc in each of its iterations (2.4 accesses an arc for
                // one iteration, 13-14 to convergence), a direction-optimizing BFS skips most
                // of them.
                let accesses = arcs
                    * match (kernel.as_str(), max_iters) {
                        ("pr", Some(n)) => (2.4 * f64::from(*n)).min(14.0),
                        ("pr", None) => 14.0,
                        _ => 1.0,
                    };
                // Tracing takes about 100 ns an access (the recorder and its untimed rate
                // runs), simulating 11 ns an access for each configuration, `none` and `all`
                // included (a busy 2-core VM, measured on the same traces).
                let configs = 2.0 + (policies.len() * budgets.len()) as f64;
                load(graph) + accesses * 100e-9 + accesses * 11e-9 * configs
            }
            Work::Faultlat { size_bytes, .. } => *size_bytes as f64 / GIB as f64 * 4.0 + 1.0,
            // Three arms a round, each faulting its region at 4 s a GiB or less here (a 4 GiB
            // round measured 14-30 s).
            Work::FaultBench {
                size_bytes, rounds, ..
            } => *size_bytes as f64 / GIB as f64 * 5.0 * 3.0 * *rounds as f64,
            // Measured: 2 M keys take about 32 s a run (four phases at 200-500 k requests per
            // second, 12 s to settle, the server's start and stop).
            Work::Bloat {
                keys,
                variants,
                rounds,
                ..
            } => (*keys as f64 * 7e-6 + 15.0) * variants.len() as f64 * *rounds as f64,
            // The hot spot's dependent reads take about 100 ns each on 4 KiB pages (the arms
            // with huge pages less), four arms a round, each region faulted in at about
            // 1 GiB/s; a graph's arms each load the graph and run its warm-up and trials, the
            // plan traced and simulated first.
            Work::Promote {
                graph: None,
                bytes,
                reads,
                rounds,
                ..
            } => {
                let arm = *reads as f64 * 100e-9 + *bytes as f64 / GIB as f64 + 1.0;
                arm * 4.0 * *rounds as f64
            }
            Work::Promote {
                graph: Some(g),
                reads,
                rounds,
                ..
            } => {
                let arcs = size_of(g).map_or(1e8, |(_, a)| a as f64);
                let trial = arcs * kernel_ns_per_arc("pr") * 1e-9;
                let arm = load(g) + trial * (*reads as f64 + 2.0);
                load(g) + arcs * 400e-9 + arm * 4.0 * *rounds as f64
            }
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
