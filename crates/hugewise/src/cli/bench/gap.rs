//! `hugewise bench gap`: the user's own GAP build against hugewise's kernels on one graph
//! file, alternated round by round.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hugewise_bench::gap;
use hugewise_graph::load::Input;
use hugewise_mem::Threads;
use hugewise_report::views::gap as view;

use crate::cli::args::{usage, Output, UntilArgs};
use crate::signals::cancel_flag;
use hugewise_console::progress::{Mode, Steps, Unit};

/// Examples and method, shown by `--help`.
pub const HELP: &str = "Examples:
  hugewise bench gap --gap-dir ~/gapbs --graph kron22.sg --kernels pr,bfs
  hugewise bench gap --gap-dir ~/gapbs --graph road.el.gz --symmetrize --rounds 6 --until 5%
  hugewise bench gap --gap-dir ~/gapbs --graph kron:20 --convert-dir /tmp --json

GAP's binaries (bfs, sssp, pr, cc, bc, tc, built by `make` in its folder) read .sg and .wsg
only: any other input is converted once into --convert-dir (beside the input by default) and
reused while newer than it. Both sides get the same threads (GAP through OMP_NUM_THREADS), the
same start vertex each round (GAP's -r; bc's -i iterations all start there, and hugewise's bc
is given that vertex as many times) and the suite's settings: sssp -d 2, pr -i 1000 -t 1e-4
(GAP's own default cap is 20 iterations), bc -i 4. Each round runs GAP for --gap-trials trials
and times its last (GAP allocates its arrays in every trial; the first pays their first touch),
and hugewise's kernel as many times in process, also timing the last (a first run seconds after
the round before finds its pages gone cold on a VM, which GAP's second trial never does);
which goes first alternates. Times are each side's
own kernel time, without loading. The ratio is GAP's time over hugewise's in the same round
(above 1: hugewise is faster), the median with its 95 % interval (6 rounds at least). The
first round verifies both (hugewise's only, with --skip-gap-verify).";

/// `hugewise bench gap`.
#[derive(Debug, Args)]
pub struct BenchGapArgs {
    /// The folder of GAP's built binaries.
    #[arg(long, value_name = "DIR")]
    pub gap_dir: PathBuf,
    /// The graph: a file (.sg, .wsg, .el, .wel, .mtx, .hwg) or a generator (kron:20).
    #[arg(long, value_parser = Input::parse)]
    pub graph: Input,
    /// Symmetrize a text edge list.
    #[arg(long)]
    pub symmetrize: bool,
    /// Where converted .sg/.wsg files go (default: beside the input; the current folder for a
    /// generator).
    #[arg(long, value_name = "DIR")]
    pub convert_dir: Option<PathBuf>,
    /// Kernels, by GAP's binary names.
    #[arg(long, value_delimiter = ',', default_value = "bfs,sssp,pr,cc,bc,tc")]
    pub kernels: Vec<String>,
    /// Rounds per kernel: 6 by default, the fewest whose ratio gets a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Threads of both, 1 or more.
    #[arg(long, default_value = "2", value_parser = Threads::count)]
    pub threads: usize,
    /// Trials each side runs each round, from the same source; the last is timed.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub gap_trials: u32,
    /// Seed of the start vertices (and of a generator).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// PageRank: stop when the scores' total change is below this (both sides).
    #[arg(long, default_value_t = 1e-4)]
    pub tolerance: f64,
    /// PageRank: iteration cap (both sides).
    #[arg(long, default_value_t = 1000)]
    pub max_iters: u32,
    /// SSSP: bucket width (both sides).
    #[arg(long, default_value_t = 2)]
    pub delta: u32,
    /// BC: sources a trial (both sides).
    #[arg(long, default_value_t = 4)]
    pub bc_sources: u32,
    /// Skip GAP's own verification (its -v in the first round), which for some kernels runs
    /// serially far longer than the kernel (TC on kron:22: over 13 minutes); hugewise's side
    /// still verifies.
    #[arg(long)]
    pub skip_gap_verify: bool,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

pub fn run(a: BenchGapArgs, progress: Mode) -> anyhow::Result<()> {
    if !a.tolerance.is_finite() || a.tolerance < 0.0 || a.max_iters == 0 || a.delta == 0 {
        return Err(usage(
            "--tolerance must be a finite number ≥ 0, and --max-iters and --delta at least 1",
        ));
    }
    let mut cfg = gap::Config::new(a.gap_dir, a.graph, a.kernels);
    cfg.symmetrize = a.symmetrize;
    cfg.convert_dir = a.convert_dir;
    cfg.threads = a.threads;
    cfg.rounds = a.rounds;
    cfg.until = a.until.until();
    cfg.gap_trials = a.gap_trials;
    cfg.seed = a.seed;
    cfg.pr_tolerance = a.tolerance;
    cfg.pr_max_iters = a.max_iters;
    cfg.sssp_delta = a.delta;
    cfg.bc_sources = a.bc_sources;
    cfg.gap_verify = !a.skip_gap_verify;
    let cancel = cancel_flag()?;
    let steps = Steps::new(progress, "rounds", Unit::Items);
    let r = gap::run(&cfg, &cancel, &mut |done, total| steps.update(done, total))
        .context("GAP comparison")?;
    steps.finish();
    a.output.emit_as(r, a.markdown, view::text, view::markdown)
}
