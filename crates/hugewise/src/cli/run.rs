//! `hugewise run`: a graph kernel with a page policy per array, in this process, or under
//! `--memory` as a supervisor of a worker (`hugewise worker`) that runs inside the memory
//! cgroup.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Context;
use clap::Args;
use hugewise_bench::run::{self, memory};
use hugewise_bench::worker::RunRequest;
use hugewise_console::progress::{self, Mode, Steps, Unit};
use hugewise_env::{Host, Knob};
use hugewise_mem::{Interval, IntervalOrOff, Overcommit, Share, ShareRange, Threads};
use hugewise_report::views::run as views;

use crate::cli::args::{cpus, GraphInputArgs, KernelArg, KernelSettings, Output, Placement};
use crate::signals::{cancel_flag, exit_code};

/// `hugewise run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kernel.
    #[arg(value_enum)]
    pub kernel: KernelArg,
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Where the arrays go.
    #[command(flatten)]
    pub place: Placement,
    /// Worker threads, 1 or more (default: one per CPU).
    #[arg(long, conflicts_with = "overcommit", value_parser = Threads::count)]
    pub threads: Option<usize>,
    /// Threads as a multiple of the CPUs, 1 or more (e.g. 4 runs 4 threads per CPU), or
    /// `auto`: chosen trial by trial (doubled from 1 while it pays), recorded with its reasons.
    #[arg(long, value_name = "N|auto")]
    pub overcommit: Option<Overcommit>,
    /// Sample telemetry over the trials (CPU split, faults, swap traffic, the swap device's
    /// queue, the memory cgroup) every INTERVAL (default 100ms) into the result.
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = "100ms",
          value_parser = Interval::period)]
    pub telemetry: Option<std::time::Duration>,
    /// Hold the trials to this share of the run's footprint (graph and kernel arrays) in a
    /// memory cgroup, with swap; the graph is loaded outside the limit first (e.g. 30%).
    #[arg(long, value_name = "SHARE", value_parser = |s: &str| Share::parse_in(s, &ShareRange::POSITIVE))]
    pub memory: Option<Share>,
    /// With --memory: `auto` makes a swap file for the run (at --swap-file) and removes it;
    /// `none` uses the swap already on.
    #[arg(long, value_name = "auto|none", default_value = "auto", requires = "memory",
          value_parser = ["auto", "none"])]
    pub swap: String,
    /// Where --swap auto puts its swap file (must not exist; a local disk, not tmpfs).
    #[arg(
        long,
        default_value = "/var/tmp/hugewise-run.swap",
        requires = "memory"
    )]
    pub swap_file: PathBuf,
    /// Swap readahead for the run, 2^N pages (`vm.page-cluster`, put back afterwards).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=31))]
    pub page_cluster: Option<u32>,
    /// With --memory: every INTERVAL (50ms, 0.2s) the command holding the limit reads the
    /// cgroup's memory.stat, which makes the kernel flush the cgroup's statistics. On cgroup v1
    /// a run with a +lock prefix at 65 % was OOM-killed with swap to spare in 8 of 22 runs with
    /// `off`, none of 22 with 50ms. About 0.15 ms a read, recorded as memory.stats_flush;
    /// `off` is there to compare.
    #[arg(
        long,
        value_name = "INTERVAL|off",
        default_value = "50ms",
        requires = "memory"
    )]
    pub stats_flush: IntervalOrOff,
    /// Timed trials, one source each.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// Check every trial against an independent serial implementation.
    #[arg(long)]
    pub verify: bool,
    /// Publish one access in N of those the sampler sees to /dev/shm/hugewise-samples.PID,
    /// where `hugewise promote --pid` finds it (the warm-up trial is sampled too, so a daemon
    /// can promote before the timed trials, whose times include the sampling). It
    /// sees every access, except in PageRank's loops, where it sees one vertex in 32 (the
    /// rest run without probes, which would slow so tight a loop by 1.7x).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub sample_every: Option<u32>,
    /// Replay this promotion plan (`hugewise sim --plan`, from a trace of the same kernel on
    /// the same graph) on the run's own arrays while its trials run: its regions are found
    /// here by name. Steps due at the start are applied before the first trial; the rest at
    /// their traced times from the first trial's start, and those not made by the last trial's
    /// end are not applied (the replay's `steps` against its `actions` says so).
    #[arg(long, value_name = "PLAN")]
    pub promote: Option<PathBuf>,
    /// With --promote: the policy whose plan to replay, when the file holds several.
    #[arg(long, value_name = "NAME", requires = "promote")]
    pub plan_policy: Option<String>,
    /// With --promote: the budget whose plan to replay (4%), when the file holds several.
    #[arg(long, value_name = "SHARE", requires = "promote", value_parser = |s: &str| Share::parse_in(s, &ShareRange::FOOTPRINT))]
    pub plan_budget: Option<Share>,
    /// Kernel settings.
    #[command(flatten)]
    pub settings: KernelSettings,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// Run the kernel's trials and print them; a trial that failed verification fails the command.
