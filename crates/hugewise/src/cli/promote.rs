//! `hugewise promote`: huge pages given to a running program, by a replayed plan or the online
//! daemon within a budget.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hugewise_console::emit::Stream;
use hugewise_console::promote::{self, budget_label};
use hugewise_exec::run::session_preload;
use hugewise_mem::{Amount, Interval, Share, ShareRange};
use hugewise_promote::budget::{by_pid, Bias};
use hugewise_promote::{compact, daemon, session};
use hugewise_report::views::promote as promoteview;

use crate::cli::args::{name, Output};
use crate::signals::cancel_flag;

pub const HELP: &str = "Examples:
  hugewise promote --pid 4242 --budget 2%
                         the daemon, on what the program publishes (hugewise.h) or maps:
                         pcc on its access samples, else mega on its mapped pages
  hugewise promote --pid 4242 --pid 4243 --budget 1GiB --share round-robin --bias 4243=2
                         two programs share one budget; the second's scores count double
  hugewise promote --budget 100% -- ./my-program --its-args
                         start a program under the preload library, its large allocations
                         huge from their first fault as far as the budget allows, and
                         promote it until it exits
  hugewise promote --no-preload --policy mega --budget 4% -- ./my-program
                         start it as it is and collapse its memory from outside
  hugewise promote --plan plan.json --plan-policy pcc --plan-budget 4% -- ./traced-program
                         replay a plan made by hugewise sim --plan from a trace of the program
  hugewise promote --pid 4242 --for 60s --actions --out promote.json
  hugewise promote --pid 4242 --budget 4GiB --compact off
                         never compact: collapses refused for want of free 2 MiB blocks wait
                         for the kernel's own compaction

Promotion is MADV_COLLAPSE through process_madvise; demotion is MADV_COLD on 4 KiB of a huge
page, which makes the kernel split it. Every action is read back from the kernel (pagemap), and
the budget counts the huge pages the kernel reports, its own THP included. A program promote
starts runs under the preload library (unless --no-preload, --plan, or a program the loader
would not preload: statically linked, set-user-ID): allocations that hold whole 2 MiB chunks
are advised MADV_HUGEPAGE before their first fault while the budget has room, so those pages
are huge at once instead of collapsed later; the daemon counts them as the kernel backs them
and corrects from there. The target is never stopped or signalled. Needs ptrace access to the target and CAP_SYS_NICE (root has both).
When collapses are refused for want of free 2 MiB blocks (ENOMEM, EAGAIN) or are slowed by
direct compaction, --compact auto (the default) weighs compacting: it compacts only when free 2
MiB blocks are short for the collapses waiting and the budget left, the unusable free space
index says compaction can make some, the compaction's CPU time (measured here per MiB moved)
keeps all compaction within 2 % of a core over the session, and, for a target that says its
sampling period, the waiting chunks would save more than that. It compacts with the kernel's
own lever, /sys/devices/system/node/nodeN/compact (synchronous, no setting changed), and logs
each compaction with why, how long, its CPU time and the free 2 MiB blocks and unusable index
before and after.
While a target faults its memory in (50,000 faults a second or more), its collapses wait: a
fault that comes during a collapse waits for it, so the daemon keeps the faults it may hold up
within --fault-waits of those the target has taken since it began (0.02 %, so that its 99.9th
percentile fault is not one of them), reading its fault count before each collapse; a target
faulting less is never held back.
How it works: docs/promotion.md.";

/// The daemon's policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// pcc for a target that publishes access samples, mega for one that does not.
    Auto,
    /// Most sampled chunks first, counts halved every interval (needs access samples).
    Pcc,
    /// Mapped and used chunks; demotes those that stop being either.
    Mega,
    /// Widest access coverage first.
    Hawkeye,
    /// What khugepaged would do: address order, no ranking.
    Linux,
}

/// When the daemon compacts memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompactArg {
    /// When refused collapses are worth more than compacting costs, within 2 % of a core.
    Auto,
    /// Never.
    Off,
    /// After every interval with a collapse refused for want of memory, without weighing.
    Always,
}

/// How targets share the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShareArg {
    /// Best chunks first, whichever process they belong to.
    Highest,
    /// Each process's best in turn.
    RoundRobin,
}

