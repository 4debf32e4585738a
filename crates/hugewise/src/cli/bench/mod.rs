//! `hugewise bench`: the benchmarks whose numbers go into BENCHMARKS.md, one file each.

use clap::Subcommand;

use hugewise_console::progress::Mode;

pub mod bloat;
pub mod exec;
pub mod faultlat;
pub mod gap;
pub mod packing;
pub mod pages;
pub mod promote;
pub mod randread;

/// `hugewise bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Random 8-byte reads over one region: base vs thp vs base-then-collapsed.
    #[command(after_help = "Examples:
  hugewise bench randread                          4 GiB, 5 rounds (about a minute)
  hugewise bench randread --size 1GiB --rounds 3   a quicker look
  hugewise bench randread --markdown               a table for BENCHMARKS.md
  hugewise bench randread --rounds 6 --until 4%    rounds until each interval is within 4 %

Each round creates each variant's region afresh and populates it before timing, checks that
other processes are idle, warms up, then times the reads. The speedup is the median over
rounds of base/variant measured in the same round, with its 95 % interval (order statistics
of the per-round ratios; 6 rounds at least).")]
    Randread(randread::RandreadArgs),

    /// Page faults of a fresh region alone and with the daemon collapsing it beside them
    /// (paced by the faults, and unpaced), alternated: the p99.9 fault's ratio with its interval.
    #[command(after_help = faultlat::HELP)]
    Faultlat(faultlat::BenchFaultlatArgs),

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
A variant with graph:PAGES or reorder:METHOD runs on its own copy of the graph, built from
the loaded one before timing (sources are the same vertices, renamed): all of them at the
start where they fit memory together, otherwise each when its variant's turn comes, the one
before freed (--copies). The first
--compare is the baseline. Each round runs every variant once from the same sources, in
alternating order, after checking the machine is quiet.")]
    Pages(pages::PagesArgs),

    /// A skewed random-read workload (or a graph kernel, --graph) with 4 KiB pages, all huge,
    /// a replayed plan and the online daemon within a budget, alternated round by round.
    #[command(after_help = promote::HELP)]
    Promote(Box<promote::BenchPromoteArgs>),

    /// A program hugewise did not write, under several page rules and without hugewise,
    /// alternated round by round: wall time, speedup and huge bytes spent.
    #[command(after_help = exec::HELP)]
    Exec(exec::BenchExecArgs),

    /// Memory bloat on a real Redis server (MEGA's pattern): filled, read, partly emptied and
    /// filled again under THP never, madvise, always and under hugewise exec's rules.
    #[command(after_help = bloat::HELP)]
    Bloat(bloat::BenchBloatArgs),

    /// Packing (the thesis): a program profiled, then its hot call sites' small objects packed
    /// into a hot arena of huge pages, against 4 KiB pages only and THP for everything,
    /// alternated: speedup and huge bytes spent.
    #[command(after_help = packing::HELP)]
    Packing(packing::BenchPackingArgs),

    /// The GAP suite's own binaries (your build) against hugewise's kernels on one graph file,
    /// same threads and sources, alternated: per kernel the median time ratio and its interval.
    #[command(after_help = gap::HELP)]
    Gap(gap::BenchGapArgs),
}

/// Run one benchmark.
pub fn run(cmd: BenchCommand, progress: Mode) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Randread(a) => randread::run(a, progress),
        BenchCommand::Faultlat(a) => faultlat::run(a, progress),
        BenchCommand::Pages(a) => pages::run(a, progress),
        BenchCommand::Promote(a) => promote::run(*a, progress),
        BenchCommand::Exec(a) => exec::run(a, progress),
        BenchCommand::Bloat(a) => bloat::run(a, progress),
        BenchCommand::Packing(a) => packing::run(a, progress),
        BenchCommand::Gap(a) => gap::run(a, progress),
    }
}
