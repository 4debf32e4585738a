//! Command-line definitions. Only clap types live here; the libraries get plain values.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hugewise_graph::cache::Cache;
use hugewise_graph::fits::{Fit, KERNEL_VERTEX_BYTES};
use hugewise_graph::kernels::Spec;
use hugewise_graph::layout::ALL_REGIONS;
use hugewise_graph::load::{Input, LoadOptions};
use hugewise_graph::reorder::Method;
use hugewise_graph::Layout;
use hugewise_mem::{AllocOrder, Bytes, PagePolicy, PolicyMap};
use hugewise_sim::grammar::parse_calibration;
use hugewise_sim::{Budgets, PolicyList};
use hugewise_study::pagebench::Variant;
use hugewise_trace::meta::Calibration;

pub use crate::output::Output;

const EXIT_CODES: &str = "\
Exit codes:
  0  success (also when the reader of stdout closed the pipe early)
  1  the work failed: the message says why (kernel refused, file unwritable, ...)
  2  the command line is wrong
  128 + N  signal N stopped the work (Ctrl-C: 130, SIGTERM: 143), after putting back what it
     had changed; whatever a program it ran then reported";

/// hugewise gives huge pages to the memory that pays for them, and proves it.
#[derive(Debug, Parser)]
#[command(name = "hugewise", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print no progress bars.
    #[arg(long, global = true)]
    pub no_progress: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what this machine offers for huge pages: THP modes, hugetlb pools, free 2 MiB
    /// blocks, fragmentation, counters, and which kernel features work here.
    #[command(after_help = "Examples:
  hugewise sys                 readable report
  hugewise sys --json          the same as JSON, for scripts
  hugewise sys --out sys.json  save it (written atomically)")]
    Sys(SysArgs),

    /// Touch a fresh region page by page and record each page fault's latency.
    #[command(after_help = "Examples:
  hugewise faultlat --size 1GiB --policy base          4 KiB faults
  hugewise faultlat --size 1GiB --policy thp           2 MiB THP faults (one per 512 touches)
  hugewise faultlat --size 1GiB --policy base --then-collapse
                         fault as 4 KiB, then MADV_COLLAPSE each 2 MiB piece, timed apart
  hugewise faultlat --size 256MiB --policy hugetlb-2m  needs a hugetlb pool

