//! `hugewise bench randread`: random 8-byte reads over one region, base vs thp vs
//! base-then-collapsed.

use anyhow::Context;
use clap::Args;
use hugewise_bench::randread;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_mem::{Bytes, Count};
use hugewise_report::views::machine as view;

use crate::cli::args::{Output, UntilArgs};
use crate::signals::cancel_flag;

/// `hugewise bench randread`.
#[derive(Debug, Args)]
pub struct RandreadArgs {
    /// Region size.
    #[arg(long, default_value = "4GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Timed reads per sample (k/M/G suffixes are decimal: 20M = 20 000 000).
    #[arg(long, default_value = "20M")]
    pub reads: Count,
    /// Rounds; each runs every variant once, alternated: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Seed of the address stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run even when the region is larger than the memory available; only sensible with swap
    /// to spare.
    #[arg(long)]
    pub force: bool,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Time the reads.
pub fn run(a: RandreadArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = randread::Config {
        bytes: a.size,
        reads: a.reads.0,
        rounds: a.rounds,
        seed: a.seed,
        force: a.force,
        until: a.until.until(),
    };
    let steps = Steps::new(progress, "samples", Unit::Items);
    let cancel = cancel_flag()?;
    let r = randread::run(&cfg, &cancel, &mut |done, total| steps.update(done, total))
        .context("random-read benchmark")?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::randread, view::randread_markdown)
}
