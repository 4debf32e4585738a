//! `hugewise exec`: arguments and the call into hugewise-exec.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hugewise_exec::protocol::{DEFAULT_HOT_ARENA, DEFAULT_MIN_SIZE};
use hugewise_exec::rules::Rules;
use hugewise_exec::run::{self, Config, Tick};
use hugewise_mem::Bytes;
use hugewise_promote::{daemon, session};
use hugewise_report::{execview, fmt};
use hugewise_study::{bloat, execbench};
use hugewise_sys::read;

use crate::output::{self, Output, Stream};
use crate::progress::{Mode, Steps, Unit};

pub(crate) const HELP: &str = "\
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
    #[arg(long, default_value = "250ms", value_parser = crate::cli::parse_interval)]
    pub interval: Duration,
    /// Also run the promotion daemon on the program with this policy while it runs (mega
    /// promotes mapped, used chunks and splits those that stop being either).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub promote: Option<crate::promotecmd::PolicyArg>,
    /// The daemon's budget: a share of the program's mapped memory (100%) or a size (512MiB).
    #[arg(long, default_value = "100%", requires = "promote")]
    pub budget: hugewise_mem::Amount,
    /// The daemon's interval.
    #[arg(long, default_value = "1s", requires = "promote", value_parser = crate::cli::parse_interval)]
    pub promote_interval: Duration,
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
            Rules::parse_file(&f.display().to_string(), &text)
                .unwrap_or_else(|e| crate::usage_error(e.to_string()))
        }
        None => {
            Rules::parse(&a.pages).unwrap_or_else(|e| crate::usage_error(format!("--pages: {e}")))
        }
    })
}

pub(crate) fn live_line(t: &Tick) -> String {
    format!(
        "{:>6.1}s  {} process(es), {} allocation(s) alive, {} resident, {} in huge pages",
        t.elapsed.as_secs_f64(),
        t.processes,
        t.live,
        fmt::bytes(t.resident_bytes),
        fmt::bytes(t.huge_bytes),
    )
}

/// Run the program; the exit code is the program's.
pub(crate) fn exec(a: ExecArgs, progress: Mode, stop: &AtomicBool) -> anyhow::Result<u8> {
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
            policy: p.name().to_string(),
            config: daemon::Config {
                interval: a.promote_interval,
                limit: crate::promotecmd::limit(a.budget),
                ..daemon::Config::default()
            },
            budget_label: crate::promotecmd::budget_label(a.budget),
        }),
    };
    let live = progress == Mode::Terminal;
    let report = run::run(&cfg, stop, |t| {
        if live && t.live > 0 {
            eprint!("\r\x1b[2K{}", live_line(t));
        }
    })?;
    if live {
        eprint!("\r\x1b[2K");
    }
    let code = hugewise_results::exit::shell_code(report.exit_code, report.signal);
    let all = a.all;
    output::emit_to(
        Stream::Stderr,
        a.output.json,
        a.output.out.as_ref(),
        report,
        Some(|r: &_| execview::exec(r, all)),
    )?;
    Ok(code)
}

pub(crate) const BENCH_HELP: &str = "\
Variants are separated by `;` (rules hold commas): `plain` runs the program without hugewise,
anything else is a set of rules as `hugewise exec --pages` takes them. The first variant is the
baseline: each speedup is the median over rounds of its time over the variant's in the same
round. Each round runs every variant once, starting one variant later than the round before
(A B C, B C A, ...), each after checking the machine is quiet; the
program's output is discarded (a failing run stops the benchmark and says which variant). With
--metric KEY the program's own line `KEY=SECONDS` is compared too, for a program that times
the phase that matters apart from its setup.

Examples:
  hugewise bench exec -- python3 my_job.py                      plain vs *=base vs *=thp
  hugewise bench exec --variants '*=base;*=thp;>=1GiB=thp' --rounds 7 -- ./simulator big.cfg";