A touch counts as a fault only when the kernel's fault counter moved, so THP runs report
one fault per huge page. Latencies include the timer overhead, which is reported.")]
    Faultlat(FaultlatArgs),

    /// Run a graph kernel with a page policy per array, timed apart from loading, verified,
    /// with each array's real backing.
    #[command(after_help = "Examples:
  hugewise run bfs --graph kron:20 --verify
  hugewise run bfs --graph kron:24 --pages all=base,property=thp --alloc-order property-first
  hugewise run bfs --graph kron:24 --reorder dbg --pages all=base,property=thp-prefix:5%
  hugewise run pr --graph k22.hwg --reorder dbg --memory 50% --pages all=base,property=thp-prefix:20%+lock
  hugewise run pr --graph k24.hwg --reorder dbg   (again: reads the reordered graph kept by the first run)
  hugewise run bfs --graph data/cnr-2000.el.zst --mode top-down --trials 10
  hugewise run sssp --graph kron:20 --delta 2 --verify     (generators draw weights 1..255)
  hugewise run sssp --graph road:1000x1000 --verify        (weights in metres, delta chosen)
  hugewise run pr --graph g.sg --mode push --tolerance 1e-6
  hugewise run cc --graph urand:20 --mode sv
  hugewise run bc --graph kron:18 --sources 4 --trials 3
  hugewise run bfs --graph g.sg --source 0 --source 42 --trials 4   (the same starts as GAP's -r)
  hugewise run tc --graph g.el --symmetrize
  hugewise run bfs --graph g.sg --pages all=thp --threads 2 --json

Defaults are the GAP suite's benchmark settings: bfs direction-optimizing, pr pull with
tolerance 1e-4 and at most 1000 iterations, cc Afforest, bc 4 sources a trial; sssp chooses its
bucket width from the graph (mean weight / (2 x mean degree), doubled while rounds do little
work; the result says which and why), where GAP takes one per graph (2 on kron and urand).

Arrays: offsets, edges, weights, in-offsets, in-edges (the graph), property, frontier (the
kernel's). --pages takes <array>=<policy> pairs; all=<policy> sets the rest. Policies: system,
base, thp, thp-prefix:<size|%>, hugetlb-2m, hugetlb-1g; +lock after one locks the array in
memory (the huge prefix only, for thp-prefix), so that under --memory the rest swaps first.")]
    Run(RunArgs),

    /// Record every data access of a graph kernel into a .hwt trace (or import Valgrind lackey
    /// output), for `hugewise sim`.
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = "Examples:
  hugewise trace bfs --graph kron:20 --out bfs.hwt
  hugewise trace bfs --graph kron:24 --reorder dbg --mode top-down --out bfs-dbg.hwt
  hugewise trace bfs --graph kron:20 --calibrate 5 --out bfs.hwt   (times for sim's estimate)
  hugewise trace pr --graph kron:20 --threads 2 --out pr-2t.hwt      (one stream per thread)
  hugewise trace pr --graph data/cnr-2000.el.zst --max-iters 2 --out pr.hwt
  hugewise trace lackey lackey.txt --out prog.hwt
  valgrind --tool=lackey --trace-mem=yes --log-fd=1 ./prog | hugewise trace lackey - --out prog.hwt

The traced kernel is `hugewise run`'s own (one body, traced or not; bfs is direction-optimizing
unless --mode top-down), verified like it: on one thread by default, so that the trace is the
same on every run; with --threads N it runs in a pool of N threads, as `run --threads N` does,
and each thread records its own stream. The trace
starts with one store per 4 KiB page of every array in allocation order (what loading did, in
the first stream), then the kernel's accesses in program order. Untraced
runs of the same code give the simulator its clock; they are saved beside the trace in
<trace>.json. With --calibrate, runs on 4 KiB pages and on THP are saved there too, and
`hugewise sim` fits its speedup estimate to them."
    )]
    Trace(TraceArgs),

    /// Simulate TLBs and promotion policies over a trace: utility curves (walks and estimated
    /// speedup per share of memory promoted), promotion plans, reuse distance.
    #[command(args_conflicts_with_subcommands = true, after_help = crate::cli::SIM_HELP)]
    Sim(SimArgs),

    /// Render saved results: one file as the command printed it, or files and study
    /// directories (merged across machines) as one report: HTML with charts, Markdown, CSV.
    #[command(after_help = crate::reportcmd::HELP)]
    Report(ReportArgs),

    /// Make, convert and describe graphs.
    #[command(subcommand)]
    Graph(GraphCommand),

    /// Give huge pages to a running program: replay a promotion plan, or run the online daemon
    /// within a budget, on an unmodified kernel.
    #[command(after_help = crate::promotecmd::HELP)]
    Promote(crate::promotecmd::PromoteArgs),

    /// Benchmarks whose numbers go into BENCHMARKS.md.
    #[command(subcommand)]
    Bench(BenchCommand),

    /// Shape this machine as real servers are (THP modes, hugetlb pools, memory pressure,
    /// fragmentation, cgroup limits, swap), and always put it back.
    #[command(subcommand, after_help = crate::envcli::HELP)]
    Env(crate::envcli::EnvCommand),

    /// Answer one question with one command: a preset expanded into runs (kernel × graph ×
    /// page layout × machine shape), alternated, repeated, saved as they finish, summed up in
    /// headlines against the seed papers' numbers and a report.
    #[command(after_help = crate::studycmd::help())]
    Study(crate::studycmd::StudyArgs),

    /// Run a program hugewise did not write with page rules for its large allocations, and
    /// see which became huge: each allocation above a size gets a 2 MiB-aligned mapping of its
    /// own with the policy its rule says, and its backing is read from the kernel as it runs.
    #[command(after_help = crate::execcmd::HELP)]
    Exec(crate::execcmd::ExecArgs),

    /// Find which call sites of a program use their memory hot, and write a placement that
    /// packs their small objects into a hot arena of huge pages (for `exec --placement`):
    /// one run with an arena per call site, whose accessed pages are counted as it runs.
    #[command(after_help = crate::profilecmd::HELP)]
    Profile(crate::profilecmd::ProfileArgs),
}

