//! What `hugewise bench gap` measured: the GAP suite's own binaries and hugewise's kernels on
//! one graph file, alternated round by round.

use serde::{Deserialize, Serialize};

use crate::kernel::Spec;
use crate::stats::{MedianInterval, Quiet, Stopped, Summary};

/// One round of one kernel: GAP's time and hugewise's, measured back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapSample {
    /// Round number from 0.
    pub round: u32,
    /// The start vertex both ran from (GAP's `-r`); `null` for kernels that take none.
    pub source: Option<u32>,
    /// GAP's time: its own "Trial Time" of the last trial it ran (the earlier ones warm up).
    pub gap_ns: u64,
    /// Every trial time GAP printed in this round, in order.
    pub gap_trials_ns: Vec<u64>,
    /// hugewise's time for one run of the kernel (timed in process, after a warm-up run).
    pub hugewise_ns: u64,
    /// PageRank: GAP's iterations in its last trial (from its `-l` log).
    pub gap_iterations: Option<u32>,
    /// PageRank: hugewise's iterations.
    pub hugewise_iterations: Option<u32>,
    /// Whether GAP ran first in this round (the order alternates).
    pub gap_first: bool,
    /// Others' CPU use just before the round.
    pub quiet: Option<Quiet>,
}

/// One kernel's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapKernel {
    /// GAP's binary name, which is also hugewise's kernel name.
    pub kernel: String,
    /// hugewise's settings.
    pub spec: Spec,
    /// The graph file both read.
    pub file: String,
    /// GAP's arguments, with `-r SOURCE` shown as `-r <source>` (it changes by round) and
    /// `-v` only in the round that verifies.
    pub gap_args: Vec<String>,
    /// GAP's time over rounds.
    pub gap_ns: Option<Summary>,
    /// hugewise's time over rounds.
    pub hugewise_ns: Option<Summary>,
    /// Median over rounds of GAP's time / hugewise's in the same round: above 1, hugewise is
    /// faster.
    pub ratio: Option<f64>,
    /// 95 % interval of that median (`null` with fewer than 6 rounds).
    pub ratio_ci95: Option<MedianInterval>,
    /// PageRank: GAP's median iteration count.
    pub gap_iterations: Option<u32>,
    /// PageRank: hugewise's median iteration count.
    pub hugewise_iterations: Option<u32>,
    /// PageRank: GAP's iteration cap (`-i`), and whether its count reached it (the cap, not
    /// the tolerance, then stopped it).
    pub gap_iteration_cap: Option<u32>,
    /// Whether GAP's own verifier passed in the round that verified (`null`: not verified).
    pub gap_verified: Option<bool>,
    /// Whether hugewise's verifier passed (`null`: not verified); the error when not.
    pub hugewise_verified: Option<bool>,
    /// What hugewise's verifier said when it failed.
    pub hugewise_verify_error: Option<String>,
    /// What a reader should know (a cap that bounded GAP, a graph GAP described differently).
    pub notes: Vec<String>,
    /// Every round, in order.
    pub samples: Vec<GapSample>,
}

impl GapKernel {
    /// Whether GAP's PageRank stopped at its iteration cap rather than at the tolerance.
    pub fn gap_capped(&self) -> bool {
        matches!((self.gap_iterations, self.gap_iteration_cap), (Some(i), Some(c)) if i >= c)
    }
}

/// The benchmark result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapBenchReport {
    /// The directory of GAP's binaries.
    pub gap_dir: String,
    /// The graph as given.
    pub input: String,
    /// Vertices.
    pub vertices: u64,
    /// Edges as GAP counts them.
    pub edges: u64,
    /// Directed graph.
    pub directed: bool,
    /// Threads of both (GAP's `OMP_NUM_THREADS`, hugewise's pool).
    pub threads: usize,
    /// The CPU each of hugewise's worker threads was bound to, by thread index; empty (and
    /// absent) when they were left to the scheduler, and in results from before threads were
    /// bound. GAP's threads are never bound by hugewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads_bound_to: Vec<usize>,
    /// Trials GAP runs per round; the last one is timed.
    pub gap_trials: u32,
    /// Trials hugewise runs per round from the same source, the last one timed (as GAP's);
    /// absent in results from when it ran one, after an untimed warm-up at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugewise_trials: Option<u32>,
    /// Rounds run: those asked for, or more with `--until`.
    pub rounds: u32,
    /// Why the rounds stopped.
    pub stopped: Option<Stopped>,
    /// Seed of the start vertices.
    pub seed: u64,
    /// Files written for the comparison (GAP reads `.sg` and `.wsg` only), and those reused.
    pub converted: Vec<Converted>,
    /// One entry per kernel, in the order run.
    pub kernels: Vec<GapKernel>,
}

/// A graph file made for GAP from the input, or found already made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Converted {
    /// The file.
    pub path: String,
    /// Written by this run (`false`: an up-to-date one was reused).
    pub written: bool,
    /// Time to load and write it; `null` when reused.
    pub wall_ns: Option<u64>,
}
