//! `hugewise bench promote`: a skewed workload (or a graph kernel) with 4 KiB pages, all huge,
//! a replayed plan and the online daemon, alternated round by round.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hugewise_bench::promote as bench;
use hugewise_bench::promote::named::{workloads, Hotspot, Reads};
use hugewise_console::progress::{Mode, Steps, Unit};
use hugewise_mem::{Amount, Bytes, Count, Interval, Share, ShareRange, Threads};
use hugewise_report::views::promote as view;

use hugewise_graph::load::LoadOptions;

use crate::cli::args::{name, KernelArg, KernelSettings, Output, UntilArgs};
use crate::signals::cancel_flag;

pub const HELP: &str = "Examples:
  hugewise bench promote                           8 GiB, 6 rounds of the hot spot and of the
                                                   no-gain workload (about 25 minutes)
  hugewise bench promote --size 2GiB --rounds 2 --reads 50M   a quicker look
  hugewise bench promote --workload nogain       only the workload huge pages cannot help
  hugewise bench promote --zipf 1,1.5 --json     two workloads: a long tail and a sharp hot set
  hugewise bench promote --zipf 1.2 --budget 2% --markdown
  hugewise bench promote --hotspot 4%:99% --lines-per-page 1 --chase
                         99 % of dependent reads on 4 % of the chunks, one line of each page
  hugewise bench promote --hotspot 1%:99% --lines-per-page 1 --chase --same-frames
                         99 % on 1 % of the chunks, every arm of a round on the same pages
  hugewise bench promote --workload hotspot --cold-first \
    --shape-pressure-leave 12GiB --shape-fragment 50%
                         every round on the machine as it is and with huge pages scarce:
                         what scarcity costs the daemon, and Linux THP at fault (the ideal
                         arm, cold chunks faulted first) against the plan and the daemon
  hugewise bench promote --graph k26.hwg --kernel pr --rounds 3 --out bp-pr.json
                         PageRank on kron:26 (hugewise graph gen --graph kron:26 --out k26.hwg)
  hugewise bench promote --graph kron:20 --rounds 1 --plan plan.json   a quick look, a given plan

Workloads: without --workload, --zipf or --hotspot, two: `hotspot` (99.9 % of the reads on 3.9 %
of the chunks, which the 4 % budget holds, one line of each page read, each read waiting for
the one before: the shape huge pages pay most for) and `nogain` (dependent reads over 256 KiB,
64 pages the first-level TLB holds, each followed by arithmetic, in a region mapped whole and
cold: every arm should stay at 1.0x, and the daemon collapse nothing, its candidates counted
as not worth their collapse). `zipf` is Zipf reads with exponent 1. --lines-per-page and
--chase shape `zipf`, --zipf and --hotspot; `hotspot` and `nogain` keep their own.

Arms: base (4 KiB pages), ideal (every chunk huge), plan (the chunks a sampled profile ranks
highest, collapsed before the clock starts), daemon (the pcc policy on samples the workload
publishes with its sampling period, promoting while the clock runs; a chunk whose sampled walks,
past what the TLB holds, would not pay for its collapse stays on 4 KiB pages). The plan and the
daemon get the same budget.
Share of ideal is (speedup - 1) / (ideal speedup - 1) in the same round, its median over rounds;
saving share is (base - arm) / (base - ideal) from the medians of times over the ideal's,
steadier when the ideal gains little in some rounds; its 95 % interval is a bootstrap over
whole rounds (10,000 resamples, a fixed seed), where the speedups' and per-round shares' come
from the order statistics of per-round ratios. With --same-frames the order is fixed
(ideal, plan, base, daemon): the ideal runs right after the whole region was collapsed, the
plan keeps its chunks of that collapse, and the daemon starts from 4 KiB pages. Needs THP
`madvise` so that the base arm faults 4 KiB pages. --json gives one object per workload under
`workloads` (two with --shape-…: the machine as it was, then the shaped one with `shaped`), its
headline first: workload, ideal_speedup, plan_speedup, daemon_speedup, their
shares of the ideal (per round, and of its saving: plan_share_of_ideal_saving,
daemon_share_of_ideal_saving, each with its _ci95), huge_footprint_share (the plan's, read back from the
kernel), the daemon's, reach_budget_ms and daemon_cpu_share; each daemon sample has not_worth.