/// `hugewise report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Saved results (any command's --out FILE) or directories of them (a study's --out DIR,
    /// with its runs/ folder).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Write the report to FILE (atomically) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// text, md, csv or html [default: html when --out ends in .html, else text].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,
    /// One file's Markdown table (bench pages, bench randread, bench promote), as before
    /// --format existed; with several paths, the same as --format md.
    #[arg(long, conflicts_with = "format")]
    pub markdown: bool,
}

/// What `hugewise report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Terminal tables, as the commands print them.
    Text,
    /// Markdown: headlines and tables.
    Md,
    /// CSV: one row per bench pages layout per run.
    Csv,
    /// One self-contained HTML page with charts.
    Html,
}

/// `hugewise sys`.
#[derive(Debug, Args)]
pub struct SysArgs {
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

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

/// `hugewise bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Random 8-byte reads over one region: base vs thp vs base-then-collapsed.
    #[command(after_help = "Examples:
  hugewise bench randread                          4 GiB, 5 rounds (about a minute)
  hugewise bench randread --size 1GiB --rounds 3   a quicker look
  hugewise bench randread --markdown               a table for BENCHMARKS.md

Each round creates each variant's region afresh and populates it before timing, checks that
other processes are idle, warms up, then times the reads. The speedup is the median over
rounds of base/variant measured in the same round.")]
    Randread(RandreadArgs),

    /// One graph kernel under several page layouts of its own arrays, alternated round by
    /// round on one loaded graph: the speedup huge pages give, as a ratio within each round.
    #[command(after_help = "Examples:
  hugewise bench pages bfs --graph kron:24            property=base vs property=thp
  hugewise bench pages pr --graph g.hwg --compare all=base --compare property=thp-prefix:5%
  hugewise bench pages bfs --graph kron:24 --rounds 7 --markdown
  hugewise bench pages bfs --graph kron:22 --compare 'all=base;name:4 KiB' \
      --compare 'all=thp;graph:all=thp;name:ideal' \
      --compare 'property=thp-prefix:3%;reorder:dbg;name:DBG + hot 3%'

The graph's arrays take --graph-pages (all=base by default) and are shared by every variant;
each --compare sets the kernel's arrays (property, frontier) and gets its own copy of them.
A variant with graph:PAGES or reorder:METHOD runs on its own copy of the graph, built once
from the loaded one before timing (sources are the same vertices, renamed). The first
--compare is the baseline. Each round runs every variant once from the same sources, in
alternating order, after checking the machine is quiet.")]
    Pages(PagesArgs),

    /// A skewed random-read workload (or a graph kernel, --graph) with 4 KiB pages, all huge,
    /// a replayed plan and the online daemon within a budget, alternated round by round.
    #[command(after_help = crate::promotecmd::BENCH_HELP)]
    Promote(crate::promotecmd::BenchPromoteArgs),

    /// A program hugewise did not write, under several page rules and without hugewise,
    /// alternated round by round: wall time, speedup and huge bytes spent.
    #[command(after_help = crate::execcmd::BENCH_HELP)]
    Exec(crate::execcmd::BenchExecArgs),

    /// Memory bloat on a real Redis server (MEGA's pattern): filled, read, partly emptied and
    /// filled again under THP never, madvise, always and under hugewise exec's rules.
    #[command(after_help = crate::execcmd::BLOAT_HELP)]
    Bloat(crate::execcmd::BenchBloatArgs),

    /// Packing (the thesis): a program profiled, then its hot call sites' small objects packed
    /// into a hot arena of huge pages, against 4 KiB pages only and THP for everything,
    /// alternated: speedup and huge bytes spent.
    #[command(after_help = crate::profilecmd::BENCH_HELP)]
    Packing(crate::profilecmd::BenchPackingArgs),
}

