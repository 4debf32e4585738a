//! `hugewise exec`: a program hugewise did not write, run with page rules for its large
//! allocations.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hugewise_console::emit::Stream;
use hugewise_console::exec::Live;
use hugewise_console::progress::Mode;
use hugewise_console::promote::budget_label;
use hugewise_exec::run::{self, Config};
use hugewise_mem::{Bytes, Interval};
use hugewise_promote::{daemon, session};
use hugewise_report::views;
use hugewise_rules::protocol::{DEFAULT_HOT_ARENA, DEFAULT_MIN_SIZE};
use hugewise_rules::Rules;
use hugewise_sys::read;

use crate::cli::args::{name, usage, Output};
use crate::cli::promote::PolicyArg;
use crate::signals::cancel_flag;

pub const HELP: &str = "\
Rules (first match wins; an allocation no rule matches gets `system`):
  SIZES=POLICY      SIZES is *, >=N, <N or N..M (N up to but not including M), sizes as 64k, 2MiB
  name:NAME=POLICY  allocations the program named with HUGEWISE_EXEC_NAME(\"NAME\")
                    (crates/preload/include/hugewise_exec.h; a no-op without hugewise)
  site:MODULE+0xOFFSET=POLICY
                    allocations made by the call at that place of the program (the offset in
                    the file; `hugewise profile` finds the hot ones and writes the rules)
                    POLICY is thp (MADV_HUGEPAGE), base (4 KiB pages), system (no advice) or
                    arena (small allocations share the hot arena of huge pages, up to
                    --hot-arena; large ones get thp)
  e.g. --pages '>=1GiB=thp,>=2MiB=base'   huge pages for the largest arrays only

How it works: the program runs with hugewise's preload library (LD_PRELOAD). Each allocation of at
least --min-size (malloc, calloc, realloc, the aligned variants) gets a 2 MiB-aligned mapping of its
own with the policy its rule says; smaller ones stay with the program's allocator. hugewise reads
each allocation's backing from the kernel while the program runs and prints what each got on
stderr when it exits (the program keeps stdout). A program with its own allocator (jemalloc,
tcmalloc) is left to it, and the summary says so. Statically linked programs cannot be preloaded.

Exit code: the program's own (128 + N when signal N ended it); 128 + N when hugewise itself got
signal N (Ctrl-C: 130); 1 when hugewise could not run it; 2 when the command line is wrong.

Examples:
  hugewise exec -- python3 -c 'b = bytearray(1 << 30)'
  hugewise exec --pages '*=base' --out base.json -- ./my-simulator input.cfg
  hugewise profile -- ./my-simulator small.cfg         writes placement.rules, then:
  hugewise exec --placement placement.rules -- ./my-simulator input.cfg
  hugewise exec --pages '*=system' --promote mega -- redis-server --port 7000
                              4 KiB at fault; the daemon promotes what is mapped and used,
                              and splits what stops being either";

/// `hugewise exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Page rules for the allocations taken over, first match wins (see below).
    #[arg(long, default_value = ">=2MiB=thp", conflicts_with = "pages_file")]
    pub pages: String,
    /// Read the rules from a file instead: one or more per line, `#` starts a comment (a
    /// placement that `hugewise profile` wrote is such a file).
    #[arg(long, value_name = "FILE", visible_alias = "placement")]
    pub pages_file: Option<PathBuf>,
    /// Most bytes the hot arena holds (small allocations of sites with policy `arena`);
    /// beyond it they stay with the program's allocator.
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// Allocations smaller than this stay with the program's allocator.
    #[arg(long, default_value_t = Bytes(DEFAULT_MIN_SIZE))]
    pub min_size: Bytes,
    /// The preload library (default: libhugewise_preload.so beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// How often to read each allocation's backing while the program runs.
    #[arg(long, default_value = "250ms", value_parser = Interval::period)]
    pub interval: Duration,
    /// Also run the promotion daemon on the program with this policy while it runs (mega
    /// promotes mapped, used chunks and splits those that stop being either).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub promote: Option<PolicyArg>,
    /// The daemon's budget: a share of the program's mapped memory (100%) or a size (512MiB).
    #[arg(long, default_value = "100%", requires = "promote")]
    pub budget: hugewise_mem::Amount,
    /// The daemon's interval.
    #[arg(long, default_value = "1s", requires = "promote", value_parser = Interval::period)]
    pub promote_interval: Duration,
    /// The nice value the daemon's thread gives way with, 0 to 19 (as `hugewise promote
    /// --nice`).
    #[arg(long, default_value_t = 0, value_name = "N",
          requires = "promote", value_parser = crate::cli::promote::nice)]
    pub promote_nice: i32,
    /// List every allocation taken over, not only the 10 largest.
    #[arg(long)]
    pub all: bool,
    /// The result (printed on stderr: the program owns stdout).
    #[command(flatten)]
    pub output: Output,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The rules; a rule that cannot be read is a command-line mistake (exit code 2).
fn rules(a: &ExecArgs) -> anyhow::Result<Rules> {
    Ok(match &a.pages_file {
        Some(f) => {
            let text = read::bounded_string(f, read::Bound::SETTINGS)
                .with_context(|| format!("reading the rules file {}", f.display()))?;
            Rules::parse_file(&f.display().to_string(), &text).map_err(|e| usage(e.to_string()))?
        }
        None => Rules::parse(&a.pages).map_err(|e| usage(format!("--pages: {e}")))?,
    })
}

/// Run the program; the exit code is the program's.
pub fn run(a: ExecArgs, progress: Mode) -> anyhow::Result<u8> {
    let stop = &*cancel_flag()?;
    let cfg = Config {
        argv: a.command.clone(),
        rules: rules(&a)?,
        min_size: a.min_size.0,
        preload: run::find_preload(a.preload.as_deref())?,
        interval: a.interval,
        stdout_file: None,
        cgroup_procs: None,
        profile: false,
        hot_arena: a.hot_arena.0,
        promote: a.promote.map(|p| session::Engine::Daemon {
            policy: name(p),
            config: daemon::Config {
                interval: a.promote_interval,
                nice: a.promote_nice,
                limit: a.budget.into(),
                ..daemon::Config::default()
            },
            budget_label: budget_label(a.budget),
        }),
    };
    let live = Live::new(progress);
    let report = run::run(&cfg, stop, |t| live.show(t))?;
    drop(live);
    let code = hugewise_results::exit::shell_code(report.exit_code, report.signal);
    let view = |r: &_| views::exec::exec(r, a.all);
    a.output.emit_to(Stream::Stderr, report, Some(view))?;
    Ok(code)
}
