//! Command-line definitions: [`Cli`] and its [`Command`]s, one file per command holding its
//! arguments, help text and handler. A handler turns its arguments into a library's config,
//! calls it and prints the result; [`args`] holds what several commands share. No file here
//! imports this one.

use clap::{Parser, Subcommand};

pub mod args;
pub mod bench;
pub mod env;
pub mod exec;
pub mod faultlat;
pub mod graph;
pub mod profile;
pub mod promote;
pub mod report;
pub mod run;
pub mod sim;
pub mod study;
pub mod sys;
pub mod trace;
pub mod worker;

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
    Sys(sys::SysArgs),

    /// Touch a fresh region page by page and record each page fault's latency.
    #[command(after_help = "Examples:
  hugewise faultlat --size 1GiB --policy base          4 KiB faults
  hugewise faultlat --size 1GiB --policy thp           2 MiB THP faults (one per 512 touches)
  hugewise faultlat --size 1GiB --policy base --then-collapse
                         fault as 4 KiB, then MADV_COLLAPSE each 2 MiB piece, timed apart
  hugewise faultlat --size 256MiB --policy hugetlb-2m  needs a hugetlb pool

A touch counts as a fault only when the kernel's fault counter moved, so THP runs report
one fault per huge page. Latencies include the timer overhead, which is reported.")]
    Faultlat(faultlat::FaultlatArgs),

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
    Run(run::RunArgs),

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
    Trace(trace::TraceArgs),

    /// Simulate TLBs and promotion policies over a trace: utility curves (walks and estimated
    /// speedup per share of memory promoted), promotion plans, reuse distance.
    #[command(args_conflicts_with_subcommands = true, after_help = sim::HELP)]
    Sim(sim::SimArgs),

    /// Render saved results: one file as the command printed it, or files and study
    /// directories (merged across machines) as one report: HTML with charts, Markdown, CSV.
    #[command(after_help = report::HELP)]
    Report(report::ReportArgs),

    /// Make, convert and describe graphs.
    #[command(subcommand)]
    Graph(graph::GraphCommand),

    /// Give huge pages to a running program: replay a promotion plan, or run the online daemon
    /// within a budget, on an unmodified kernel.
    #[command(after_help = promote::HELP)]
    Promote(promote::PromoteArgs),

    /// Benchmarks whose numbers go into BENCHMARKS.md.
    #[command(subcommand)]
    Bench(bench::BenchCommand),

    /// Shape this machine as real servers are (THP modes, hugetlb pools, memory pressure,
    /// fragmentation, cgroup limits, swap), and always put it back.
    #[command(subcommand, after_help = env::HELP)]
    Env(env::EnvCommand),

    /// Answer one question with one command: a preset expanded into runs (kernel × graph ×
    /// page layout × machine shape), alternated, repeated, saved as they finish, summed up in
    /// headlines against the seed papers' numbers and a report.
    #[command(after_help = study::help())]
    Study(study::StudyArgs),

    /// Run a program hugewise did not write with page rules for its large allocations, and
    /// see which became huge: each allocation above a size gets a 2 MiB-aligned mapping of its
    /// own with the policy its rule says, and its backing is read from the kernel as it runs.
    #[command(after_help = exec::HELP)]
    Exec(exec::ExecArgs),

    /// Find which call sites of a program use their memory hot, and write a placement that
    /// packs their small objects into a hot arena of huge pages (for `exec --placement`):
    /// one run with an arena per call site, whose accessed pages are counted as it runs.
    #[command(after_help = profile::HELP)]
    Profile(profile::ProfileArgs),

    /// Serve one request of hugewise's own (a run under --memory, a benchmark's arm), read
    /// on stdin: started by hugewise itself, never by hand.
    #[command(name = hugewise_bench::worker::COMMAND, hide = true)]
    Worker,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn run_flushes_cgroup_statistics_as_often_as_the_supervisor_by_default() {
        let cli = Cli::try_parse_from(["hugewise", "run", "bfs", "--memory", "50%"]).expect("run");
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            r.stats_flush,
            hugewise_mem::IntervalOrOff(Some(hugewise_bench::run::memory::STATS_FLUSH)),
            "the CLI's default is the supervisor's"
        );
        // --stats-flush needs --memory.
        assert!(Cli::try_parse_from(["hugewise", "run", "bfs", "--stats-flush", "off"]).is_err());
    }
}