/// `hugewise bench pages`.
#[derive(Debug, Args)]
pub struct PagesArgs {
    /// Kernel.
    #[arg(value_enum)]
    pub kernel: KernelArg,
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Page policies of the graph's arrays, shared by every variant.
    #[arg(long, default_value = "all=base", value_parser = parse_pages)]
    pub graph_pages: PolicyMap,
    /// A layout of the kernel's arrays (property, frontier); give two or more, baseline
    /// first [default: all=base and all=base,property=thp].
    /// Also `PAGES;graph:PAGES;reorder:dbg;name:NAME` for a variant with its own copy of the
    /// graph (other page policies for its arrays, or reordered vertices), built once.
    #[arg(long = "compare", value_name = "PAGES", value_parser = parse_variant)]
    pub compare: Vec<Variant>,
    /// Rounds; each runs every variant once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Worker threads, 1 or more (default: one per CPU).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub cache: ReorderCacheArg,
    /// Print a Markdown table instead of the terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `hugewise bench randread`.
#[derive(Debug, Args)]
pub struct RandreadArgs {
    /// Region size.
    #[arg(long, default_value = "4GiB", allow_negative_numbers = true)]
    pub size: Bytes,
    /// Timed reads per sample (k/M/G suffixes are decimal: 20M = 20 000 000).
    #[arg(long, default_value = "20M", value_parser = parse_count)]
    pub reads: u64,
    /// Rounds; each runs every variant once, alternated.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
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

/// Kernels `hugewise run` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelArg {
    /// Breadth-first search (parent tree).
    Bfs,
    /// Single-source shortest paths, delta-stepping (weighted).
    Sssp,
    /// PageRank.
    Pr,
    /// Connected components.
    Cc,
    /// Betweenness centrality, Brandes.
    Bc,
    /// Triangle counting (undirected).
    Tc,
}

impl KernelArg {
    /// The kernel with the GAP suite's benchmark settings.
    pub fn spec(self) -> Spec {
        hugewise_graph::settings::KernelSettings::default()
            .spec(self.name())
            .unwrap_or_else(|e| unreachable!("every kernel argument is a kernel: {e}"))
    }

    /// The kernel's name, as the libraries spell it.
    pub fn name(self) -> &'static str {
        match self {
            KernelArg::Bfs => "bfs",
            KernelArg::Sssp => "sssp",
            KernelArg::Pr => "pr",
            KernelArg::Cc => "cc",
            KernelArg::Bc => "bc",
            KernelArg::Tc => "tc",
        }
    }
}

/// How a graph is read or generated.
#[derive(Debug, Args)]
pub struct GraphInputArgs {
    /// kron:SCALE or kron:SCALE:EDGE_FACTOR (likewise urand); a shape: grid:WxH, road:WxH,
    /// chain:N, star:LEAVES; or a file: .el, .wel, .mtx (optionally .gz/.zst), .sg, .wsg, .hwg.
    #[arg(long, default_value = "kron:16", value_parser = parse_input)]
    pub graph: Input,
    /// Seed for generators and source picking.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Give the graph weights: generators draw them (in [1, 255]; grid and road in metres,
    /// [1, 100000]), unweighted files get a hash of each edge's ends in [1, 255] (sssp does
    /// this by itself).
    #[arg(long)]
    pub weighted: bool,
    /// Make a text edge list undirected (generators are; GAP files say themselves).
    #[arg(long)]
    pub symmetrize: bool,
    /// Load even when the graph needs more memory than is available (MemAvailable and the
    /// memory cgroup's limit); only sensible with swap to spare.
    #[arg(long)]
    pub force: bool,
}