/// `hugewise promote`.
#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// A running process to manage; repeat for several (they share the budget).
    #[arg(long = "pid", value_name = "PID", conflicts_with = "command")]
    pub pids: Vec<i32>,
    /// Replay this plan (`hugewise sim --plan`) instead of running the daemon.
    #[arg(long, value_name = "FILE", conflicts_with = "policy")]
    pub plan: Option<PathBuf>,
    /// With --plan: the policy whose plan to replay, when the file holds several.
    #[arg(long, value_name = "NAME", requires = "plan")]
    pub plan_policy: Option<String>,
    /// With --plan: the budget whose plan to replay (a share such as 4%), when the file holds
    /// several.
    #[arg(long, value_name = "SHARE", requires = "plan")]
    pub plan_budget: Option<Amount>,
    /// The daemon's policy. The first interval says, per target, which signal it acts on.
    #[arg(long, value_enum, default_value = "auto")]
    pub policy: PolicyArg,
    /// Most memory huge at once: a share of the targets' mapped memory (2%) or a size (512MiB).
    #[arg(long, default_value = "2%")]
    pub budget: Amount,
    /// Time between two looks at the targets (90s, 0.5s, 200ms, 2m).
    #[arg(long, default_value = "1s", value_parser = Interval::period)]
    pub interval: Duration,
    /// How several targets share the budget.
    #[arg(long, value_enum, default_value = "highest")]
    pub share: ShareArg,
    /// A factor on one process's scores (PID=FACTOR); repeat for several.
    #[arg(long = "bias", value_name = "PID=FACTOR")]
    pub bias: Vec<Bias>,
    /// Promotions a look makes however long they take; past them it goes on promoting only
    /// while the look has lasted less than an interval.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_promotions: u32,
    /// Most 2 MiB chunks whose page tables are read per target and interval (0: all); a
    /// larger target is swept over several intervals, which bounds the daemon's CPU time.
    #[arg(long, default_value_t = 2048, value_name = "CHUNKS")]
    pub scan_chunks: usize,
    /// pcc only: the most the daemon thins a program's samples while its looks find nothing to
    /// do (it asks for one in 4, 16, 64, ... of the usual, for all again when it fills or
    /// empties the budget, one step more when it swaps a chunk); 1 keeps every sample.
    #[arg(long, default_value_t = 64, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(hugewise_sys::shm::MAX_THINNING)))]
    pub max_thinning: u32,
    /// When the daemon compacts memory for collapses the kernel refused for want of free 2 MiB
    /// blocks: auto weighs what the waiting chunks would gain against the compaction's
    /// measured cost, within 2 % of a core; off never; always after every refusal.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub compact: CompactArg,
    /// What one page walk that a huge page removes costs the target, in nanoseconds (for
    /// targets that publish their sampling period): a chunk is collapsed only when its sampled
    /// walks at this cost, over a 10 s payback, come to more than a collapse's CPU time. What a
    /// huge page saves a read moves with the host (here 17 ns on a fast day, 40 to 220 ns on
    /// slow ones): too low a figure holds collapses back, too high lets marginal ones through.
    /// `hugewise bench randread --size SIZE` measures it for a footprint like the target's
    /// (the 4 KiB arm's time a read less the THP arm's).
    #[arg(long, default_value_t = 30.0, value_name = "NS", value_parser = walk_ns)]
    pub walk_ns: f64,
    /// Most of a target's page faults the daemon's collapses may hold up, as a share of the
    /// faults it has taken since the daemon began: a fault that comes while its memory is collapsed waits for the
    /// collapse (milliseconds), so while a program faults fast its collapses wait for a later
    /// look; 0 makes none while it faults, 100% never waits.
    #[arg(long, default_value = "0.02%", value_name = "SHARE",
          value_parser = |s: &str| Share::parse_in(s, &ShareRange::UNIT))]
    pub fault_waits: Share,
    /// Collapse onto whatever page the kernel gives. By default the daemon faults a 2 MiB
    /// page in and frees it right before each collapse, so that the collapse copies into
    /// memory the machine already backs: in a virtual machine whose host backs memory lazily
    /// a collapse then holds the target's memory map for the copy alone (under 1 ms instead
    /// of 5-10 ms here), and the target's faults wait that much less.
    #[arg(long)]
    pub no_warm: bool,
    /// The nice value the daemon's thread gives way with, 0 to 19. 0 competes as an ordinary
    /// thread. At 19 (as khugepaged runs) a CPU that programs keep busy is theirs and the
    /// daemon's looks and collapses take what they leave: where every core is busy,
    /// promotion slows down instead of the programs beside it, and the target's own huge
    /// pages come later. It ranks the daemon against the threads of its scheduling group
    /// (with autogroup, its session: a program it starts, not a server started elsewhere).
    /// Never raises the thread's priority above what hugewise was started with.
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = nice)]
    pub nice: i32,
    /// Stop after this long (the targets keep running).
    #[arg(long = "for", value_name = "DURATION", value_parser = Interval::span)]
    pub duration: Option<Duration>,
    /// Print every action as it happens (on stderr).
    #[arg(long)]
    pub actions: bool,
    /// Start the command as it is, not under the preload library: its memory is then given
    /// huge pages from outside only (collapsed after it was faulted in on 4 KiB pages).
    #[arg(long)]
    pub no_preload: bool,
    /// The preload library (default: libhugewise_preload.so beside hugewise).
    #[arg(long, value_name = "FILE", conflicts_with = "no_preload")]
    pub preload: Option<PathBuf>,
    /// Output options.
    #[command(flatten)]
    pub output: Output,
    /// A program to start without address-space randomisation and promote until it exits.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Run `hugewise promote`; the exit code is the started command's when there is one.
