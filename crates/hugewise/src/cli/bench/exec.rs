//! `hugewise bench exec`: a program under several page rules and without hugewise,
//! alternated round by round.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hugewise_bench::execbench;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_exec::run;
use hugewise_mem::Bytes;
use hugewise_report::views::exec as view;
use hugewise_rules::protocol::{DEFAULT_HOT_ARENA, DEFAULT_MIN_SIZE};

use crate::cli::args::{usage, Output, UntilArgs};
use crate::signals::cancel_flag;

pub const HELP: &str = "\
Variants are separated by `;` (rules hold commas): `plain` runs the program without hugewise,
`promote` or `promote:BUDGET` runs it under `hugewise promote` (2 % by default; the program
under the preload library), anything else is a set of rules as `hugewise exec --pages` takes
them. The first variant is the
baseline: each speedup is the median over rounds of its time over the variant's in the same
round. Each round runs every variant once, in an order that puts every variant right after
every other equally often within a round over every n rounds, 2n for an odd number of variants
(A B D C, B C A D, C D B A, D A C B for four: what one run frees changes the next one's first
touch), each after checking the machine is quiet; the
program's output is discarded (a failing run stops the benchmark and says which variant). With
--metric KEY the program's own line `KEY=SECONDS` is compared too, for a program that times
the phase that matters apart from its setup.

Examples:
  hugewise bench exec -- python3 my_job.py                      plain vs *=base vs *=thp
  hugewise bench exec --variants '*=base;*=thp;>=1GiB=thp' --rounds 7 -- ./simulator big.cfg
  hugewise bench exec --variants 'plain;promote;promote:100%;*=thp' -- ./randread 4096 400";

/// `hugewise bench exec`.
#[derive(Debug, Args)]
pub struct BenchExecArgs {
    /// Variants separated by `;`: `plain` or rules (see below).
    #[arg(long, default_value = "plain;*=base;*=thp")]
    pub variants: String,
    /// Rounds; each runs every variant once: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Allocations smaller than this stay with the program's allocator.
    #[arg(long, default_value_t = Bytes(DEFAULT_MIN_SIZE))]
    pub min_size: Bytes,
    /// The preload library (default: libhugewise_preload.so beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Most bytes of the hot arena (rules with policy `arena`).
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// Also compare the time the program measures itself: it prints a line `KEY=SECONDS` on
    /// stdout (for example the timed phase without its setup).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `hugewise bench exec`.
pub fn run(a: BenchExecArgs, progress: Mode) -> anyhow::Result<()> {
    let stop = &*cancel_flag()?;
    let variants = execbench::Variant::parse_list(&a.variants)
        .map_err(|e| usage(format!("--variants: {e}")))?;
    if variants.is_empty() {
        return Err(usage("--variants: no variant given"));
    }
    let scratch = hugewise_bench::packing::scratch()?;
    let cfg = execbench::Config {
        argv: a.command.clone(),
        variants,
        rounds: a.rounds,
        until: a.until.until(),
        min_size: a.min_size.0,
        preload: run::find_preload(a.preload.as_deref())?,
        metric: a.metric.clone(),
        // In a directory of its own: a fixed name in /tmp could be another user's link.
        scratch: scratch.path().join("program.out"),
        hot_arena: a.hot_arena.0,
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = execbench::run(&cfg, stop, &mut |done, total| steps.update(done, total))
        .context("benchmarking the program")?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::bench, view::bench_markdown)
}
