//! `hugewise sim`: TLBs and promotion policies simulated over a trace.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use hugewise_bench::save;
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_report::views;
use hugewise_results::sim::ReuseReport;
use hugewise_results::Saved;
use hugewise_sim::curve::{self, CurveSpec};
use hugewise_sim::grammar::parse_calibration;
use hugewise_sim::{reuse, Budgets, PolicyList, TlbConfig};
use hugewise_trace::meta::Calibration;

use crate::cli::args::{meta, usage, Output};
use crate::signals::cancel_flag;

/// `hugewise sim --help` epilogue.
pub const HELP: &str = "Examples:
  hugewise sim --trace bfs.hwt
  hugewise sim --trace bfs.hwt --policy pcc,hawkeye,linux --budget 0,1,2,4,8,16,32,64,100 --plan plan.json
  hugewise sim --trace bfs.hwt --plan plan.json --reuse          (curves, plans and reuse at once)
  hugewise sim --trace bfs.hwt --policy pcc:order=rr:interval=10s,mega --config golden-cove --json
  hugewise sim --trace bfs.hwt --policy static:region=property@2% --budget 2
  hugewise sim --trace bfs.hwt --calibrate base=1.92,huge=1.31     (seconds measured untraced)
  hugewise sim reuse --trace bfs.hwt

Policies (options after ':', separated by ':'):
  none, all                  the ends of every curve (always simulated)
  linux                      THP at first touch while the budget lasts
  linux-khugepaged           sleep=10s pages=4096 max_ptes_none=511
  hawkeye                    window=1s regions=128 (coverage buckets, fullest first)
  ingens                     scan=4s util=90% regions=128
  mega                       scan=5s history=10 regions=128 (promotes and demotes)
  pcc                        interval=30s regions=128 order=freq|rr size=2m|1g entries=128 bias=1/2
  static                     region=NAME[@SHARE] range=START-END (repeatable)

Budgets are percentages of the footprint (the trace regions' 2 MiB frames). Simulated time is
counted in accesses; the clock (accesses per second of the untraced run) comes from the trace's
sidecar, --rate, or an assumed 200 M/s. Policy intervals are divided by --time-scale (default:
so that the slowest interval fits 16 times in the trace). TLB configs: haswell (default,
the seeds' Haswell), golden-cove (Intel Xeons from Sapphire Rapids: cpu family 6, model 143 or
207 in /proc/cpuinfo), zen4 (AMD EPYC 9004: family 25, model 16 to 31), or a TOML file for
another CPU. Every TLB figure is simulated.";

/// `hugewise sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Reuse distance instead of curves.
    #[command(subcommand)]
    pub reuse: Option<SimCommand>,
    /// The trace (from `hugewise trace`).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Policies, comma-separated, each with options after ':'.
    #[arg(long, default_value = "pcc,hawkeye,linux")]
    pub policy: PolicyList,
    /// Budgets in % of the footprint, comma-separated.
    #[arg(long, default_value = "0,1,2,4,8,16,32,64,100")]
    pub budget: Budgets,
    /// TLB organisation: haswell, golden-cove, zen4, or a TOML file.
    #[arg(long, default_value = "haswell")]
    pub config: String,
    /// Accesses per second of the real run (default: the trace's sidecar, else 200 M).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Divide policy intervals by this (default: the slowest fits 16 times in the trace).
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Run the trace's first ACCESSES of stream 0 as warm-up, not counted (default: the
    /// first-touch prologue `hugewise trace` records in the sidecar; 0 counts everything).
    #[arg(long, value_name = "ACCESSES")]
    pub warmup: Option<u64>,
    /// Measured untraced seconds to calibrate the cost model: base=S,huge=S.
    #[arg(long, value_name = "base=S,huge=S", value_parser = parse_calibration)]
    pub calibrate: Option<Calibration>,
    /// Write every configuration's promotion plan to this JSON file (atomically).
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Also give reuse distance and the pages' classes (as `sim reuse` does), from the same
    /// decode of the trace.
    #[arg(long = "reuse")]
    pub with_reuse: bool,
    /// Model physical memory: promotions need a free 2 MiB block, and compaction (`off`,
    /// `linux` on demand, `ingens` periodic in address order, `mega` periodic by benefit over
    /// cost) makes them, e.g. `mega:memory=2x:others=50%:fragment=50%` (also `every=5s`,
    /// `bytes=200MiB`, `collapse-us=500`, `move-us=2`, `seed=1`). Each point then reports free
    /// blocks over time, pages moved, refused promotions and their modelled latency.
    #[arg(long, value_name = "SPEC")]
    pub phys: Option<hugewise_sim::physmem::PhysSpec>,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `hugewise sim <command>`.
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Exact page reuse distance at 4 KiB and 2 MiB, and the pages' classes (TLB-friendly,
    /// HUBs, low-reuse) at the 1 024 threshold.
    Reuse {
        /// The trace.
        #[arg(long)]
        trace: PathBuf,
        /// Output options.
        #[command(flatten)]
        output: Output,
    },
}

/// `hugewise sim`.
pub fn run(a: SimArgs, progress: Mode) -> anyhow::Result<()> {
    let cancel = cancel_flag()?;
    if let Some(SimCommand::Reuse { trace, output }) = a.reuse {
        let steps = Steps::new(progress, "reuse", Unit::Items);
        let r = reuse::run(&trace, &steps)
            .with_context(|| format!("reuse distance of {}", trace.display()))?;
        steps.finish();
        let r = ReuseReport {
            trace,
            granularities: r,
        };
        return output.emit(r, |r| views::sim::reuse(&r.granularities));
    }
    let Some(trace) = a.trace.clone() else {
        return Err(usage(
            "--trace FILE is required (make one with `hugewise trace`)",
        ));
    };
    let spec = CurveSpec {
        policies: a.policy.0,
        budgets: a.budget.0,
        tlb: TlbConfig::resolve(&a.config)?,
        accesses_per_s: a.rate,
        time_scale: a.time_scale,
        calibration: a.calibrate,
        reuse: a.with_reuse,
        warmup_accesses: a.warmup,
        phys: a.phys,
    };
    let steps = Steps::new(progress, "simulating", Unit::Items);
    let (curves, plans) = curve::run(&trace, &spec, &steps, &cancel)
        .with_context(|| format!("simulating {}", trace.display()))?;
    steps.finish();
    if curves.accesses == 0 {
        bail!("{} holds no accesses", trace.display());
    }
    if let Some(p) = &a.plan {
        plans
            .validate()
            .context("the simulator made a plan a promotion engine would refuse")?;
        save::write_json(p, &Saved::new(meta(), plans))?;
    }
    a.output.emit(curves, views::sim::curves)
}
