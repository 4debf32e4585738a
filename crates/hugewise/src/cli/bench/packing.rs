//! `hugewise bench packing`: a program profiled, then its hot call sites' small objects packed
//! into a hot arena of huge pages, against 4 KiB pages only and THP for everything.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hugewise_bench::packing;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_exec::placement::Options;
use hugewise_exec::run;
use hugewise_mem::{Bytes, Count, Share, ShareRange};
use hugewise_report::views::exec as view;
use hugewise_rules::protocol::DEFAULT_HOT_ARENA;

use crate::cli::args::{Output, UntilArgs};
use crate::signals::cancel_flag;

pub const HELP: &str = "\
The program is profiled once (as `hugewise profile`), then each round runs it five ways, in an
order that puts each right after every other within a round twice over ten rounds (at least
once over six): 4k (THP never: 4 KiB pages only), thp-always
(THP always, as the machine gives it: glibc's heap grows 128 KiB at a time, so most of it
faults before a whole huge page fits and stays 4 KiB), thp-all (THP always with glibc's heap
grown 64 MiB at a time, GLIBC_TUNABLES=glibc.malloc.top_pad: huge pages for everything),
packed-4k (the placement under THP never: packing alone) and packed (the placement under THP
madvise: the hot arena in huge pages). THP is set for
each run and put back after it, also on error or Ctrl-C (needs root). Speedups are medians over
rounds of the 4k run's time over the variant's in the same round, on the program's own timing
line (--metric) when it prints one. Huge bytes are the process's peak AnonHugePages. Every
variant must print what the profile run printed (the timing line aside).

Without a command it builds and runs the built-in workload (benches/programs/packing.c, needs
cc): --records hot records of 32 bytes made in turn with as many cold records of 480 bytes from
another call site, then --hops steps of a pointer chase over the hot ones.

Examples:
  hugewise bench packing --quick
  hugewise bench packing --records 4M --hops 20M --rounds 5 --markdown
  hugewise bench packing --until 3% --max-rounds 12   rounds until each interval is within 3 %
  hugewise bench packing --metric time_s -- ./my-program input";

/// `hugewise bench packing`.
#[derive(Debug, Args)]
pub struct BenchPackingArgs {
    /// Hot records of the built-in workload (and as many cold ones).
    #[arg(long, default_value = "4M")]
    pub records: Count,
    /// Pointer-chase steps of the built-in workload.
    #[arg(long, default_value = "20M")]
    pub hops: Count,
    /// Rounds; each runs every variant once: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Most bytes of small objects the hot arena takes.
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// The least accessed share for a site to count as hot (0 to 1).
    #[arg(long, default_value = "0.5", value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub min_share: Share,
    /// The program's timing line `KEY=SECONDS` (the built-in workload prints time_s).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// 1M records, 5M hops, 2 rounds.
    #[arg(long)]
    pub quick: bool,
    /// The preload library (default: beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// A program to measure instead of the built-in workload, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `hugewise bench packing`.
pub fn run(a: BenchPackingArgs, progress: Mode) -> anyhow::Result<()> {
    let stop = &*cancel_flag()?;
    let scratch = packing::scratch()?;
    let (argv, metric) = if a.command.is_empty() {
        let argv = packing::workload(scratch.path(), a.records.0, a.hops.0, a.quick)?;
        let metric = a.metric.clone().unwrap_or(packing::WORKLOAD_METRIC.into());
        (argv, Some(metric))
    } else {
        (a.command.clone(), a.metric.clone())
    };
    let cfg = packing::Config {
        argv,
        preload: run::find_preload(a.preload.as_deref())?,
        rounds: if a.quick { 2 } else { a.rounds },
        until: a.until.until(),
        options: Options {
            hot_arena: a.hot_arena.0,
            min_share: a.min_share.fraction(),
        },
        metric,
        scratch: scratch.path().to_path_buf(),
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = packing::run(
        &cfg,
        &hugewise_env::Host::real(),
        stop,
        &mut |done, total| steps.update(done, total),
    )
    .context("the packing benchmark")?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::packing, view::packing_markdown)
}