With --graph each arm is a run in a process of its own (a fresh load, so the ideal has the
graph's arrays huge too): base all=system, ideal all=thp, plan replaying a pcc plan, daemon
under the pcc daemon. The kernel settings (--mode, --max-iters, --source, ...) and --threads
are every arm's. Its times are the kernel's seconds per timed trial.";

/// `hugewise bench promote`.
#[derive(Debug, Args)]
pub struct BenchPromoteArgs {
    /// Region size.
    #[arg(long, default_value = "8GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Named workloads, comma-separated, run in turn: hotspot, nogain, zipf [default: hotspot
    /// and nogain, without --zipf or --hotspot].
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1..)]
    pub workload: Vec<WorkloadArg>,
    /// Zipf exponents over the 2 MiB chunks' ranks, comma-separated: one workload each, run in
    /// turn after the named ones, each against its own base and ideal.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub zipf: Vec<f64>,
    /// Hot spots, comma-separated, each `CHUNKS:READS` in percent: READS of the reads spread
    /// evenly over CHUNKS of the 2 MiB chunks (scattered over the region), the rest evenly over
    /// the others (`4%:99%`). One workload each, run after the Zipf ones.
    #[arg(long, value_delimiter = ',', num_args = 1.., value_name = "CHUNKS:READS")]
    pub hotspot: Vec<Hotspot>,
    /// Timed reads per run (k/M/G suffixes are decimal).
    #[arg(long, default_value = "200M")]
    pub reads: Count,
    /// Rounds; each runs every arm once, alternated: 6 by default, the fewest whose
    /// speedups get a 95 % interval.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// More rounds until the intervals are narrow enough.
    #[command(flatten)]
    pub until: UntilArgs,
    /// Share of the region the plan and the daemon may make huge.
    #[arg(long, default_value = "4%")]
    pub budget: Amount,
    /// The daemon's interval.
    #[arg(long, default_value = "1s", value_parser = Interval::period)]
    pub interval: Duration,
    /// One access in this many is published to the daemon.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample_every: u32,
    /// Seed of the permutation and the reads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cache lines of each 4 KiB page the reads go to, a power of two from 1 to 64 (every
    /// line); they start at an offset that moves from page to page, so they fill every cache
    /// set. With 1 the hot chunks' data fits the caches while their pages overflow the TLB:
    /// records a page apart whose headers alone are read, where walks of 4 KiB page tables
    /// are the reads' cost [default: 64].
    #[arg(long, value_name = "LINES")]
    pub lines_per_page: Option<u32>,
    /// Make each read's address wait for the word read before it, as a pointer chase or a
    /// traversal does: a page walk then cannot overlap other reads, and its whole latency is
    /// the read's. The addresses are the same as without it.
    #[arg(long)]
    pub chase: bool,
    /// Run every arm of a round on the same physical pages: the region is faulted with 4 KiB
    /// pages and collapsed whole, then split in place from arm to arm (ideal, plan, base, then
    /// the daemon from 4 KiB pages). Arms then differ in their page tables only, not in where
    /// their memory landed, which in a virtual machine decides how the host maps it; the
    /// order within a round is fixed.
    #[arg(long)]
    pub same_frames: bool,
    /// Fault each arm's region chunk by chunk, coldest first, as a program that fills its bulk
    /// data before its hot index. Where huge pages are scarce (under `hugewise env with
    /// --pressure-leave … --fragment …`), the ideal arm is then Linux THP at fault spending
    /// them on cold chunks, against the plan and the daemon choosing hot ones; its huge share
    /// says what the kernel gave.
    #[arg(long, conflicts_with = "same_frames")]
    pub cold_first: bool,
    /// Run even when the region is larger than the memory available; only sensible with swap
    /// to spare.
    #[arg(long)]
    pub force: bool,
    /// When the daemon arm compacts memory for collapses refused for want of free 2 MiB
    /// blocks (as `hugewise promote --compact`); its compactions and their CPU share are
    /// saved with the result.
    #[arg(long, value_enum, default_value = "auto")]
    pub compact: crate::cli::promote::CompactArg,
    /// The daemon arm's pacing: most of the workload's page faults its collapses may hold up,
    /// as a share of those taken (as `hugewise promote --fault-waits`); 100% never waits.
    #[arg(long, default_value = "0.02%", value_name = "SHARE",
          value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub fault_waits: Share,
    /// What the daemon arm takes a page walk that a huge page removes to cost, in nanoseconds
    /// (as `hugewise promote --walk-ns`): below what it saves a chunk stays on 4 KiB pages.
    #[arg(long, default_value_t = 30.0, value_name = "NS",
          value_parser = crate::cli::promote::walk_ns)]
    pub walk_ns: f64,
    /// Collapse onto whatever page the kernel gives, without first faulting one in: a
    /// collapse then pays for backing its new page while the target waits (see
    /// `hugewise promote --help`).
    #[arg(long)]
    pub no_warm: bool,
    /// The nice value the daemon arm's thread gives way with, 0 to 19 (as `hugewise promote
    /// --nice`).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = crate::cli::promote::nice)]
    pub nice: i32,
    /// Run every round's arms a second time with memory held until this much is available
    /// (as `hugewise env with --pressure-leave`), made before the round's shaped arms and
    /// given back after them: each workload then has a second entry, on the shaped machine,
    /// whose speedups are set against the unshaped ones round by round. Doubles the runs
    /// (the no-gain workload's too: name --workload hotspot to keep to one). Root only.
    #[arg(long, value_name = "BYTES")]
    pub shape_pressure_leave: Option<Bytes>,
    /// Run every round's arms a second time with this share of free memory broken by
    /// unmovable pages (as `hugewise env with --fragment`, with its two settings that keep
    /// the pages where they are), with or without --shape-pressure-leave; at most 95%. Free
    /// memory the kernel has not yet put in its lists is put there once, before the first
    /// round (see docs/environment.md). Root only.
    #[arg(long, value_name = "PCT",
          value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub shape_fragment: Option<Share>,
    /// A graph kernel instead of Zipf reads: the graph as `hugewise run --graph` takes it
    /// (save a large one as .hwg first). Each arm is then a run in a process of its own.
    #[arg(long, value_name = "GRAPH", conflicts_with_all = ["workload", "zipf", "hotspot", "size", "reads", "seed", "lines_per_page", "chase", "same_frames", "cold_first", "force", "shape_pressure_leave", "shape_fragment"])]
    pub graph: Option<String>,
    /// With --graph: the kernel.
    #[arg(long, value_enum, default_value = "pr", requires = "graph")]
    pub kernel: KernelArg,
    /// With --graph: timed trials per run, after the run's untimed warm-up (sampled for the
    /// daemon, whose ramp happens in it if the warm-up lasts long enough) and, for the plan,
    /// one more trial in which its steps are made (in every arm, for a kernel whose trials
    /// start from different sources, so that all arms time the same ones).
    #[arg(long, default_value_t = 1, requires = "graph", value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: u32,
    /// With --graph: the plan to replay (from `hugewise sim --plan`, with a `pcc` plan at the
    /// budget). Without it, one is made first from a trace of the kernel (PageRank: one
    /// iteration) and kept in the work directory.
    #[arg(long, value_name = "FILE", requires = "graph")]
    pub plan: Option<PathBuf>,
    /// With --graph: where the plan, its trace (removed once simulated) and the arms' result
    /// files go.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "bench-promote.work",
        requires = "graph"
    )]
    pub work_dir: PathBuf,
    /// With --graph: threads of every arm's run [default: one per CPU], and streams of the
    /// plan's trace [default: 1].
    #[arg(long, requires = "graph", value_parser = Threads::count)]
    pub threads: Option<usize>,
    /// With --graph: the kernel's settings, as `hugewise run` takes them.
    #[command(flatten)]
    pub settings: KernelSettings,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// A named workload of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadArg {
    /// 99.9 % of dependent reads, one line of each page, on 3.9 % of the chunks.
    Hotspot,
    /// Dependent reads over 256 KiB with arithmetic between them: no gain to find.
    Nogain,
    /// Zipf reads with exponent 1, shaped by --lines-per-page and --chase.
    Zipf,
}