pub fn run(a: RunArgs, progress: Mode) -> anyhow::Result<()> {
    let kernel = a.settings.spec(a.kernel)?;
    let request = request(&a, kernel);
    let what = format!("running {} on {}", kernel.name(), a.input.graph);
    let r = match a.memory {
        Some(share) => supervise(&a, share, &request).context(format!("{what} under --memory"))?,
        None => trials(&a, &request, progress, what)?,
    };
    let (failed, trials) = (r.failed_verification(), r.trials.len());
    a.output.emit(r, views::run)?;
    match failed {
        0 => Ok(()),
        n => anyhow::bail!(
            "{n} of {trials} trials failed verification (each trial's verify_error says why)"
        ),
    }
}

/// Under `--memory`: `request` served by this program's worker, in a memory cgroup.
fn supervise(
    a: &RunArgs,
    share: Share,
    request: &RunRequest,
) -> anyhow::Result<hugewise_results::run::RunReport> {
    let plan = memory::Plan {
        share: share.fraction(),
        swap: match a.swap.as_str() {
            "none" => memory::SwapSource::Existing,
            _ => memory::SwapSource::File(a.swap_file.clone()),
        },
        page_cluster: a.page_cluster,
        stats_flush: a.stats_flush.0,
    };
    let exe = std::env::current_exe().context("finding this program to run the worker")?;
    let cancel = cancel_flag()?;
    Ok(memory::supervise(
        &Host::real(),
        &plan,
        &exe,
        request,
        &|| cancel.load(Relaxed),
    )?)
}

/// What the arguments ask to run, in this process or in a worker.
fn request(a: &RunArgs, kernel: hugewise_graph::kernels::Spec) -> RunRequest {
    let config = run::Config {
        input: a.input.graph.clone(),
        load: a.input.kernel_load_options(),
        layout: a.place.layout(),
        kernel,
        reorder: a.place.reorder,
        reorder_cache: a.place.cache.cache(),
        trials: a.trials,
        sources: a.settings.source.clone(),
        verify: a.verify,
        threads: (a.threads).unwrap_or_else(|| a.overcommit.map_or(cpus(), |o| o.threads(cpus()))),
        sample_every: a.sample_every,
        replay: a.promote.clone().map(|plan| run::Replay {
            plan,
            policy: a.plan_policy.clone(),
            budget_share: a.plan_budget.map(Share::fraction),
        }),
    };
    RunRequest {
        telemetry: a.telemetry,
        auto_overcommit: a.overcommit == Some(Overcommit::Auto),
        ..RunRequest::new(config)
    }
}

/// The trials in this process; `what` they are says what failed.
fn trials(
    a: &RunArgs,
    request: &RunRequest,
    progress: Mode,
    what: String,
) -> anyhow::Result<hugewise_results::run::RunReport> {
    let steps = Steps::new(progress, "loading", Unit::Items);
    let r = match a.page_cluster {
        // A page cluster without --memory is set here, in a session of its own; Ctrl-C or
        // SIGTERM puts it back before this process ends.
        Some(n) => {
            let cancel = cancel_flag()?;
            hugewise_env::session::with_setting(
                &Host::real(),
                Knob::PageCluster,
                &n.to_string(),
                &|| cancel.load(Relaxed),
                &|| {
                    eprintln!("hugewise: interrupted; vm.page-cluster is put back");
                    std::process::exit(exit_code(1).into());
                },
                || request.run(None, &mut steps.counting("trials")),
            )?
        }
        None => progress::with_reads(&steps, || request.run(None, &mut steps.counting("trials"))),
    };
    steps.finish();
    r.context(what)
}
