//! `hugewise bench bloat`: memory bloat on a real Redis server under THP modes and hugewise
//! exec's rules.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hugewise_bench::bloat;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_mem::{Bytes, Count, Interval, Share, ShareRange};
use hugewise_report::views::exec as view;

use crate::cli::args::{usage, Output};
use crate::signals::cancel_flag;

pub const HELP: &str = "\
Each run starts Debian's redis-server on a free loopback port inside a memory cgroup of its own
(with `--disable-thp no`: Redis otherwise turns THP off for itself), with THP `enabled` set as
the variant says (exec:RULES runs it under hugewise exec with THP at
madvise), then runs redis-benchmark: fill (SET of --keys random keys), read (GET), delete (DEL of
--delete of them), refill (SET again), and stops the server. Throughput and latency come from
redis-benchmark; memory is what the cgroup is charged (a huge page partly freed stays charged
where the resident set no longer counts it), read every 200 ms. Bloat is a run's final charge
minus THP never's in the same round. THP mode and cgroup are put back after every run, also on
error or Ctrl-C. Needs root, redis-server and redis-benchmark (apt-get install redis-server
redis-tools).

Examples:
  hugewise bench bloat --quick                                  a minute's look
  hugewise bench bloat --keys 2M --value 2KiB --rounds 3 --markdown";

/// `hugewise bench bloat`.
#[derive(Debug, Args)]
pub struct BenchBloatArgs {
    /// Keys in the key space.
    #[arg(long, default_value = "1M")]
    pub keys: Count,
    /// Bytes per value.
    #[arg(long, default_value = "1KiB")]
    pub value: Bytes,
    /// Share of the key space deleted and then filled again.
    #[arg(long, default_value = "50%", value_parser = |s: &str| Share::parse_in(s, &ShareRange::POSITIVE))]
    pub delete: Share,
    /// Variants separated by `;`: never, madvise, always, exec:RULES, exec:RULES+POLICY (with
    /// the promotion daemon), exec:RULES+POLICY@N (its thread at nice value N, 0 to 19; 0
    /// unless told, as `hugewise promote --nice`).
    #[arg(
        long,
        default_value = "never;madvise;always;exec:*=thp;exec:*=system+mega"
    )]
    pub variants: String,
    /// Rounds; each runs every variant once.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// redis-benchmark clients.
    #[arg(long, default_value_t = 50)]
    pub clients: u32,
    /// redis-benchmark pipeline depth.
    #[arg(long, default_value_t = 16)]
    pub pipeline: u32,
    /// Pause after the last phase before the final memory reading: jemalloc (Redis's
    /// allocator) returns freed pages to the kernel after 10 s, and that is where huge pages
    /// cost memory.
    #[arg(long, default_value = "12s", value_parser = Interval::period)]
    pub settle: Duration,
    /// 100k keys, one round.
    #[arg(long)]
    pub quick: bool,
    /// The preload library for exec: variants (default: beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `hugewise bench bloat`.
pub fn run(a: BenchBloatArgs, progress: Mode) -> anyhow::Result<()> {
    let stop = &*cancel_flag()?;
    if let Err(e) = bloat::Variant::parse_list(&a.variants) {
        return Err(usage(format!("--variants: {e}")));
    }
    let cfg = bloat::Config {
        clients: a.clients,
        pipeline: a.pipeline,
        settle: a.settle,
        ..bloat::Config::new(
            if a.quick { 100_000 } else { a.keys.0 },
            a.value.0,
            a.delete.fraction(),
            if a.quick { 1 } else { a.rounds },
            &a.variants,
            a.preload.as_deref(),
        )?
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = bloat::run(
        &cfg,
        &hugewise_env::Host::real(),
        &|| stop.load(std::sync::atomic::Ordering::Relaxed),
        &mut |done, total| steps.update(done, total),
    )
    .context("the Redis bloat benchmark")?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::bloat, view::bloat_markdown)
}
