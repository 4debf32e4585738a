//! `hugewise profile`: arguments and the call into hugewise-exec's profile.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hugewise_exec::placement::{self, Options};
use hugewise_exec::protocol::{DEFAULT_HOT_ARENA, DEFAULT_MIN_SIZE};
use hugewise_exec::rules::Rules;
use hugewise_exec::run::{self, Config};
use hugewise_mem::Bytes;
use hugewise_report::execview;
use hugewise_study::packing;

use crate::output::{self, Output, Stream};
use crate::progress::{Mode, Steps, Unit};

pub(crate) const HELP: &str = "\
How it works: the program runs once with hugewise's preload library in profile mode. Each call
site (the place in the program that calls malloc, calloc or realloc) gets an arena of its own for
its small allocations, on 4 KiB pages; larger allocations get mappings of their own as under
`hugewise exec`. Every --interval hugewise reads how many of each arena's resident pages were
accessed since the last reading (the accessed bits, smaps `Referenced`, then `clear_refs`). A
site is hot when that share is at least --min-share on average. The placement ranks the hot
small sites and packs the hottest into the hot arena up to --hot-arena (huge pages), gives
large allocations of hot sites THP, and leaves the rest on 4 KiB pages.

A site is a file and an offset (`app+0x11c9`): the same code in the next run, wherever the loader
puts it. Profile with an input like the real one: the sites that are hot must be hot in both.
Sites in code reached through a shared allocation wrapper (C++ operator new, Python's own
allocator) all look like one site.

Examples:
  hugewise profile -- ./my-simulator small.cfg                  writes placement.rules
  hugewise exec --placement placement.rules -- ./my-simulator big.cfg
  hugewise profile --hot-arena 64MiB --placement-out hot.rules --out profile.json -- ./app";

/// `hugewise profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Where to write the placement (atomically): rules for `hugewise exec --placement`.
    #[arg(long, value_name = "FILE", default_value = "placement.rules")]
    pub placement_out: PathBuf,
    /// Most bytes of small objects the hot arena takes (the huge pages the placement spends
    /// on them).
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// The least share of a site's resident bytes accessed between two readings, on
    /// average, for it to count as hot (0 to 1).
    #[arg(long, default_value_t = 0.5, value_parser = parse_share)]
    pub min_share: f64,
    /// Allocations smaller than this go to their site's arena; larger ones get a mapping of
    /// their own.
    #[arg(long, default_value_t = Bytes(DEFAULT_MIN_SIZE))]
    pub min_size: Bytes,
    /// How often to read the accessed bits.
    #[arg(long, default_value = "100ms", value_parser = crate::cli::parse_interval)]
    pub interval: Duration,
    /// The preload library (default: libhugewise_preload.so beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// The result (printed on stderr: the program owns stdout).
    #[command(flatten)]
    pub output: Output,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

fn parse_share(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number from 0 to 1"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not from 0 to 1"))
    }
}

/// Profile the program and write the placement; the exit code is the program's.
pub(crate) fn profile(a: ProfileArgs, progress: Mode, stop: &AtomicBool) -> anyhow::Result<u8> {
    let cfg = Config {
        min_size: a.min_size.0,
        interval: a.interval,
        ..Config::new(
            a.command.clone(),
            Rules::default(),
            run::find_preload(a.preload.as_deref())?,
        )
    };
    let opts = Options {
        hot_arena: a.hot_arena.0,
        min_share: a.min_share,
    };
    let live = progress == Mode::Terminal;
    let mut report = placement::profile(&cfg, opts, stop, |t| {
        if live && t.live > 0 {
            eprint!("\r\x1b[2K{}", crate::execcmd::live_line(t));
        }
    })?;
    if live {
        eprint!("\r\x1b[2K");
    }
    let code = hugewise_results::exit::shell_code(report.run.exit_code, report.run.signal);
    if report.sites.is_empty() {
        eprintln!(
            "hugewise profile: no call site was seen, so no placement was written (is the \
             program statically linked, or does it bring its own allocator?)"
        );
    } else {
        hugewise_study::save::write_atomic(
            &a.placement_out,
            report.placement.trim_end().as_bytes(),
        )?;
        report.placement_file = Some(a.placement_out.display().to_string());
    }
    output::emit_to(
        Stream::Stderr,
        a.output.json,
        a.output.out.as_ref(),
        report,
        Some(execview::profile),
    )?;
    Ok(code)
}