impl GraphInputArgs {
    /// How the libraries load the graph.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            seed: self.seed,
            weighted: self.weighted,
            symmetrize: self.symmetrize,
            fit: Fit {
                force: self.force,
                ..Fit::default()
            },
        }
    }

    /// Load options for a kernel run: the size check also counts the kernel's arrays.
    pub fn kernel_load_options(&self) -> LoadOptions {
        let mut o = self.load_options();
        o.fit.vertex_extra_bytes = KERNEL_VERTEX_BYTES;
        o
    }
}

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
    #[arg(long, conflicts_with = "overcommit", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Threads as a multiple of the CPUs, 1 or more (e.g. 4 runs 4 threads per CPU), or
    /// `auto`: chosen trial by trial (doubled from 1 while it pays), recorded with its reasons.
    #[arg(long, value_name = "N|auto", value_parser = parse_overcommit)]
    pub overcommit: Option<Overcommit>,
    /// Sample telemetry over the trials (CPU split, faults, swap traffic, the swap device's
    /// queue, the memory cgroup) every INTERVAL (default 100ms) into the result.
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = "100ms",
          value_parser = parse_interval)]
    pub telemetry: Option<std::time::Duration>,
    /// Hold the trials to this share of the run's footprint (graph and kernel arrays) in a
    /// memory cgroup, with swap; the graph is loaded outside the limit first (e.g. 30%).
    #[arg(long, value_name = "SHARE", value_parser = parse_share)]
    pub memory: Option<f64>,
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
    pub swap_file: std::path::PathBuf,
    /// Swap readahead for the run, 2^N pages (`vm.page-cluster`, put back afterwards).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=31))]
    pub page_cluster: Option<u32>,
    /// With --memory: every INTERVAL (50ms, 0.2s) the command holding the limit reads the
    /// cgroup's memory.stat, which makes the kernel flush the cgroup's statistics. On cgroup v1
    /// a run with a +lock prefix at 65 % was OOM-killed with swap to spare in 8 of 22 runs with
    /// `off`, none of 22 with 50ms. About 0.15 ms a read, recorded as memory.stats_flush;
    /// `off` is there to compare.
    #[arg(long, value_name = "INTERVAL|off", default_value = "50ms", requires = "memory",
          value_parser = parse_stats_flush)]
    pub stats_flush: FlushInterval,
    /// Internal: the run's supervisor holds the machine's changes and talks on stdin/stdout.
    #[arg(long, hide = true)]
    pub contained: bool,
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
    #[arg(long, value_name = "SHARE", requires = "promote", value_parser = parse_plan_share)]
    pub plan_budget: Option<f64>,
    /// Kernel settings.
    #[command(flatten)]
    pub settings: KernelSettings,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

impl PagesArgs {
    /// The layouts to compare, baseline first, or a usage error.
    pub fn variants(&self) -> Result<Vec<Variant>, String> {
        match self.compare.len() {
            0 => ["all=base", "all=base,property=thp"]
                .iter()
                .map(|s| parse_variant(s))
                .collect(),
            1 => Err("give --compare twice or more: a baseline and what to compare with it".into()),
            _ => Ok(self.compare.clone()),
        }
    }
}

/// Page policies, allocation order and vertex order, shared by `run` and `trace`.
#[derive(Debug, Args)]
pub struct Placement {
    /// Page policy per array, e.g. all=base,property=thp-prefix:2% (+lock after a policy locks
    /// that part in memory).
    #[arg(long, default_value = "all=system", value_parser = parse_pages)]
    pub pages: PolicyMap,
    /// Which arrays are faulted in first: natural, ARRAY-first, or a list.
    #[arg(long, default_value = "natural", value_parser = parse_order)]
    pub alloc_order: AllocOrder,
    /// Reorder vertices after loading, hot first: dbg, degree-sort, hub-sort, hub-cluster,
    /// random. Timed apart; sources stay the same original vertices.
    #[arg(long, value_name = "METHOD", value_parser = parse_reorder)]
    pub reorder: Option<Method>,
    #[command(flatten)]
    pub cache: ReorderCacheArg,
}

impl Placement {
    /// The layout these flags ask for.
    pub fn layout(&self) -> Layout {
        Layout {
            pages: self.pages.clone(),
            order: self.alloc_order.clone(),
        }
    }
}

/// Where reordered graphs are kept, shared by `run`, `trace` and `bench pages`.
#[derive(Debug, Args)]
pub struct ReorderCacheArg {
    /// Where a reordered graph file is kept (2 GiB at kron:24), so that the next run of the
    /// same file with the same reordering reads it at the speed of a load instead of
    /// relabelling again (several loads' time); `off` keeps nothing. Files only, of 256 MiB of
    /// arrays or more, while 4 GiB stay free on the disk; a changed file is relabelled anew.
    /// [default: $HUGEWISE_CACHE_DIR, else $XDG_CACHE_HOME/hugewise, else ~/.cache/hugewise]
    #[arg(long, value_name = "DIR|off")]
    pub reorder_cache: Option<PathBuf>,
}

impl ReorderCacheArg {
    /// The cache these flags and the environment ask for, if any.
    pub fn cache(&self) -> Option<Cache> {
        let dir = match &self.reorder_cache {
            Some(d) if d.as_os_str() == "off" => return None,
            Some(d) => d.clone(),
            None => default_cache_dir()?,
        };
        Some(Cache::new(dir))
    }
}

/// `$HUGEWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/hugewise`, else `$HOME/.cache/hugewise`.
fn default_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HUGEWISE_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("hugewise")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("hugewise")))
}

