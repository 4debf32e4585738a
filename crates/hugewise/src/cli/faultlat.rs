//! `hugewise faultlat`: the latency of each page fault of a fresh region.

use anyhow::Context;
use clap::Args;
use hugewise_bench::faultlat;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_mem::{Bytes, PagePolicy};
use hugewise_report::views;

use crate::cli::args::Output;

/// `hugewise faultlat`.
#[derive(Debug, Args)]
pub struct FaultlatArgs {
    /// Region size, e.g. 1GiB, 512M, 1.5G.
    #[arg(long, default_value = "1GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Page policy: system, base, thp, thp-prefix:SIZE or thp-prefix:PERCENT%, hugetlb-2m, hugetlb-1g.
    #[arg(long, default_value = "base")]
    pub policy: PagePolicy,
    /// After faulting, lift NOHUGEPAGE and collapse every 2 MiB piece with MADV_COLLAPSE.
    #[arg(long)]
    pub then_collapse: bool,
    /// Touch the region even when it is larger than the memory available; only sensible with
    /// swap to spare.
    #[arg(long)]
    pub force: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Fault the region, timing each fault.
pub fn run(a: FaultlatArgs, progress: Mode) -> anyhow::Result<()> {
    let cfg = faultlat::Config {
        bytes: a.size,
        policy: a.policy,
        then_collapse: a.then_collapse,
        force: a.force,
    };
    let steps = Steps::new(progress, "faulting", Unit::Bytes);
    let r = faultlat::run(&cfg, &mut |done, total| {
        steps.update(done, total);
        if done == total && cfg.then_collapse {
            steps.phase("collapsing");
        }
    })
    .context("fault-latency run")?;
    steps.finish();
    a.output.emit(r, views::machine::faultlat)
}