pub(crate) const BENCH_HELP: &str = "\
The program is profiled once (as `hugewise profile`), then each round runs it five ways, each
starting one variant later than the round before: 4k (THP never: 4 KiB pages only), thp-always
(THP always, as the machine gives it: glibc's heap grows 128 KiB at a time, so most of it
faults before a whole huge page fits and stays 4 KiB), thp-all (THP always with glibc's heap
grown 64 MiB at a time, GLIBC_TUNABLES=glibc.malloc.top_pad: huge pages for everything),
packed-4k (the placement under THP never: packing alone) and packed (the placement under THP
madvise: the hot arena in huge pages). THP is set for
each run and put back after it, also on error or Ctrl-C (needs root). Speedups are medians over
rounds of the 4k run's time over the variant's in the same round, on the program's own timing
line (--metric) when it prints one. Huge bytes are the process's peak AnonHugePages. Every
variant must print what the profile run printed (the timing line aside).

Without a command it builds and runs the built-in workload (benches/programs/packing.c, needs
cc): --records hot records of 32 bytes made in turn with as many cold records of 480 bytes from
another call site, then --hops steps of a pointer chase over the hot ones.

Examples:
  hugewise bench packing --quick
  hugewise bench packing --records 4M --hops 20M --rounds 5 --markdown
  hugewise bench packing --metric time_s -- ./my-program input";

/// `hugewise bench packing`.
#[derive(Debug, Args)]
pub struct BenchPackingArgs {
    /// Hot records of the built-in workload (and as many cold ones).
    #[arg(long, default_value = "4M", value_parser = crate::cli::parse_count)]
    pub records: u64,
    /// Pointer-chase steps of the built-in workload.
    #[arg(long, default_value = "20M", value_parser = crate::cli::parse_count)]
    pub hops: u64,
    /// Rounds; each runs every variant once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Most bytes of small objects the hot arena takes.
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// The least accessed share for a site to count as hot (0 to 1).
    #[arg(long, default_value_t = 0.5, value_parser = parse_share)]
    pub min_share: f64,
    /// The program's timing line `KEY=SECONDS` (the built-in workload prints time_s).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// 1M records, 5M hops, 2 rounds.
    #[arg(long)]
    pub quick: bool,
    /// The preload library (default: beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// A program to measure instead of the built-in workload, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `hugewise bench packing`.
pub(crate) fn bench(a: BenchPackingArgs, progress: Mode, stop: &AtomicBool) -> anyhow::Result<()> {
    let scratch = packing::scratch()?;
    let (argv, metric) = if a.command.is_empty() {
        let bin = packing::build_workload(scratch.path())?;
        let (records, hops) = if a.quick {
            (1_000_000, 5_000_000)
        } else {
            (a.records, a.hops)
        };
        (
            vec![
                bin.display().to_string(),
                records.to_string(),
                hops.to_string(),
            ],
            Some(a.metric.clone().unwrap_or_else(|| "time_s".into())),
        )
    } else {
        (a.command.clone(), a.metric.clone())
    };
    let cfg = packing::Config {
        argv,
        preload: run::find_preload(a.preload.as_deref())?,
        rounds: if a.quick { 2 } else { a.rounds },
        options: Options {
            hot_arena: a.hot_arena.0,
            min_share: a.min_share,
        },
        metric,
        scratch: scratch.path().to_path_buf(),
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = packing::run(
        &cfg,
        &hugewise_env::Host::real(),
        stop,
        &mut |done, total| steps.update(done, total),
    )
    .context("the packing benchmark")?;
    steps.finish();
    if a.markdown {
        output::emit(&a.output, r, execview::packing_markdown)
    } else {
        output::emit(&a.output, r, execview::packing)
    }
}