pub fn run(a: PromoteArgs) -> anyhow::Result<u8> {
    let cancel = &*cancel_flag()?;
    let engine = match &a.plan {
        Some(file) => session::Engine::Plan {
            file: file.clone(),
            policy: a.plan_policy.clone(),
            budget_share: (a.plan_budget)
                .map(|b| b.share().context("--plan-budget takes a share such as 4%"))
                .transpose()?,
        },
        None => session::Engine::Daemon {
            policy: name(a.policy),
            config: daemon::Config {
                interval: a.interval,
                limit: a.budget.into(),
                share: name(a.share).parse()?,
                bias: by_pid(&a.bias),
                max_promotions: a.max_promotions as usize,
                scan_chunks: a.scan_chunks,
                max_thinning: a.max_thinning,
                compact: compact::Settings {
                    mode: name(a.compact).parse()?,
                    ..compact::Settings::default()
                },
                fault_waits: a.fault_waits.fraction(),
                warm: !a.no_warm,
                walk_ns: a.walk_ns,
                nice: a.nice,
                ..daemon::Config::default()
            },
            budget_label: budget_label(a.budget),
        },
    };
    let preload = if a.command.is_empty() || a.no_preload {
        None
    } else {
        let p = match &a.plan {
            Some(_) => Err(
                "a plan names addresses of a run without it, which the library would move".into(),
            ),
            None => session_preload(&a.command[0], a.preload.as_deref(), a.budget.into()),
        };
        promote::preload_note(&a.command[0], &p, &budget_label(a.budget));
        p.ok()
    };
    // A command hugewise starts owns stdout (its output may be piped on); the session's
    // report then goes to stderr, as `env with` and `exec` do.
    let (targets, stream) = match a.command.is_empty() {
        true => (session::Targets::Pids(a.pids.clone()), Stream::Stdout),
        false => (session::Targets::Launch(a.command.clone()), Stream::Stderr),
    };
    let cfg = session::Config {
        targets,
        engine,
        duration: a.duration,
        launch: session::LaunchOptions {
            preload,
            stdout_file: None,
        },
    };
    let live = promote::Live::new(a.actions);
    let r = session::run(&cfg, cancel, &mut |act| live.action(act), &mut |iv| {
        live.interval(iv)
    })
    .context("promotion session")?;
    live.finish(r.mode == "daemon");
    let code = r.command_exit.unwrap_or(0).clamp(0, 255) as u8;
    a.output.emit_to(stream, r, Some(promoteview::session))?;
    Ok(code)
}

/// A nice value for the daemon's thread (`--nice`): 0 to 19.
pub fn nice(s: &str) -> Result<i32, String> {
    let lowest = hugewise_sys::priority::LOWEST;
    match s.trim().parse::<i32>() {
        Ok(n) if (0..=lowest).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: a nice value to give way with is a whole number of 0 to {lowest} (19: give \
             way most, 0: compete as an ordinary thread)"
        )),
    }
}

/// `--walk-ns`: a cost in nanoseconds above 0 and at most the daemon's bound (a walk that
/// misses every cache is a few hundred).
pub fn walk_ns(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of nanoseconds (such as 30)"))?;
    if hugewise_promote::daemon::walk_ns_valid(v) {
        Ok(v)
    } else {
        Err(format!(
            "{s} ns: a walk costs more than 0 and at most {} ns",
            hugewise_promote::daemon::MAX_WALK_NS
        ))
    }
}
