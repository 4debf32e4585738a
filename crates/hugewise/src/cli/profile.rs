//! `hugewise profile`: which call sites of a program use their memory hot, and a placement
//! that packs their small objects into a hot arena of huge pages.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use hugewise_console::emit::Stream;
use hugewise_console::exec::Live;
use hugewise_console::progress::Mode;
use hugewise_exec::placement::{self, Options};
use hugewise_exec::run::{self, Config};
use hugewise_mem::{Bytes, Interval, Share, ShareRange};
use hugewise_report::views;
use hugewise_rules::protocol::{DEFAULT_HOT_ARENA, DEFAULT_MIN_SIZE};
use hugewise_rules::Rules;

use crate::cli::args::Output;
use crate::signals::cancel_flag;

pub const HELP: &str = "\
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
    #[arg(long, default_value = "0.5", value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub min_share: Share,
    /// Allocations smaller than this go to their site's arena; larger ones get a mapping of
    /// their own.
    #[arg(long, default_value_t = Bytes(DEFAULT_MIN_SIZE))]
    pub min_size: Bytes,
    /// How often to read the accessed bits.
    #[arg(long, default_value = "100ms", value_parser = Interval::period)]
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

/// Profile the program and write the placement; the exit code is the program's.
pub fn run(a: ProfileArgs, progress: Mode) -> anyhow::Result<u8> {
    let stop = &*cancel_flag()?;
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
        min_share: a.min_share.fraction(),
    };
    let live = Live::new(progress);
    let mut report = placement::profile(&cfg, opts, stop, |t| live.show(t))?;
    drop(live);
    let code = hugewise_results::exit::shell_code(report.run.exit_code, report.run.signal);
    if report.sites.is_empty() {
        eprintln!(
            "hugewise profile: no call site was seen, so no placement was written (is the \
             program statically linked, or does it bring its own allocator?)"
        );
    } else {
        hugewise_bench::save::write_atomic(
            &a.placement_out,
            report.placement.trim_end().as_bytes(),
        )?;
        report.placement_file = Some(a.placement_out.display().to_string());
    }
    a.output
        .emit_to(Stream::Stderr, report, Some(views::exec::profile))?;
    Ok(code)
}