/// A kernel's settings, shared by `run` and `trace`.
#[derive(Debug, Args)]
pub struct KernelSettings {
    /// Variant: bfs do|top-down (default do); pr pull|push (default pull); cc afforest|sv
    /// (default afforest).
    #[arg(long)]
    pub mode: Option<String>,
    /// sssp: bucket width of delta-stepping [default: chosen from the graph's weights and
    /// degrees, and widened while rounds do little work].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub delta: Option<u32>,
    /// pr: stop when the scores' total change in an iteration is below this [default: 1e-4].
    #[arg(long)]
    pub tolerance: Option<f64>,
    /// pr: iteration cap [default: 1000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iters: Option<u32>,
    /// bc: sources per trial [default: 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub sources: Option<u32>,
    /// bfs, sssp, bc: start from this vertex (the input's id); repeat for several, used in turn
    /// across trials (GAP's -r). Default: random vertices with edges, from --seed.
    #[arg(long = "source", value_name = "VERTEX")]
    pub source: Vec<u32>,
}

impl KernelSettings {
    /// The same settings for the graph library, which checks them against the kernel.
    pub fn to_settings(&self) -> hugewise_graph::settings::KernelSettings {
        hugewise_graph::settings::KernelSettings {
            mode: self.mode.clone(),
            delta: self.delta,
            tolerance: self.tolerance,
            max_iters: self.max_iters,
            sources: self.sources,
            start: self.source.clone(),
        }
    }
}

/// `hugewise sim --help` epilogue.
pub const SIM_HELP: &str = "Examples:
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

/// `hugewise graph ...`.
#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Generate a graph (kron:SCALE, urand:SCALE, grid:WxH, road:WxH, chain:N, star:N) and
    /// save it: hugewise's binary CSR (.hwg, the fastest to load) or the GAP suite's format
    /// (.sg, or .wsg when weighted).
    #[command(after_help = "Examples:
  hugewise graph gen --graph kron:24 --out kron24.hwg
  hugewise graph gen --graph urand:20 --weighted --out urand20.wsg     (GAP's sssp reads it)
  hugewise graph gen --graph road:1000x1000 --weighted --out road.wsg  (weights in metres)
  hugewise graph gen --graph kron:20 --reorder dbg --out kron20-dbg.hwg --json

Any input `graph convert` takes works here too; the two differ in name only.")]
    Gen(ConvertArgs),
    /// Convert a graph file (or a generated graph) and save it: hugewise's binary CSR (.hwg,
    /// the fastest to load) or the GAP suite's format (.sg, or .wsg when weighted).
    #[command(after_help = "Examples:
  hugewise graph convert --graph kron:20 --out kron20.sg          (GAP's programs read it)
  hugewise graph convert --graph kron:20 --weighted --out kron20.wsg
  hugewise graph convert --graph data/cnr-2000.el.zst --out cnr.hwg
  hugewise graph convert --graph web.mtx --reorder dbg --out web-dbg.hwg
  hugewise graph convert --graph g.el --out g.hwg --json > g-convert.json

The text or --json result (what was written, load and write times) goes to stdout;
`hugewise report` renders a saved --json result.")]
    Convert(ConvertArgs),
    /// Load a graph and describe it: vertices, edges, degrees, bytes per array.
    #[command(after_help = "Examples:
  hugewise graph info --graph kron:20
  hugewise graph info --graph data/cnr-2000.el.zst")]
    Info(InfoArgs),
}

/// `hugewise graph gen|convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Reorder the vertices before saving (see `hugewise run --help`).
    #[arg(long, value_name = "METHOD", value_parser = parse_reorder)]
    pub reorder: Option<Method>,
    /// Output file: .hwg, .sg, or .wsg for weighted graphs; written atomically.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Print the result (what was written, and how long it took) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hugewise graph info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Graph.
    #[command(flatten)]
    pub input: GraphInputArgs,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

fn parse_input(s: &str) -> Result<Input, String> {
    Input::parse(s).map_err(|e| e.to_string())
}

fn parse_reorder(s: &str) -> Result<Method, String> {
    s.parse().map_err(|e: hugewise_graph::Error| e.to_string())
}

/// A layout to compare: the kernel's arrays, optionally on a copy of the graph of its own.
fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::parse(s).map_err(|e| e.to_string())
}