/// Run `hugewise bench promote`.
pub fn run(a: BenchPromoteArgs, progress: Mode) -> anyhow::Result<()> {
    let cancel = &*cancel_flag()?;
    if let Some(graph) = a.graph.clone() {
        return bench_graph(a, graph, progress, cancel);
    }
    let named: Vec<_> = a
        .workload
        .iter()
        .map(|&w| name(w).parse())
        .collect::<Result<_, _>>()?;
    let reads = Reads {
        lines_per_page: a.lines_per_page,
        chase: a.chase,
    };
    let cfg = bench::driver::Config {
        bytes: a.size,
        workloads: workloads(&named, &a.zipf, &a.hotspot, reads)?,
        reads: a.reads.0,
        rounds: a.rounds,
        until: a.until.until(),
        budget_share: a.budget.share_of(a.size.0),
        interval: a.interval,
        sample_every: a.sample_every,
        seed: a.seed,
        same_frames: a.same_frames,
        cold_first: a.cold_first,
        force: a.force,
        compact: name(a.compact).parse()?,
        fault_waits: a.fault_waits.fraction(),
        warm: !a.no_warm,
        walk_ns: a.walk_ns,
        nice: a.nice,
        shape: (a.shape_pressure_leave.is_some() || a.shape_fragment.is_some()).then(|| {
            bench::shape::Shape {
                pressure_leave: a.shape_pressure_leave.map(|b| b.0),
                fragment: a.shape_fragment.map(|f| f.fraction()),
            }
        }),
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = bench::driver::run(&cfg, cancel, &mut |done, total| steps.update(done, total))
        .context("promotion benchmark")?;
    steps.finish();
    a.output
        .emit_as(r, a.markdown, view::bench, view::bench_markdown)
}

/// `hugewise bench promote --graph`: the four arms on a graph kernel.
fn bench_graph(
    a: BenchPromoteArgs,
    graph: String,
    progress: Mode,
    cancel: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<()> {
    let Some(budget_share) = a.budget.share() else {
        anyhow::bail!(
            "--budget: with --graph the budget is a share of the run's footprint (4%), not a size"
        );
    };
    let cfg = hugewise_bench::promote::graph::Config {
        exe: std::env::current_exe().context("finding the hugewise binary the arms run")?,
        kernel: a.settings.spec(a.kernel)?,
        graph,
        // As `hugewise run --graph` loads it by default (its --seed is 1).
        load: LoadOptions::for_kernel(1),
        threads: a.threads,
        sources: a.settings.source.clone(),
        trials: a.trials,
        rounds: a.rounds,
        until: a.until.until(),
        budget_share,
        interval: a.interval,
        sample_every: a.sample_every,
        plan: a.plan,
        work_dir: a.work_dir,
        compact: name(a.compact).parse()?,
        fault_waits: a.fault_waits.fraction(),
        warm: !a.no_warm,
        walk_ns: a.walk_ns,
        nice: a.nice,
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let w = hugewise_bench::promote::graph::run(&cfg, cancel, &mut |done, total| {
        steps.update(done, total)
    })
    .context("promotion benchmark on a graph kernel")?;
    steps.finish();
    let r = hugewise_results::promote::PromoteBenchReport {
        workloads: vec![w],
        stopped: None,
    };
    a.output
        .emit_as(r, a.markdown, view::bench, view::bench_markdown)
}