/// `hugewise bench exec`.
#[derive(Debug, Args)]
pub struct BenchExecArgs {
    /// Variants separated by `;`: `plain` or rules (see below).
    #[arg(long, default_value = "plain;*=base;*=thp")]
    pub variants: String,
    /// Rounds; each runs every variant once.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Allocations smaller than this stay with the program's allocator.
    #[arg(long, default_value_t = Bytes(DEFAULT_MIN_SIZE))]
    pub min_size: Bytes,
    /// The preload library (default: libhugewise_preload.so beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Most bytes of the hot arena (rules with policy `arena`).
    #[arg(long, default_value_t = Bytes(DEFAULT_HOT_ARENA))]
    pub hot_arena: Bytes,
    /// Also compare the time the program measures itself: it prints a line `KEY=SECONDS` on
    /// stdout (for example the timed phase without its setup).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `hugewise bench exec`.
pub(crate) fn bench(a: BenchExecArgs, progress: Mode, stop: &AtomicBool) -> anyhow::Result<()> {
    let variants = execbench::Variant::parse_list(&a.variants)
        .unwrap_or_else(|e| crate::usage_error(format!("--variants: {e}")));
    if variants.is_empty() {
        crate::usage_error("--variants: no variant given".into());
    }
    let scratch = hugewise_study::packing::scratch()?;
    let cfg = execbench::Config {
        argv: a.command.clone(),
        variants,
        rounds: a.rounds,
        min_size: a.min_size.0,
        preload: run::find_preload(a.preload.as_deref())?,
        metric: a.metric.clone(),
        // In a directory of its own: a fixed name in /tmp could be another user's link.
        scratch: scratch.path().join("program.out"),
        hot_arena: a.hot_arena.0,
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = execbench::run(&cfg, stop, &mut |done, total| steps.update(done, total))
        .context("benchmarking the program")?;
    steps.finish();
    if a.markdown {
        output::emit(&a.output, r, execview::bench_markdown)
    } else {
        output::emit(&a.output, r, execview::bench)
    }
}

pub(crate) const BLOAT_HELP: &str = "\
Each run starts Debian's redis-server on a free loopback port inside a memory cgroup of its own
(with `--disable-thp no`: Redis otherwise turns THP off for itself), with THP `enabled` set as
the variant says (exec:RULES runs it under hugewise exec with THP at
madvise), then runs redis-benchmark: fill (SET of --keys random keys), read (GET), delete (DEL of
--delete of them), refill (SET again), and stops the server. Throughput and latency come from
redis-benchmark; memory is what the cgroup is charged (a huge page partly freed stays charged
where the resident set no longer counts it), read every 200 ms. Bloat is a run's final charge
minus THP never's in the same round. THP mode and cgroup are put back after every run, also on
error or Ctrl-C. Needs root, redis-server and redis-benchmark (apt-get install redis-server
redis-tools).

Examples:
  hugewise bench bloat --quick                                  a minute's look
  hugewise bench bloat --keys 2M --value 2KiB --rounds 3 --markdown";

/// `hugewise bench bloat`.
#[derive(Debug, Args)]
pub struct BenchBloatArgs {
    /// Keys in the key space.
    #[arg(long, default_value = "1M", value_parser = crate::cli::parse_count)]
    pub keys: u64,
    /// Bytes per value.
    #[arg(long, default_value = "1KiB")]
    pub value: Bytes,
    /// Share of the key space deleted and then filled again.
    #[arg(long, default_value = "50%", value_parser = crate::cli::parse_share)]
    pub delete: f64,
    /// Variants separated by `;`: never, madvise, always, exec:RULES, exec:RULES+POLICY (with
    /// the promotion daemon).
    #[arg(
        long,
        default_value = "never;madvise;always;exec:*=thp;exec:*=system+mega"
    )]
    pub variants: String,
    /// Rounds; each runs every variant once.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// redis-benchmark clients.
    #[arg(long, default_value_t = 50)]
    pub clients: u32,
    /// redis-benchmark pipeline depth.
    #[arg(long, default_value_t = 16)]
    pub pipeline: u32,
    /// Pause after the last phase before the final memory reading: jemalloc (Redis's
    /// allocator) returns freed pages to the kernel after 10 s, and that is where huge pages
    /// cost memory.
    #[arg(long, default_value = "12s", value_parser = crate::cli::parse_interval)]
    pub settle: Duration,
    /// 100k keys, one round.
    #[arg(long)]
    pub quick: bool,
    /// The preload library for exec: variants (default: beside hugewise).
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,
    /// Print a Markdown table for BENCHMARKS.md.
    #[arg(long)]
    pub markdown: bool,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
}

/// `hugewise bench bloat`.
pub(crate) fn bloat(a: BenchBloatArgs, progress: Mode, stop: &AtomicBool) -> anyhow::Result<()> {
    if let Err(e) = bloat::Variant::parse_list(&a.variants) {
        crate::usage_error(format!("--variants: {e}"));
    }
    let cfg = bloat::Config {
        clients: a.clients,
        pipeline: a.pipeline,
        settle: a.settle,
        ..bloat::Config::new(
            if a.quick { 100_000 } else { a.keys },
            a.value.0,
            a.delete,
            if a.quick { 1 } else { a.rounds },
            &a.variants,
            a.preload.as_deref(),
        )?
    };
    let steps = Steps::new(progress, "runs", Unit::Items);
    let r = bloat::run(
        &cfg,
        &hugewise_env::Host::real(),
        &|| stop.load(std::sync::atomic::Ordering::Relaxed),
        &mut |done, total| steps.update(done, total),
    )
    .context("the Redis bloat benchmark")?;
    steps.finish();
    if a.markdown {
        output::emit(&a.output, r, execview::bloat_markdown)
    } else {
        output::emit(&a.output, r, execview::bloat)
    }
}
