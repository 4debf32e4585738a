//! `hugewise trace`: every data access of a graph kernel into a .hwt trace, or Valgrind lackey
//! output imported.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use hugewise_bench::capture;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_report::views;

use crate::cli::args::{usage, GraphInputArgs, KernelArg, KernelSettings, Output, Placement};

/// `hugewise trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Import instead of tracing a kernel.
    #[command(subcommand)]
    pub import: Option<TraceImport>,
    /// Kernel.
    #[arg(value_enum)]
    pub kernel: Option<KernelArg>,
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Where the arrays go.
    #[command(flatten)]
    pub place: Placement,
    /// Kernel settings.
    #[command(flatten)]
    pub settings: KernelSettings,
    /// The trace file (written atomically; its sidecar is FILE.json).
    #[arg(long, default_value = "run.hwt")]
    pub out: PathBuf,
    /// Threads, each recording its own stream (the simulator gives each its own TLBs and
    /// PCC). With 1 the trace is the same on every run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Untraced runs of the same code, timed for the simulator's clock (0: none).
    #[arg(long, default_value_t = 3)]
    pub rate_runs: u32,
    /// Also time N untraced runs on a copy all on 4 KiB pages and on a copy all asking for
    /// THP, alternated, and keep them in the sidecar: `hugewise sim` then calibrates its
    /// speedup estimate on them. Takes twice the graph's memory more (0: none).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub calibrate: u32,
    /// Do not check the traced run's result against the serial reference (which for
    /// PageRank on a large graph takes far longer than the trace).
    #[arg(long)]
    pub no_verify: bool,
    /// Print the capture report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hugewise trace <importer>`.
#[derive(Debug, Subcommand)]
pub enum TraceImport {
    /// Import `valgrind --tool=lackey --trace-mem=yes` output (a file, or - for stdin),
    /// streaming.
    Lackey {
        /// Lackey output; - reads stdin.
        input: PathBuf,
        /// The trace file.
        #[arg(long, default_value = "run.hwt")]
        out: PathBuf,
        /// Accesses read before the regions are fixed.
        #[arg(long, default_value_t = hugewise_trace::lackey::WINDOW)]
        window: usize,
        /// Print the result (what was imported) as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `hugewise trace`.
pub fn run(a: TraceArgs, progress: Mode) -> anyhow::Result<()> {
    if let Some(TraceImport::Lackey {
        input,
        out,
        window,
        json,
    }) = a.import
    {
        let steps = Steps::new(progress, "importing", Unit::Items);
        let r = capture::import_lackey(&input, &out, window)?;
        steps.update(r.accesses, r.accesses);
        steps.finish();
        return Output::json(json).emit(r, views::sim::lackey);
    }
    let Some(kernel) = a.kernel else {
        return Err(usage(
            "name a kernel (bfs, sssp, pr, cc, bc, tc) or an importer (lackey)",
        ));
    };
    let spec = a.settings.spec(kernel)?;
    let cfg = capture::Config {
        input: a.input.graph.clone(),
        load: a.input.load_options(),
        layout: a.place.layout(),
        kernel: spec,
        threads: usize::from(a.threads),
        reorder: a.place.reorder,
        reorder_cache: a.place.cache.cache(),
        sources: a.settings.source.clone(),
        out: a.out.clone(),
        rate_runs: a.rate_runs,
        verify: !a.no_verify,
        calibrate_runs: a.calibrate,
    };
    let steps = Steps::new(progress, "tracing", Unit::Items);
    let r = capture::capture(&cfg)
        .with_context(|| format!("tracing {} on {}", spec.name(), a.input.graph))?;
    steps.update(r.accesses, r.accesses);
    steps.finish();
    Output::json(a.json).emit(r, views::sim::capture)
}