fn parse_pages(s: &str) -> Result<PolicyMap, String> {
    PolicyMap::parse(s, ALL_REGIONS).map_err(|e| e.to_string())
}

fn parse_order(s: &str) -> Result<AllocOrder, String> {
    AllocOrder::parse(s, ALL_REGIONS).map_err(|e| e.to_string())
}

/// A plan's budget: a share of the footprint such as `4%`, as 0..=1.
fn parse_plan_share(s: &str) -> Result<f64, String> {
    let v = s.trim().strip_suffix('%').unwrap_or(s.trim());
    match v.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "'{s}': a share of the footprint from 0% to 100%, such as 4%"
        )),
    }
}

/// A thread count: 1 or more.
/// `--overcommit`: a factor or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overcommit {
    /// Threads = CPUs × this.
    Factor(u32),
    /// Chosen while running.
    Auto,
}

pub(crate) fn parse_overcommit(s: &str) -> Result<Overcommit, String> {
    match s.trim() {
        "auto" => Ok(Overcommit::Auto),
        t => match t.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Overcommit::Factor(n)),
            _ => Err(format!("'{s}': a factor of 1 or more, or auto")),
        },
    }
}

/// `--stats-flush`: an interval, or `None` for `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushInterval(pub Option<std::time::Duration>);

fn parse_stats_flush(s: &str) -> Result<FlushInterval, String> {
    match s.trim() {
        "off" => Ok(FlushInterval(None)),
        other => parse_interval(other)
            .map(|d| FlushInterval(Some(d)))
            .map_err(|e| format!("{e}, or off")),
    }
}

/// `100ms`, `0.5s`, `2s`.
pub(crate) fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let d = match s.trim().strip_suffix("ms") {
        Some(ms) => ms
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0 && v.is_finite())
            .map(|v| std::time::Duration::from_secs_f64(v / 1e3))
            .ok_or_else(|| format!("'{s}': an interval such as 100ms or 0.5s"))?,
        None => crate::envcli::parse_duration(s)?,
    };
    if d < std::time::Duration::from_millis(1) {
        return Err(format!("'{s}': at least 1ms"));
    }
    Ok(d)
}

/// `30%` or `0.3`: a share in (0, 100 %].
pub(crate) fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{s}': a share such as 30% or 0.3"))?;
    if !(v > 0.0 && v <= 1.0) {
        return Err(format!("'{s}': a share above 0 and at most 100%"));
    }
    Ok(v)
}

pub(crate) fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 threads run nothing: give 1 or more (default: one per CPU)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a thread count (1 or more)")),
    }
}

/// A positive count with an optional decimal suffix: `1000`, `20M`, `1.5k`.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        Some((i, 'g' | 'G')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a count (e.g. 1000, 20M)"))?;
    let n = v * mult;
    if !(n >= 1.0 && n < u64::MAX as f64) {
        return Err(format!("'{s}' must be at least 1"));
    }
    Ok(n.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(parse_count("1000"), Ok(1000));
        assert_eq!(parse_count("20M"), Ok(20_000_000));
        assert_eq!(parse_count("1.5k"), Ok(1500));
        assert!(parse_count("0").is_err());
        assert!(parse_count("-5").is_err());
        assert!(parse_count("lots").is_err());
        assert_eq!(parse_threads("2"), Ok(2));
        assert!(parse_threads("0").expect_err("0").contains("1 or more"));
        assert!(parse_threads("-1").is_err());
    }

    #[test]
    fn stats_flush_is_an_interval_or_off() {
        let ms = std::time::Duration::from_millis;
        assert_eq!(parse_stats_flush("off"), Ok(FlushInterval(None)));
        assert_eq!(parse_stats_flush("20ms"), Ok(FlushInterval(Some(ms(20)))));
        let e = parse_stats_flush("often").expect_err("not an interval");
        assert!(e.ends_with("or off"), "{e}");
        let cli = Cli::try_parse_from(["hugewise", "run", "bfs", "--memory", "50%"]).expect("run");
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            r.stats_flush,
            FlushInterval(Some(hugewise_study::swap::STATS_FLUSH)),
            "the CLI's default is the supervisor's"
        );
        assert!(Cli::try_parse_from(["hugewise", "run", "bfs", "--stats-flush", "off"]).is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
